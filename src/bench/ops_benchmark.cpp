#include "sg2/bench/ops_benchmark.h"

#include "sg2/bench/benchmark.h"
#include "sg2/core/error.h"
#include "sg2/ops/bias_act.h"
#include "sg2/ops/conv_epilogue.h"
#include "sg2/ops/conv_gradfix.h"
#include "sg2/ops/tf32_split.h"
#include "sg2/ops/upfirdn2d.h"
#include "sg2/train/run_record.h"
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

namespace sg2::bench {

namespace {

namespace kernels = ops::kernels;
using ops::Kernel;
using ops::BiasActParams;
using ops::FirParams;

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
  std::optional<double> lanes;  // upfirdn2d's kernel in 16-byte lanes of channels (its table only)
  std::optional<double> fastest;
  double generic = 0, reference = 0, bytes = 0;
};

std::string milliseconds(std::optional<double> seconds) {
  return seconds ? fmt::format("{:.3f}", *seconds * 1e3) : "-";
}

// The tables as text for people (markdown) and as one JSON record a row for scripts (--jsonl).
class OpsReport {
 public:
  OpsReport(const at::Device& device, std::string dtype) : device_(device.str()), dtype_(std::move(dtype)) {}

  // Starts a table: `table` names it in the records; kernel and generic name its first two timed
  // columns (OpTimings' fastest and generic); with_lanes puts a 'lanes' column before them.
  void start_table(const std::string& title, std::string table, std::string kernel, std::string generic = "generic",
                   bool with_lanes = false) {
    table_ = std::move(table);
    kernel_ = std::move(kernel);
    generic_ = std::move(generic);
    with_lanes_ = with_lanes;
    text_ << fmt::format("\n## {}\n\n| op | x | layout | {}{} ms | {} ms | reference ms | best GB/s | floor ms | "
                         "best / floor | {} / {} | reference / best |\n"
                         "|---|---|---|{}---|---|---|---|---|---|---|---|\n",
                         title, with_lanes_ ? "lanes ms | " : "", kernel_, generic_, generic_, kernel_,
                         with_lanes_ ? "---|" : "");
  }

  void add_row(const std::string& name, const at::Tensor& x, const OpTimings& t, double bandwidth) {
    const double best = std::min(t.lanes.value_or(1e30), t.fastest.value_or(t.generic));
    const double floor = t.bytes / bandwidth;
    const std::string layout = x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast) && !x.is_contiguous()
                                   ? "NHWC"
                                   : "NCHW";
    text_ << fmt::format("| {} | {} | {} | {}{} | {} | {} | {:.0f} | {:.3f} | {:.2f} | {} | {:.2f} |\n", name,
                         fmt::join(x.sizes(), "x"), layout, with_lanes_ ? milliseconds(t.lanes) + " | " : "",
                         milliseconds(t.fastest), milliseconds(t.generic), milliseconds(t.reference),
                         t.bytes / best / 1e9, floor * 1e3, best / floor,
                         t.fastest ? fmt::format("{:.2f}", t.generic / *t.fastest) : "-", t.reference / best);
    nlohmann::json record = row_record(name, x, layout);
    record["seconds"] = {{kernel_, seconds_or_null(t.fastest)}, {generic_, t.generic}, {"reference", t.reference}};
    if (with_lanes_) record["seconds"]["lanes"] = seconds_or_null(t.lanes);
    record["bytes"] = t.bytes;
    record["floor_s"] = floor;
    records_.push_back(std::move(record));
  }

  // A row of the float32 convolutions' table: seconds and relative error per arithmetic.
  void add_float32_row(const std::string& name, const at::Tensor& a, const at::Tensor& w, double flops,
                       const std::vector<std::tuple<std::string, double, double>>& by_arithmetic) {
    const std::string layout = a.is_contiguous() ? "NCHW" : "NHWC";
    std::string seconds, errors;
    nlohmann::json record = row_record(name, a, layout);
    record["w"] = w.sizes().vec();
    record["flops"] = flops;
    for (const auto& [arithmetic, s, error] : by_arithmetic) {
      seconds += fmt::format(" {:.3f} |", s * 1e3);
      errors += fmt::format(" {:.1e} |", error);
      record["seconds"][arithmetic] = s;
      record["relative_error"][arithmetic] = error;
    }
    const double ieee = std::get<1>(by_arithmetic.at(0)), split = std::get<1>(by_arithmetic.at(1));
    text_ << fmt::format("| {} | {} | {} | {} |{}{} {:.1f} | {:.1f} | {:.2f} |\n", name, fmt::join(a.sizes(), "x"),
                         fmt::join(w.sizes(), "x"), layout, seconds, errors, flops / ieee / 1e12, flops / split / 1e12,
                         ieee / split);
    records_.push_back(std::move(record));
  }

