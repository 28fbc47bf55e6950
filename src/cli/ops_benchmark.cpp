#include "sg2/cli/ops_benchmark.h"

#include "sg2/cli/benchmark.h"
#include "sg2/cli/command_line.h"
#include "sg2/core/error.h"
#include "sg2/nn/bias_act.h"
#include "sg2/nn/conv_epilogue.h"
#include "sg2/nn/conv_gradfix.h"
#include "sg2/nn/tf32_split.h"
#include "sg2/nn/upfirdn2d.h"
#include "sg2/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

namespace sg2::cli {

namespace {

namespace kernels = nn::kernels;
using nn::ops::BiasActParams;
using nn::ops::FirParams;

// Seconds per call of fn: the best of three timings of `repeats` calls, after a warm-up call.
double seconds_per_call(const at::Device& device, int repeats, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int trial = 0; trial < 3; ++trial) {
    best = std::min(best, time_call(device, [&] {
                      for (int i = 0; i < repeats; ++i) fn();
                    }) / repeats);
  }
  return best;
}

// Bytes per second of a device-to-device copy (read + write) of 256 MiB: the bandwidth that the
// memory-bound ops can hope for.
double copy_bandwidth(const at::Device& device, int repeats) {
  const at::Tensor from = at::rand({int64_t{64} << 20}, at::TensorOptions().device(device));
  at::Tensor to = at::empty_like(from);
  const double seconds = seconds_per_call(device, repeats, [&] { to.copy_(from); });
  return 2.0 * static_cast<double>(from.nbytes()) / seconds;
}

// --dtype's type and name (auto resolved).
std::pair<at::ScalarType, std::string> dtype_for(const std::string& name, const at::Device& device) {
  if (name == "auto") return dtype_for(device.is_cuda() ? "float16" : "float32", device);
  if (name == "float16") return {at::kHalf, name};
  if (name == "bfloat16") return {at::kBFloat16, name};
  if (name == "float32") return {at::kFloat, name};
  SG2_FAIL("stylegan2_bench ops: unknown --dtype '{}' (expected auto, float16, bfloat16 or float32)", name);
}

// What the rows of both tables need: where and how to time, and the copy bandwidth they compare to.
struct Timer {
  at::Device device;
  int repeats;
  double bandwidth;
  double operator()(const std::function<void()>& fn) const { return seconds_per_call(device, repeats, fn); }
};

// One timed call: the specialised CUDA kernel (none on the CPU, or where it is not built for the
// shape), the generic kernel, the reference op, and the bytes the op must move at least.
struct OpTimings {
  std::optional<double> staged, lanes;  // upfirdn2d's kernels in 16-byte lanes, staged or not (its table only)
  std::optional<double> fastest;
  double generic = 0, reference = 0, bytes = 0;
  std::string picked;  // upfirdn2d: what its Fastest variant timed faster on the shape (run.fir_kernel autotune)
};

// fastest and generic name the first two columns (OpTimings' fastest and generic); with_lanes puts
// 'staged' and 'lanes' columns before them.
std::string table_header(const std::string& fastest, const std::string& generic = "generic", bool with_lanes = false) {
  return fmt::format("| op | x | layout | {2}{0} ms | {1} ms | reference ms | best GB/s | floor ms | best / floor | "
                     "{1} / {0} | reference / best |\n|---|---|---|{3}---|---|---|---|---|---|---|---|\n",
                     fastest, generic, with_lanes ? "staged ms | lanes ms | " : "", with_lanes ? "---|---|" : "");
}

std::string milliseconds(std::optional<double> seconds) {
  return seconds ? fmt::format("{:.3f}", *seconds * 1e3) : "-";
}

std::string table_row(const std::string& name, const at::Tensor& x, const OpTimings& t, double bandwidth,
                      bool with_lanes = false) {
  const double best = std::min({t.staged.value_or(1e30), t.lanes.value_or(1e30), t.fastest.value_or(t.generic)});
  const double floor = t.bytes / bandwidth;
  const bool channels_last = x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast) && !x.is_contiguous();
  return fmt::format("| {}{} | {} | {} | {}{} | {} | {} | {:.0f} | {:.3f} | {:.2f} | {} | {:.2f} |\n", name,
                     t.picked.empty() ? "" : " (autotune: " + t.picked + ")",
                     fmt::join(x.sizes(), "x"), channels_last ? "NHWC" : "NCHW",
                     with_lanes ? milliseconds(t.staged) + " | " + milliseconds(t.lanes) + " | " : "",
                     milliseconds(t.fastest),
                     milliseconds(t.generic), milliseconds(t.reference), t.bytes / best / 1e9, floor * 1e3,
                     best / floor, t.fastest ? fmt::format("{:.2f}", t.generic / *t.fastest) : "-",
                     t.reference / best);
}

