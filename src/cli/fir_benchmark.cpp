#include "sg2/cli/fir_benchmark.h"

#include "sg2/cli/benchmark.h"
#include "sg2/cli/command_line.h"
#include "sg2/core/error.h"
#include "sg2/nn/upfirdn2d.h"
#include "sg2/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <vector>

namespace sg2::cli {

namespace {

namespace kernels = nn::kernels;
using nn::ops::FirParams;

struct FirCase {
  std::string name;
  std::vector<int64_t> x_shape;  // [N, C, H, W]
  FirParams params;
};

// The forward calls at resolution r (padding as conv2d_resample and the skip paths compute it),
// then the gradients of the first three: upfirdn2d again, with the adjoint's parameters.
std::vector<FirCase> network_cases(int64_t batch, int64_t r, int64_t g_channels, int64_t d_channels, int64_t rgb) {
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
// memory-bound op can hope for.
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
  SG2_FAIL("stylegan2_bench fir: unknown --dtype '{}' (expected auto, float16, bfloat16 or float32)", name);
}

std::string milliseconds(std::optional<double> seconds) {
  return seconds ? fmt::format("{:.3f}", *seconds * 1e3) : "-";
}

}  // namespace

std::string run_fir_benchmark(const train::TrainConfig& config, const FirBenchOptions& options) {
  SG2_CHECK(options.resolution >= 8 && options.batch >= 1 && options.repeats >= 1,
            "stylegan2_bench fir: needs --resolution >= 8, --batch >= 1 and --repeats >= 1");
  const at::Device device = train::resolve_device(config.run.device);
  const auto [dtype, dtype_name] = dtype_for(options.dtype, device);
  const std::string compute = apply_compute_settings(config, dist::World{});  // cuDNN benchmark, TF32, threads
  const auto on_device = at::TensorOptions().device(device).dtype(dtype);
  const at::Tensor f = nn::ops::setup_filter(config.G.resample_filter).to(device);
  const double bandwidth = copy_bandwidth(device, options.repeats);
  const int64_t r = options.resolution;
  std::ostringstream out;
  out << fmt::format("# upfirdn2d at resolution {}, batch {}, {} on {}; device copy {:.1f} GB/s (read + write)\n", r,
                     options.batch, dtype_name, device.str(), bandwidth / 1e9);
  out << "# compute: " << compute << "\n\n";
  out << "| op | x | layout | tiled ms | generic ms | reference ms | best GB/s | floor ms | best / floor | "
         "generic / tiled | reference / best |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const FirCase& c : network_cases(options.batch, r, config.G.channels_at(r), config.D.channels_at(r), 3)) {
    for (const auto layout : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast}) {
      const at::Tensor x = at::randn(c.x_shape, on_device).contiguous(layout);
      const at::Tensor y = kernels::upfirdn2d_forward(x, f, c.params);
      const double bytes = static_cast<double>(x.nbytes() + y.nbytes());
      const auto time = [&](const std::function<void()>& fn) { return seconds_per_call(device, options.repeats, fn); };
      std::optional<double> tiled, generic;
      const double reference = time([&] { nn::ops::upfirdn2d_reference(x, f, c.params); });
      if (kernels::upfirdn2d_runs_tiled(x, f, c.params)) tiled = time([&] { kernels::upfirdn2d_forward(x, f, c.params); });
      generic = time([&] { kernels::upfirdn2d_forward(x, f, c.params, kernels::FirKernel::Generic); });
      const double best = tiled ? *tiled : *generic, floor = bytes / bandwidth;
      out << fmt::format("| {} | {} | {} | {} | {} | {} | {:.0f} | {:.3f} | {:.2f} | {} | {:.2f} |\n", c.name,
                         fmt::join(c.x_shape, "x"), layout == at::MemoryFormat::ChannelsLast ? "NHWC" : "NCHW",
                         milliseconds(tiled), milliseconds(generic), milliseconds(reference), bytes / best / 1e9,
                         floor * 1e3, best / floor, tiled ? fmt::format("{:.2f}", *generic / *tiled) : "-",
                         reference / best);
    }
  }
  if (!device.is_cuda()) out << "\n(On the CPU the kernel column is 'generic': one kernel, no tiled variant.)\n";
  return out.str();
}

}  // namespace sg2::cli