  // The float32 convolutions' table (rows: add_float32_row).
  void start_float32_table() {
    table_ = "float32_convolutions";
    text_ << "\n## Float32 convolutions (the float32 blocks'; run.float32_convolutions ieee or 3xtf32, "
             "run.allow_tf32)\n\n| op | x | w | layout | ieee ms | 3xtf32 ms | tf32 ms | ieee error | 3xtf32 error | "
             "tf32 error | ieee TFLOP/s | 3xtf32 TFLOP/s | ieee / 3xtf32 |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  }

  std::ostringstream& text() { return text_; }
  OpsBenchResult finish() { return {text_.str(), std::move(records_)}; }

 private:
  static nlohmann::json seconds_or_null(std::optional<double> seconds) {
    return seconds ? nlohmann::json(*seconds) : nlohmann::json(nullptr);
  }
  nlohmann::json row_record(const std::string& name, const at::Tensor& x, const std::string& layout) const {
    return {{"kind", "ops"}, {"table", table_}, {"op", name},   {"x", x.sizes().vec()}, {"layout", layout},
            {"dtype", dtype_}, {"device", device_}, {"git_commit", train::source_commit()}};
  }

  std::string device_, dtype_, table_, kernel_, generic_;
  bool with_lanes_ = false;
  std::ostringstream text_;
  std::vector<nlohmann::json> records_;
};

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
  t.reference = time([&] { ops::upfirdn2d_reference(x, f, p); });
  const Kernel auto_kernel = kernels::upfirdn2d_auto_kernel(x, f, p);
  if (auto_kernel == Kernel::ChannelLanes) {
    t.lanes = time([&] { kernels::upfirdn2d_forward(x, f, p, Kernel::ChannelLanes); });
  }
  if (auto_kernel != Kernel::PerElement) t.fastest = time([&] { kernels::upfirdn2d_forward(x, f, p, Kernel::Tiled); });
  t.generic = time([&] { kernels::upfirdn2d_forward(x, f, p, Kernel::PerElement); });
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
  const auto lrelu = [](double clamp) { return BiasActParams{1, ops::Activation::LRelu, -1, -1, clamp}; };
  const BiasActParams rgb{1, ops::Activation::Linear, -1, -1, config.G.conv_clamp};
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
    t.reference = time([&] { ops::bias_act_reference(x, b, p); });
    if (kernels::bias_act_runs_packed(x)) t.fastest = time([&] { kernels::bias_act_forward(x, b, p); });
    t.generic = time([&] { kernels::bias_act_forward(x, b, p, Kernel::PerElement); });
    return t;
  }
  const at::Tensor y = kernels::bias_act_forward(x, b, p), dy = at::randn_like(y);
  t.bytes = 3.0 * static_cast<double>(y.nbytes());
  const at::Tensor xr = x.detach().requires_grad_(true), yr = ops::bias_act_reference(xr, b, p);
  t.reference = time([&] { torch::autograd::grad({yr}, {xr}, {dy}, /*retain_graph=*/true); });
  if (kernels::bias_act_runs_packed(y)) t.fastest = time([&] { kernels::bias_act_gradient(dy, y, p); });
  t.generic = time([&] { kernels::bias_act_gradient(dy, y, p, Kernel::PerElement); });
  return t;
}