struct FirCase {
  std::string name;
  std::vector<int64_t> x_shape;  // [N, C, H, W]
  FirParams params;
};

// The forward calls at resolution r (padding as conv2d_resample and the skip paths compute it),
// then the gradients of the first three: upfirdn2d again, with the adjoint's parameters.
std::vector<FirCase> fir_cases(int64_t batch, int64_t r, const train::TrainConfig& config) {
  const int64_t g_channels = config.G.channels_at(r), d_channels = config.D.channels_at(r);
  const int64_t rgb = config.G.img_channels;
  std::vector<FirCase> cases{
      {"G: filter after the 2x transposed conv", {batch, g_channels, r + 1, r + 1}, {1, 1, {1, 1, 1, 1}, false, 4.0}},
      {"D: filter before the strided conv", {batch, d_channels, r, r}, {1, 1, {2, 2, 2, 2}, false, 1.0}},
      {"D: 2x downsampling (skip)", {batch, d_channels, r, r}, {1, 2, {1, 1, 1, 1}, false, 1.0}},
      {"G: 2x upsampling of the image", {batch, rgb, r / 2, r / 2}, {2, 1, {2, 1, 2, 1}, false, 4.0}},
  };
  cases.reserve(cases.size() + 3);  // `forward` below stays valid
  for (size_t i = 0; i < 3; ++i) {
    const FirCase& forward = cases[i];
    const int64_t in_h = forward.x_shape[2], in_w = forward.x_shape[3];
    const auto [out_h, out_w] = kernels::upfirdn2d_output_size(
        at::empty(forward.x_shape, at::TensorOptions().device(at::kMeta)), at::empty({4, 4}), forward.params);
    FirCase gradient{forward.name + ", gradient", {batch, forward.x_shape[1], out_h, out_w},
                     kernels::upfirdn2d_adjoint(forward.params, 4, 4, in_h, in_w, out_h, out_w)};
    cases.push_back(gradient);
  }
  return cases;
}

OpTimings time_fir(const Timer& time, const at::Tensor& x, const at::Tensor& f, const FirParams& p) {
  OpTimings t;
  t.bytes = static_cast<double>(x.nbytes() + kernels::upfirdn2d_forward(x, f, p).nbytes());
  t.reference = time([&] { nn::ops::upfirdn2d_reference(x, f, p); });
  const kernels::FirKernelRun run = kernels::upfirdn2d_kernel_run(x, f, p);
  if (run == kernels::FirKernelRun::InLanes) {
    t.staged = time([&] { kernels::upfirdn2d_forward(x, f, p, kernels::KernelVariant::Staged); });
    t.lanes = time([&] { kernels::upfirdn2d_forward(x, f, p, kernels::KernelVariant::Lanes); });
    kernels::upfirdn2d_forward(x, f, p);  // the shape's first launch of Fastest times both, once
    if (const auto timed = kernels::upfirdn2d_timed_variant(x, f, p)) {
      t.picked = *timed == kernels::KernelVariant::Staged ? "staged" : "lanes";
    }
  }
  if (run != kernels::FirKernelRun::Generic) {
    t.fastest = time([&] { kernels::upfirdn2d_forward(x, f, p, kernels::KernelVariant::Tiled); });
  }
  t.generic = time([&] { kernels::upfirdn2d_forward(x, f, p, kernels::KernelVariant::Generic); });
  return t;
}

