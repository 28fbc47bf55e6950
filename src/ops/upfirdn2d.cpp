// upfirdn2d: the op, its reference, and its kernel's autograd function (see upfirdn2d.h). The raw
// kernels it runs are in upfirdn2d_cpu.cpp and cuda/.
#include "sg2/ops/upfirdn2d.h"

#include "cpu_kernels.h"
#include "sg2/core/error.h"
#include "sg2/ops/kernels.h"
#if SG2_CUDA_KERNELS
#include "cuda/kernels_cuda.h"
#endif

#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

namespace sg2::ops {


at::Tensor setup_filter(const std::vector<float>& taps) {
  SG2_CHECK(!taps.empty(), "resample filter needs at least one tap");
  at::Tensor f1 = at::tensor(taps, at::kFloat);  // [k]
  at::Tensor f = at::outer(f1, f1);               // [k, k]
  return f / f.sum();
}

at::MemoryFormat layout_of(const at::Tensor& x) {
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  return x.suggest_memory_format() == channels_last ? channels_last : at::MemoryFormat::Contiguous;
}

at::Tensor keeps_channels_last(const at::Tensor& y, const at::Tensor& x) {
  const at::MemoryFormat layout = layout_of(x);
  return layout == at::MemoryFormat::ChannelsLast ? y.contiguous(layout) : y;
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

  // Downsample by keeping every down-th pixel; in x's layout, as the kernels.
  x = x.slice(2, 0, x.size(2), p.down).slice(3, 0, x.size(3), p.down);
  return keeps_channels_last(x, x_in);
}

at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const FirParams& p, const ComputeSettings& compute) {
  if (kernels::runs_kernel(compute.kernel, x)) return kernels::upfirdn2d(x, f, p, compute.kernel);
  return upfirdn2d_reference(x, f, p);
}

at::Tensor upsample2d(const at::Tensor& x, const at::Tensor& f, int64_t up, const ComputeSettings& compute) {
  const int64_t k = f.size(0);
  FirParams p;
  p.up = up;
  p.padding = {(k + up - 1) / 2, (k - up) / 2, (k + up - 1) / 2, (k - up) / 2};
  p.gain = static_cast<double>(up * up);
  return upfirdn2d(x, f, p, compute);
}

at::Tensor downsample2d(const at::Tensor& x, const at::Tensor& f, int64_t down, const ComputeSettings& compute) {
  const int64_t k = f.size(0);
  FirParams p;
  p.down = down;
  p.padding = {(k - down + 1) / 2, (k - down) / 2, (k - down + 1) / 2, (k - down) / 2};
  return upfirdn2d(x, f, p, compute);
}


namespace kernels {

std::array<int64_t, 2> upfirdn2d_output_size(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p) {
  SG2_CHECK(x.dim() == 4 && f.dim() == 2, "upfirdn2d expects x [N, C, H, W] and a 2-D filter, got {} and {}",
            x.sizes(), f.sizes());
  const int64_t in_h = x.size(2), in_w = x.size(3), fh = f.size(0), fw = f.size(1);
  const auto [px0, px1, py0, py1] = p.padding;
  const int64_t out_h = (in_h * p.up + py0 + py1 - fh) / p.down + 1;
  const int64_t out_w = (in_w * p.up + px0 + px1 - fw) / p.down + 1;
  SG2_CHECK(in_h * p.up + py0 + py1 >= fh && in_w * p.up + px0 + px1 >= fw && out_h > 0 && out_w > 0,
            "upfirdn2d: input {}x{} with padding {} is smaller than the {}x{} filter", in_h, in_w, p.padding, fh, fw);
  return {out_h, out_w};
}

Kernel upfirdn2d_auto_kernel([[maybe_unused]] const at::Tensor& x, [[maybe_unused]] const at::Tensor& f,
                             [[maybe_unused]] const ops::FirParams& p) {
#if SG2_CUDA_KERNELS
  if (x.is_cuda() && supported(x)) {
    const auto [out_h, out_w] = upfirdn2d_output_size(x, f, p);
    return gpu::fir_auto_kernel(x, f, p, out_h, out_w);
  }
#endif
  return Kernel::PerElement;
}

at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p,
                             [[maybe_unused]] Kernel kernel) {
  SG2_CHECK(supported(x), "upfirdn2d kernel: unsupported tensor {} on {}", c10::toString(x.scalar_type()),
            x.device().str());
  const auto [out_h, out_w] = upfirdn2d_output_size(x, f, p);
#if SG2_CUDA_KERNELS
  if (x.is_cuda()) return gpu::upfirdn2d_forward(x, f, p, out_h, out_w, kernel);
#endif
  return host::upfirdn2d_forward(x, f, p, out_h, out_w);
}