// The epilogue of G's convolution layers at resolution r (demodulation, per-sample noise, bias,
// lrelu, G's clamp), forward and gradient: the fused kernels (where they run), the composition with
// bias_act's kernel (what the layers ran before) and the reference's composition. The gradients are
// those of every input, as training takes them (the kernel's plane sums reduced as the op does).
void add_epilogue_rows(OpsReport& report, const Timer& time, const at::TensorOptions& on_device, int64_t batch,
                       int64_t r, const train::TrainConfig& config, at::MemoryFormat layout) {
  const at::Tensor x = at::randn({batch, config.G.channels_at(r), r, r}, on_device).contiguous(layout);
  const at::TensorOptions floats = on_device.dtype(at::kFloat);
  const at::Tensor demod = at::rand({batch, x.size(1)}, floats) + 0.5, noise = at::randn({batch, 1, r, r}, floats);
  const at::Tensor strength = at::full({}, 0.1, floats), b = at::randn({x.size(1)}, floats);
  const BiasActParams p{1, ops::Activation::LRelu, -1, -1, config.G.conv_clamp};
  const kernels::EpilogueTensors t{x, demod, noise, strength, b};
  const bool fused = kernels::conv_epilogue_runs_fused(x, noise, Kernel::Auto);
  const auto composed = [&](Kernel kernel, const std::vector<at::Tensor>& v) {
    return ops::demodulate_noise_bias_act_composed(v[0], v[1], noise, v[2], v[3], p, ops::ComputeSettings{kernel});
  };
  OpTimings forward;
  forward.bytes = 2.0 * static_cast<double>(x.nbytes());
  if (fused) forward.fastest = time([&] { kernels::conv_epilogue_forward(t, p); });
  forward.generic = time([&] { composed(Kernel::Auto, {x, demod, strength, b}); });
  forward.reference = time([&] { composed(Kernel::Reference, {x, demod, strength, b}); });

  OpTimings gradient;
  gradient.bytes = 4.0 * static_cast<double>(x.nbytes());
  const at::Tensor y = composed(Kernel::Auto, {x, demod, strength, b}), dy = at::randn_like(y);
  if (fused) {
    gradient.fastest = time([&] {
      const kernels::EpilogueGradient g = kernels::conv_epilogue_gradient(dy, y, t, p);
      g.plane_sums.sum(0);  // the bias's and the noise strength's sums, as the op takes them
    });
  }
  const auto autograd = [&](Kernel kernel) {
    std::vector<at::Tensor> v{x, demod, strength, b};
    for (at::Tensor& leaf : v) leaf = leaf.detach().requires_grad_(true);
    const at::Tensor out = composed(kernel, v);
    return time([&] { torch::autograd::grad({out}, v, {dy}, /*retain_graph=*/true); });
  };
  gradient.generic = autograd(Kernel::Auto);
  gradient.reference = autograd(Kernel::Reference);
  report.add_row("G: epilogue (demodulation, noise, bias, lrelu)", x, forward, time.bandwidth);
  report.add_row("G: epilogue, gradient", x, gradient, time.bandwidth);
}

// The modulation of G's layer inputs at resolution r (x * styles, ops::scale_planes) and its
// gradient, to x and the styles: the epilogue's kernels against the product (the composition and
// the reference alike).
void add_modulation_rows(OpsReport& report, const Timer& time, const at::TensorOptions& on_device, int64_t batch,
                         int64_t r, const train::TrainConfig& config, at::MemoryFormat layout) {
  const at::Tensor x = at::randn({batch, config.G.channels_at(r), r, r}, on_device).contiguous(layout);
  const at::Tensor styles = at::randn({batch, x.size(1)}, on_device.dtype(at::kFloat)), dy = at::randn_like(x);
  const bool fused = kernels::conv_epilogue_runs_fused(x, at::Tensor(), Kernel::Auto);
  OpTimings forward, gradient;
  forward.bytes = 2.0 * static_cast<double>(x.nbytes());
  gradient.bytes = 3.0 * static_cast<double>(x.nbytes());
  const auto timings = [&](Kernel kernel) {
    const ops::ComputeSettings compute{kernel};
    const at::Tensor xr = x.detach().requires_grad_(true), sr = styles.detach().requires_grad_(true);
    const at::Tensor y = ops::scale_planes(xr, sr, compute);
    return std::make_pair(time([&] { ops::scale_planes(x, styles, compute); }),
                          time([&] { torch::autograd::grad({y}, {xr, sr}, {dy}, /*retain_graph=*/true); }));
  };
  if (fused) std::tie(forward.fastest, gradient.fastest) = timings(Kernel::Auto);
  std::tie(forward.generic, gradient.generic) = timings(Kernel::Reference);
  forward.reference = forward.generic;
  gradient.reference = gradient.generic;
  report.add_row("G: input modulation", x, forward, time.bandwidth);
  report.add_row("G: input modulation, gradient", x, gradient, time.bandwidth);
}