struct BiasActCase {
  std::string name;
  std::vector<int64_t> x_shape;  // [N, C, H, W]
  BiasActParams params;
  bool gradient;  // dx = dy * slope(y) instead of y
};

// Every bias_act call of the networks at resolution r is one of these shapes, clamped at the
// network's conv_clamp.
std::vector<BiasActCase> bias_act_cases(int64_t batch, int64_t r, const train::TrainConfig& config) {
  const auto lrelu = [](double clamp) { return BiasActParams{1, nn::ops::Activation::LRelu, -1, -1, clamp}; };
  const BiasActParams rgb{1, nn::ops::Activation::Linear, -1, -1, config.G.conv_clamp};
  const std::vector<int64_t> g_shape{batch, config.G.channels_at(r), r, r};
  const std::vector<int64_t> d_shape{batch, config.D.channels_at(r), r, r};
  return {{"G: conv output, lrelu", g_shape, lrelu(config.G.conv_clamp), false},
          {"D: conv output, lrelu", d_shape, lrelu(config.D.conv_clamp), false},
          {"G: toRGB output, linear", {batch, config.G.img_channels, r, r}, rgb, false},
          {"G: conv output, lrelu, gradient", g_shape, lrelu(config.G.conv_clamp), true},
          {"D: conv output, lrelu, gradient", d_shape, lrelu(config.D.conv_clamp), true}};
}

// The reference's gradient is autograd's through its elementwise ops, to x only (as the kernel's).
OpTimings time_bias_act(const Timer& time, const at::Tensor& x, const at::Tensor& b, const BiasActCase& c) {
  OpTimings t;
  const BiasActParams& p = c.params;
  if (!c.gradient) {
    t.bytes = 2.0 * static_cast<double>(x.nbytes());
    t.reference = time([&] { nn::ops::bias_act_reference(x, b, p); });
    if (kernels::bias_act_runs_packed(x)) t.fastest = time([&] { kernels::bias_act_forward(x, b, p); });
    t.generic = time([&] { kernels::bias_act_forward(x, b, p, kernels::KernelVariant::Generic); });
    return t;
  }
  const at::Tensor y = kernels::bias_act_forward(x, b, p), dy = at::randn_like(y);
  t.bytes = 3.0 * static_cast<double>(y.nbytes());
  const at::Tensor xr = x.detach().requires_grad_(true), yr = nn::ops::bias_act_reference(xr, b, p);
  t.reference = time([&] { torch::autograd::grad({yr}, {xr}, {dy}, /*retain_graph=*/true); });
  if (kernels::bias_act_runs_packed(y)) t.fastest = time([&] { kernels::bias_act_gradient(dy, y, p); });
  t.generic = time([&] { kernels::bias_act_gradient(dy, y, p, kernels::KernelVariant::Generic); });
  return t;
}

