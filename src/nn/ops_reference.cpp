// Reference implementations of the StyleGAN2 ops from standard LibTorch ops. They define what the
// ops compute; faster kernels are tested against them.
#include "sg2/core/error.h"
#include "sg2/nn/ops.h"

#include <atomic>
#include <cmath>

namespace sg2::nn::ops {

namespace {
std::atomic<bool> g_reference_ops{false};
}  // namespace

void set_reference_ops(bool enabled) { g_reference_ops = enabled; }
bool reference_ops() { return g_reference_ops; }

Activation parse_activation(const std::string& name) {
  if (name == "linear") return Activation::Linear;
  if (name == "relu") return Activation::Relu;
  if (name == "lrelu") return Activation::LRelu;
  SG2_FAIL("unknown activation '{}' (expected linear, relu or lrelu)", name);
}

std::string to_string(Activation act) {
  switch (act) {
    case Activation::Linear: return "linear";
    case Activation::Relu: return "relu";
    case Activation::LRelu: return "lrelu";
  }
  return "?";
}

double default_gain(Activation act) { return act == Activation::Linear ? 1.0 : std::sqrt(2.0); }
double default_alpha(Activation act) { return act == Activation::LRelu ? 0.2 : 0.0; }

at::Tensor setup_filter(const std::vector<float>& taps) {
  SG2_CHECK(!taps.empty(), "resample filter needs at least one tap");
  at::Tensor f1 = at::tensor(taps, at::kFloat);  // [k]
  at::Tensor f = at::outer(f1, f1);               // [k, k]
  return f / f.sum();
}

at::Tensor upfirdn2d_reference(const at::Tensor& x_in, const at::Tensor& f_in, const FirParams& p) {
  SG2_CHECK(x_in.dim() == 4, "upfirdn2d expects x of shape [N, C, H, W], got {} dims", x_in.dim());
  SG2_CHECK(f_in.dim() == 2, "upfirdn2d expects a 2-D filter, got {} dims", f_in.dim());
  const int64_t n = x_in.size(0), c = x_in.size(1), h = x_in.size(2), w = x_in.size(3);
  const auto [px0, px1, py0, py1] = p.padding;

  // Upsample by inserting up-1 zeros after every pixel.
  at::Tensor x = x_in.reshape({n, c, h, 1, w, 1});
  x = at::constant_pad_nd(x, {0, p.up - 1, 0, 0, 0, p.up - 1});
  x = x.reshape({n, c, h * p.up, w * p.up});

  // Pad (positive) or crop (negative).
  x = at::constant_pad_nd(x, {std::max<int64_t>(px0, 0), std::max<int64_t>(px1, 0), std::max<int64_t>(py0, 0),
                              std::max<int64_t>(py1, 0)});
  x = x.slice(2, std::max<int64_t>(-py0, 0), x.size(2) - std::max<int64_t>(-py1, 0));
  x = x.slice(3, std::max<int64_t>(-px0, 0), x.size(3) - std::max<int64_t>(-px1, 0));

  // Convolve each channel with the (flipped, unless flip_filter) filter.
  at::Tensor f = (f_in * p.gain).to(x.scalar_type());  // gain ** (ndim / 2) with ndim = 2
  if (!p.flip_filter) f = f.flip({0, 1});
  at::Tensor weight = f.unsqueeze(0).unsqueeze(0).repeat({c, 1, 1, 1});  // [C, 1, k, k]
  const std::array<int64_t, 2> ones{1, 1}, zeros{0, 0};
  x = at::conv2d(x, weight, at::Tensor(), ones, zeros, ones, c);

  // Downsample by keeping every down-th pixel.
  return x.slice(2, 0, x.size(2), p.down).slice(3, 0, x.size(3), p.down);
}

at::Tensor add_bias(const at::Tensor& x, const at::Tensor& b, int64_t dim) {
  if (!b.defined()) return x;
  SG2_CHECK(b.dim() == 1 && b.size(0) == x.size(dim), "bias_act: bias of shape {} does not match x {} at dim {}",
            b.sizes(), x.sizes(), dim);
  std::vector<int64_t> shape(x.dim(), 1);
  shape[dim] = -1;
  return x + b.reshape(shape);
}

at::Tensor bias_act_reference(const at::Tensor& x_in, const at::Tensor& b, const BiasActParams& p) {
  at::Tensor x = add_bias(x_in, b, p.dim);
  const double alpha = p.alpha >= 0 ? p.alpha : default_alpha(p.act);
  const double gain = p.gain >= 0 ? p.gain : default_gain(p.act);
  if (p.act == Activation::Relu) x = at::relu(x);
  if (p.act == Activation::LRelu) x = at::leaky_relu(x, alpha);
  if (gain != 1.0) x = x * gain;
  if (p.clamp >= 0) x = x.clamp(-p.clamp, p.clamp);
  return x;
}

at::Tensor normalize_2nd_moment(const at::Tensor& x, int64_t dim) {
  return x * (x.square().mean(dim, /*keepdim=*/true) + 1e-8).rsqrt();
}

at::Tensor minibatch_stddev(const at::Tensor& x, int64_t group_size, int64_t num_channels) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t g = (group_size <= 0) ? n : std::min(group_size, n);
  const int64_t f = num_channels;
  SG2_CHECK(n % g == 0, "minibatch stddev: batch {} is not divisible by the group size {}", n, g);
  SG2_CHECK(c % f == 0, "minibatch stddev: {} channels are not divisible into {} groups", c, f);
  at::Tensor y = x.reshape({g, -1, f, c / f, h, w});  // [G, n, F, c, H, W]
  y = y - y.mean(0);                                   // subtract the group mean
  y = y.square().mean(0);                              // [n, F, c, H, W] variance over the group
  y = (y + 1e-8).sqrt();                               // stddev
  y = y.mean({2, 3, 4});                               // [n, F] average over channels and pixels
  y = y.reshape({-1, f, 1, 1});                        // [n, F, 1, 1]
  y = y.repeat({g, 1, h, w});                          // [N, F, H, W]
  return at::cat({x, y}, 1);                           // [N, C+F, H, W]
}

}  // namespace sg2::nn::ops