const std::vector<at::MemoryFormat> kLayouts{at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast};

// How float32 convolutions run: IEEE float32 (the reference's, TF32 off), 3xTF32 (tf32_split.h) and
// one TF32 pass (run.allow_tf32: faster still, with 10 mantissa bits).
enum class Float32Arithmetic { Ieee, Split3xTf32, Tf32 };

// A convolution or one of its gradients, bilinear in (a, b), on the devices whose float32 passes
// run split (ConvGeometry::tf32_split).
using SplitBilinear = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, ops::DeviceSet)>;

// f(a, b) with float32 convolutions in `arithmetic`, LibTorch's TF32 setting before it back after.
at::Tensor in_arithmetic(Float32Arithmetic arithmetic, const SplitBilinear& f, const at::Tensor& a,
                         const at::Tensor& b) {
  const ops::CudnnTf32Scope tf32(arithmetic == Float32Arithmetic::Tf32);
  return f(a, b, arithmetic == Float32Arithmetic::Split3xTf32 ? ops::DeviceSet::All : ops::DeviceSet::None);
}

// One row: f(a, b), a convolution or one of its gradients, timed in each arithmetic at `flops` a
// call, with its error in each against f in float64 (the largest difference over the largest value).
void add_float32_convolution_row(OpsReport& report, const Timer& time, const std::string& name, const at::Tensor& a,
                                 const at::Tensor& b, const at::Tensor& shown_w, double flops, const SplitBilinear& f) {
  const at::Tensor exact = f(a.to(at::kDouble), b.to(at::kDouble), ops::DeviceSet::None);
  const double scale = std::max(exact.abs().max().item<double>(), 1e-30);
  std::vector<std::tuple<std::string, double, double>> by_arithmetic;
  for (const auto& [arithmetic, arithmetic_name] : {std::pair{Float32Arithmetic::Ieee, "ieee"},
                                                    std::pair{Float32Arithmetic::Split3xTf32, "3xtf32"},
                                                    std::pair{Float32Arithmetic::Tf32, "tf32"}}) {
    const double s = time([&] { in_arithmetic(arithmetic, f, a, b); });
    const double error = (in_arithmetic(arithmetic, f, a, b).to(at::kDouble) - exact).abs().max().item<double>();
    by_arithmetic.emplace_back(arithmetic_name, s, error / scale);
  }
  report.add_float32_row(name, a, shown_w, flops, by_arithmetic);
}

// The float32 blocks' 3x3 convolutions at resolution r (512 channels in config-f below 32x32) as
// training runs them through conv2d_gradfix: forward, input gradient and weight gradient; and G's
// transposed 2x upsampling convolution into r. No gradient is recorded: each is one of the
// gradfix's functions, as its backward calls them.
void add_float32_convolution_rows(OpsReport& report, const Timer& time, const at::Device& device, int64_t batch,
                                  int64_t r, const train::TrainConfig& config, at::MemoryFormat layout) {
  const auto floats = at::TensorOptions().device(device).dtype(at::kFloat);
  const int64_t c = config.G.channels_at(r);
  const at::Tensor x = at::randn({batch, c, r, r}, floats).contiguous(layout), w = at::randn({c, c, 3, 3}, floats);
  const at::Tensor dy = at::randn({batch, c, r, r}, floats).contiguous(layout);
  const at::Tensor x_half = at::randn({batch, c, r / 2, r / 2}, floats).contiguous(layout);
  ops::ConvGeometry same, up;
  same.padding = {1, 1};
  same.layout = up.layout = layout;
  up.stride = {2, 2};
  up.transpose = true;
  const ops::ConvGeometry back = ops::input_gradient_geometry(same, x.sizes(), dy.sizes(), w.sizes());
  const double flops = 2.0 * static_cast<double>(batch * c * c * 9 * r * r);
  const auto convolution = [](ops::ConvGeometry g) {
    return [g](const at::Tensor& a, const at::Tensor& b, ops::DeviceSet split) mutable {
      g.tf32_split = split;
      return ops::conv2d_gradfix(a, b, g);
    };
  };
  const at::NoGradGuard no_grad;
  const std::string name = fmt::format("3x3 conv at {}x{}", r, r);
  add_float32_convolution_row(report, time, name, x, w, w, flops, convolution(same));
  add_float32_convolution_row(report, time, name + ", input gradient", dy, w, w, flops, convolution(back));
  add_float32_convolution_row(report, time, name + ", weight gradient", dy, x, w, flops,
                              [&](const at::Tensor& a, const at::Tensor& b, ops::DeviceSet split) {
                                ops::ConvGeometry g = same;
                                g.tf32_split = split;
                                return ops::conv2d_weight_gradient(a, b, g, w.sizes());
                              });
  add_float32_convolution_row(report, time, fmt::format("2x transposed 3x3 conv (G's upsampling) from {0}x{0}", r / 2),
                              x_half, w, w, flops / 4, convolution(up));
}

}  // namespace