// The epilogue of G's convolution layers at resolution r (demodulation, per-sample noise, bias,
// lrelu, G's clamp), forward and gradient: the fused kernels (where they run), the composition with
// bias_act's kernel (what the layers ran before) and the reference's composition. The gradients are
// those of every input, as training takes them (the kernel's plane sums reduced as the op does).
std::string epilogue_rows(const Timer& time, const at::TensorOptions& on_device, int64_t batch, int64_t r,
                          const train::TrainConfig& config, at::MemoryFormat layout) {
  const at::Tensor x = at::randn({batch, config.G.channels_at(r), r, r}, on_device).contiguous(layout);
  const at::TensorOptions floats = on_device.dtype(at::kFloat);
  const at::Tensor demod = at::rand({batch, x.size(1)}, floats) + 0.5, noise = at::randn({batch, 1, r, r}, floats);
  const at::Tensor strength = at::full({}, 0.1, floats), b = at::randn({x.size(1)}, floats);
  const BiasActParams p{1, nn::ops::Activation::LRelu, -1, -1, config.G.conv_clamp};
  const kernels::EpilogueTensors t{x, demod, noise, strength, b};
  const bool fused = kernels::conv_epilogue_runs_fused(x, noise, nn::ops::Impl::Fast);
  const auto composed = [&](nn::ops::Impl impl, const std::vector<at::Tensor>& v) {
    return nn::ops::demodulate_noise_bias_act_composed(v[0], v[1], noise, v[2], v[3], p, impl);
  };
  OpTimings forward;
  forward.bytes = 2.0 * static_cast<double>(x.nbytes());
  if (fused) forward.fastest = time([&] { kernels::conv_epilogue_forward(t, p); });
  forward.generic = time([&] { composed(nn::ops::Impl::Fast, {x, demod, strength, b}); });
  forward.reference = time([&] { composed(nn::ops::Impl::Reference, {x, demod, strength, b}); });

  OpTimings gradient;
  gradient.bytes = 4.0 * static_cast<double>(x.nbytes());
  const at::Tensor y = composed(nn::ops::Impl::Fast, {x, demod, strength, b}), dy = at::randn_like(y);
  if (fused) {
    gradient.fastest = time([&] {
      const kernels::EpilogueGradient g = kernels::conv_epilogue_gradient(dy, y, t, p);
      g.plane_sums.sum(0);  // the bias's and the noise strength's sums, as the op takes them
    });
  }
  const auto autograd = [&](nn::ops::Impl impl) {
    std::vector<at::Tensor> v{x, demod, strength, b};
    for (at::Tensor& leaf : v) leaf = leaf.detach().requires_grad_(true);
    const at::Tensor out = composed(impl, v);
    return time([&] { torch::autograd::grad({out}, v, {dy}, /*retain_graph=*/true); });
  };
  gradient.generic = autograd(nn::ops::Impl::Fast);
  gradient.reference = autograd(nn::ops::Impl::Reference);
  return table_row("G: epilogue (demodulation, noise, bias, lrelu)", x, forward, time.bandwidth) +
         table_row("G: epilogue, gradient", x, gradient, time.bandwidth);
}

// The modulation of G's layer inputs at resolution r (x * styles, ops::scale_planes) and its
// gradient, to x and the styles: the epilogue's kernels against the product (the composition and
// the reference alike).
std::string modulation_rows(const Timer& time, const at::TensorOptions& on_device, int64_t batch, int64_t r,
                            const train::TrainConfig& config, at::MemoryFormat layout) {
  const at::Tensor x = at::randn({batch, config.G.channels_at(r), r, r}, on_device).contiguous(layout);
  const at::Tensor styles = at::randn({batch, x.size(1)}, on_device.dtype(at::kFloat)), dy = at::randn_like(x);
  const bool fused = kernels::conv_epilogue_runs_fused(x, at::Tensor(), nn::ops::Impl::Fast);
  OpTimings forward, gradient;
  forward.bytes = 2.0 * static_cast<double>(x.nbytes());
  gradient.bytes = 3.0 * static_cast<double>(x.nbytes());
  const auto timings = [&](nn::ops::Impl impl) {
    const at::Tensor xr = x.detach().requires_grad_(true), sr = styles.detach().requires_grad_(true);
    const at::Tensor y = nn::ops::scale_planes(xr, sr, impl);
    return std::make_pair(time([&] { nn::ops::scale_planes(x, styles, impl); }),
                          time([&] { torch::autograd::grad({y}, {xr, sr}, {dy}, /*retain_graph=*/true); }));
  };
  if (fused) std::tie(forward.fastest, gradient.fastest) = timings(nn::ops::Impl::Fast);
  std::tie(forward.generic, gradient.generic) = timings(nn::ops::Impl::Reference);
  forward.reference = forward.generic;
  gradient.reference = gradient.generic;
  return table_row("G: input modulation", x, forward, time.bandwidth) +
         table_row("G: input modulation, gradient", x, gradient, time.bandwidth);
}

const std::vector<at::MemoryFormat> kLayouts{at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast};

// How float32 convolutions run: IEEE float32 (the reference's, TF32 off), 3xTF32 (tf32_split.h) and
// one TF32 pass (run.allow_tf32: faster still, with 10 mantissa bits).
enum class Float32Arithmetic { Ieee, Split3xTf32, Tf32 };