ops::FirParams upfirdn2d_adjoint(const ops::FirParams& p, int64_t fh, int64_t fw, int64_t in_h, int64_t in_w,
                                 int64_t out_h, int64_t out_w) {
  // y[j] = sum_k g[k] u[j*down + k - p0]  =>  dx[i] = sum_k flip(g)[k] w[i*up + k - (K-1-p0)]
  // with w = dy upsampled by `down`; the end padding makes the output exactly in_len long.
  const auto [px0, px1, py0, py1] = p.padding;
  ops::FirParams a;
  a.up = p.down;
  a.down = p.up;
  a.flip_filter = !p.flip_filter;
  a.gain = p.gain;
  a.padding = {fw - px0 - 1, in_w * p.up - out_w * p.down + px0 - p.up + 1, fh - py0 - 1,
               in_h * p.up - out_h * p.down + py0 - p.up + 1};
  return a;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Upfirdn2dFunction : public torch::autograd::Function<Upfirdn2dFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& f, int64_t up, int64_t down,
                            int64_t px0, int64_t px1, int64_t py0, int64_t py1, bool flip_filter, double gain,
                            int64_t kernel) {
    ops::FirParams p{up, down, {px0, px1, py0, py1}, flip_filter, gain};
    at::Tensor y = upfirdn2d_forward(x, f, p, static_cast<Kernel>(kernel));
    ctx->save_for_backward({f});
    ctx->saved_data["params"] = std::vector<int64_t>{up, down, px0, px1, py0, py1, flip_filter ? 1 : 0,
                                                     x.size(2), x.size(3), y.size(2), y.size(3)};
    ctx->saved_data["gain"] = gain;
    ctx->saved_data["kernel"] = kernel;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor f = ctx->get_saved_variables()[0];
    const auto v = ctx->saved_data["params"].toIntVector();
    ops::FirParams p{v[0], v[1], {v[2], v[3], v[4], v[5]}, v[6] != 0, ctx->saved_data["gain"].toDouble()};
    const ops::FirParams a = upfirdn2d_adjoint(p, f.size(0), f.size(1), v[7], v[8], v[9], v[10]);
    const auto kernel = static_cast<Kernel>(ctx->saved_data["kernel"].toInt());
    at::Tensor dx = kernels::upfirdn2d(grads[0], f, a, kernel);  // differentiable again
    return {dx,          at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p, Kernel kernel) {
  // The inputs are recorded where an observer asks for them (profiles list the shapes; tests see
  // which kernel each call of a training step would take on a GPU).
  RECORD_FUNCTION("sg2::upfirdn2d",
                  std::vector<c10::IValue>({x, f,
                                            std::vector<int64_t>{p.up, p.down, p.padding[0], p.padding[1],
                                                                 p.padding[2], p.padding[3], p.flip_filter ? 1 : 0},
                                            p.gain}));
  return Upfirdn2dFunction::apply(x, f, p.up, p.down, p.padding[0], p.padding[1], p.padding[2], p.padding[3],
                                  p.flip_filter, p.gain, static_cast<int64_t>(kernel));
}

}  // namespace kernels

}  // namespace sg2::ops