OpsBenchResult run_ops_benchmark(const train::TrainConfig& config, const OpsBenchOptions& options,
                                 const std::string& compute) {
  SG2_CHECK(options.resolution >= 8 && options.batch >= 1 && options.repeats >= 1,
            "stylegan2_bench ops: needs --resolution >= 8, --ops-batch >= 1 and --ops-repeats >= 1");
  const at::Device device = train::resolve_device(config.run.device);
  const auto [dtype, dtype_name] = dtype_for(options.dtype, device);
  const auto on_device = at::TensorOptions().device(device).dtype(dtype);
  const Timer time{device, options.repeats, copy_bandwidth(device, options.repeats)};
  const int64_t r = options.resolution;
  OpsReport report(device, dtype_name);
  report.text() << fmt::format("# resolution {}, batch {}, {} on {}; device copy {:.1f} GB/s (read + write)\n", r,
                               options.batch, dtype_name, device.str(), time.bandwidth / 1e9)
                << "# compute: " << compute << "\n";
  report.start_table("upfirdn2d", "upfirdn2d", "tiled", "per-element", /*with_lanes=*/true);
  const at::Tensor f = ops::setup_filter(config.G.resample_filter).to(device);
  for (const FirCase& c : fir_cases(options.batch, r, config)) {
    for (const auto layout : kLayouts) {
      const at::Tensor x = at::randn(c.x_shape, on_device).contiguous(layout);
      report.add_row(c.name, x, time_fir(time, x, f, c.params), time.bandwidth);
    }
  }
  report.start_table(fmt::format("bias_act (clamp: G {}, D {})", config.G.conv_clamp, config.D.conv_clamp), "bias_act",
                     "packs", "per-element");
  for (const BiasActCase& c : bias_act_cases(options.batch, r, config)) {
    for (const auto layout : kLayouts) {
      const at::Tensor x = at::randn(c.x_shape, on_device).contiguous(layout), b = at::randn({c.x_shape[1]}, on_device);
      report.add_row(c.name, x, time_bias_act(time, x, b, c), time.bandwidth);
    }
  }
  report.start_table(fmt::format("The synthesis layers' epilogue (clamp {})", config.G.conv_clamp), "epilogue",
                     "fused", "composed");
  for (const auto layout : kLayouts) {
    add_epilogue_rows(report, time, on_device, options.batch, r, config, layout);
    add_modulation_rows(report, time, on_device, options.batch, r, config, layout);
  }
  report.start_float32_table();
  for (const int64_t float32_r : {int64_t{16}, int64_t{8}}) {
    for (const auto layout : kLayouts) {
      add_float32_convolution_rows(report, time, device, options.batch, float32_r, config, layout);
    }
  }
  if (!device.is_cuda()) {
    report.text() << "\n(On the CPU upfirdn2d and bias_act have one kernel, in the per-element column; float32 "
                     "convolutions have no TF32 there, so 3xtf32 is three float32 passes.)\n";
  }
  return report.finish();
}

}  // namespace sg2::bench