// fn() with float32 convolutions in `arithmetic`, the settings before it back after.
template <typename Fn>
auto in_arithmetic(Float32Arithmetic arithmetic, Fn&& fn) {
  const nn::ops::CudnnTf32Scope tf32(arithmetic == Float32Arithmetic::Tf32);
  const nn::ops::Tf32SplitScope split(arithmetic == Float32Arithmetic::Split3xTf32 ? nn::ops::Tf32SplitDevices::All
                                                                                   : nn::ops::Tf32SplitDevices::None);
  return fn();
}

// One row: f(a, b), a convolution or one of its gradients, timed in each arithmetic at `flops` a
// call, with its error in each against f in float64 (the largest difference over the largest value).
std::string float32_convolution_row(const Timer& time, const std::string& name, const at::Tensor& a,
                                    const at::Tensor& b, const at::Tensor& shown_w, double flops,
                                    const nn::ops::Bilinear& f) {
  const at::Tensor exact = f(a.to(at::kDouble), b.to(at::kDouble));
  const double scale = std::max(exact.abs().max().item<double>(), 1e-30);
  std::string seconds, errors;
  double ieee = 0, split = 0;
  for (const auto arithmetic : {Float32Arithmetic::Ieee, Float32Arithmetic::Split3xTf32, Float32Arithmetic::Tf32}) {
    const double s = in_arithmetic(arithmetic, [&] { return time([&] { f(a, b); }); });
    const double error =
        in_arithmetic(arithmetic, [&] { return (f(a, b).to(at::kDouble) - exact).abs().max().item<double>(); });
    seconds += fmt::format(" {:.3f} |", s * 1e3);
    errors += fmt::format(" {:.1e} |", error / scale);
    if (arithmetic == Float32Arithmetic::Ieee) ieee = s;
    if (arithmetic == Float32Arithmetic::Split3xTf32) split = s;
  }
  return fmt::format("| {} | {} | {} | {} |{}{} {:.1f} | {:.1f} | {:.2f} |\n", name, fmt::join(a.sizes(), "x"),
                     fmt::join(shown_w.sizes(), "x"), a.is_contiguous() ? "NCHW" : "NHWC", seconds, errors,
                     flops / ieee / 1e12, flops / split / 1e12, ieee / split);
}

// The float32 blocks' 3x3 convolutions at resolution r (512 channels in config-f below 32x32) as
// training runs them through conv2d_gradfix: forward, input gradient and weight gradient; and G's
// transposed 2x upsampling convolution into r. No gradient is recorded: each is one of the
// gradfix's functions, as its backward calls them.
std::string float32_convolution_rows(const Timer& time, const at::Device& device, int64_t batch, int64_t r,
                                     const train::TrainConfig& config, at::MemoryFormat layout) {
  const auto floats = at::TensorOptions().device(device).dtype(at::kFloat);
  const int64_t c = config.G.channels_at(r);
  const at::Tensor x = at::randn({batch, c, r, r}, floats).contiguous(layout), w = at::randn({c, c, 3, 3}, floats);
  const at::Tensor dy = at::randn({batch, c, r, r}, floats).contiguous(layout);
  const at::Tensor x_half = at::randn({batch, c, r / 2, r / 2}, floats).contiguous(layout);
  nn::ops::ConvGeometry same, up;
  same.padding = {1, 1};
  same.layout = up.layout = layout;
  up.stride = {2, 2};
  up.transpose = true;
  const nn::ops::ConvGeometry back = nn::ops::input_gradient_geometry(same, x.sizes(), dy.sizes(), w.sizes());
  const double flops = 2.0 * static_cast<double>(batch * c * c * 9 * r * r);
  const auto convolution = [](const nn::ops::ConvGeometry& g) {
    return [g](const at::Tensor& a, const at::Tensor& b) { return nn::ops::conv2d_gradfix(a, b, g); };
  };
  const at::NoGradGuard no_grad;
  const std::string name = fmt::format("3x3 conv at {}x{}", r, r);
  return float32_convolution_row(time, name, x, w, w, flops, convolution(same)) +
         float32_convolution_row(time, name + ", input gradient", dy, w, w, flops, convolution(back)) +
         float32_convolution_row(time, name + ", weight gradient", dy, x, w, flops,
                                 [&](const at::Tensor& a, const at::Tensor& b) {
                                   return nn::ops::conv2d_weight_gradient(a, b, same, w.sizes());
                                 }) +
         float32_convolution_row(time, fmt::format("2x transposed 3x3 conv (G's upsampling) from {0}x{0}", r / 2),
                                 x_half, w, w, flops / 4, convolution(up));
}

}  // namespace

std::string run_ops_benchmark(const train::TrainConfig& config, const OpsBenchOptions& options) {
  SG2_CHECK(options.resolution >= 8 && options.batch >= 1 && options.repeats >= 1,
            "stylegan2_bench ops: needs --resolution >= 8, --ops-batch >= 1 and --ops-repeats >= 1");
  const at::Device device = train::resolve_device(config.run.device);
  const auto [dtype, dtype_name] = dtype_for(options.dtype, device);
  const std::string compute = apply_compute_settings(config, dist::World{});  // cuDNN benchmark, TF32, threads
  const auto on_device = at::TensorOptions().device(device).dtype(dtype);
  const Timer time{device, options.repeats, copy_bandwidth(device, options.repeats)};
  const int64_t r = options.resolution;
  std::ostringstream out;
  out << fmt::format("# resolution {}, batch {}, {} on {}; device copy {:.1f} GB/s (read + write)\n", r, options.batch,
                     dtype_name, device.str(), time.bandwidth / 1e9);
  out << "# compute: " << compute << "\n\n## upfirdn2d\n\n" << table_header("tiled", "generic", /*with_lanes=*/true);
  const at::Tensor f = nn::ops::setup_filter(config.G.resample_filter).to(device);
  for (const FirCase& c : fir_cases(options.batch, r, config)) {
    for (const auto layout : kLayouts) {
      const at::Tensor x = at::randn(c.x_shape, on_device).contiguous(layout);
      out << table_row(c.name, x, time_fir(time, x, f, c.params), time.bandwidth, /*with_lanes=*/true);
    }
  }
  out << fmt::format("\n## bias_act (clamp: G {}, D {})\n\n", config.G.conv_clamp, config.D.conv_clamp)
      << table_header("packs");
  for (const BiasActCase& c : bias_act_cases(options.batch, r, config)) {
    for (const auto layout : kLayouts) {
      const at::Tensor x = at::randn(c.x_shape, on_device).contiguous(layout), b = at::randn({c.x_shape[1]}, on_device);
      out << table_row(c.name, x, time_bias_act(time, x, b, c), time.bandwidth);
    }
  }
  out << fmt::format("\n## The synthesis layers' epilogue (clamp {})\n\n", config.G.conv_clamp)
      << table_header("fused", "composed");
  for (const auto layout : kLayouts) {
    out << epilogue_rows(time, on_device, options.batch, r, config, layout)
        << modulation_rows(time, on_device, options.batch, r, config, layout);
  }
  out << "\n## Float32 convolutions (the float32 blocks'; run.float32_convolutions ieee or 3xtf32, run.allow_tf32)\n\n"
      << "| op | x | w | layout | ieee ms | 3xtf32 ms | tf32 ms | ieee error | 3xtf32 error | tf32 error | ieee TFLOP/s "
         "| 3xtf32 TFLOP/s | ieee / 3xtf32 |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const int64_t float32_r : {int64_t{16}, int64_t{8}}) {
    for (const auto layout : kLayouts) {
      out << float32_convolution_rows(time, device, options.batch, float32_r, config, layout);
    }
  }
  if (!device.is_cuda()) {
    out << "\n(On the CPU the upfirdn2d and bias_act kernel column is 'generic': one kernel, no CUDA variant; "
           "float32 convolutions have no TF32 there, so 3xtf32 is three float32 passes.)\n";
  }
  return out.str();
}

}  // namespace sg2::cli
