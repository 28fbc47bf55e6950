// CPU kernel for the synthesis layers' epilogue (cpu_kernels.h, conv_epilogue.h): demodulation, noise,
// bias and activation in one pass, and its gradient with each plane's three sums in the same pass;
// over NCHW planes, or over the NHWC rows of a channels_last tensor (a pixel's channels). The
// per-element arithmetic is bias_act_elements.h's, as on the GPU; the loops are written for the
// auto-vectoriser and compiled once per CPU level (sg2/core/cpu_level.h).
#include "channel_layout.h"
#include "cpu_kernels.h"
#include "sg2/core/cpu_level.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace sg2::ops::kernels::host {

namespace {

// A call (the EpilogueLaunch of channel_layout.h, float32 memory) with its activation. Without
// noise the NCHW loops read a plane of zeros of strength 0; without bias the NHWC loops read a row
// of zero biases.
struct EpilogueJob {
  EpilogueLaunch launch;
  ActivationParams a{};
  const float* zeros = nullptr;  // [plane_elements] (NCHW) or [channels] (NHWC)

  const float* plane_of(const void* memory, int64_t p) const {
    return static_cast<const float*>(memory) + p * launch.plane_elements;
  }
  const float* row_of(const void* memory, int64_t row) const {
    return static_cast<const float*>(memory) + row * launch.channels;
  }
  float* out_row(int64_t row) const { return static_cast<float*>(launch.out) + row * launch.channels; }
  const float* biases() const { return launch.bias != nullptr ? launch.bias : zeros; }
  const float* noise_plane(int64_t p) const {
    return launch.noise != nullptr ? launch.noise + epilogue_noise_start(launch, p / launch.channels) : zeros;
  }
  float* out_plane(int64_t p) const { return static_cast<float*>(launch.out) + p * launch.plane_elements; }
};

SG2_INLINE_IN_CLONES void forward_planes_at_this_level(const EpilogueJob& job, int64_t begin, int64_t end) {
  const ActivationParams a = job.a;  // a copy: no store below can change it, so the loops vectorise
  const int64_t n = job.launch.plane_elements;
  for (int64_t p = begin; p < end; ++p) {
    const EpiloguePlane plane = epilogue_plane(job.launch, p);
    const float *x = job.plane_of(job.launch.x, p), *noise = job.noise_plane(p);
    float* y = job.out_plane(p);
    for (int64_t i = 0; i < n; ++i) y[i] = epilogue_element(x[i], noise[i], plane, a);
  }
}

// One plane's gradient pointers.
struct GradientPlane {
  const float *x, *dy, *y, *noise;
  float* dx;
  float demod;
};

// Sums in kPartials interleaved accumulators (one per vector lane), so that the loop vectorises
// without reassociating a single sum; they are added up at the end of the run [begin, end).
constexpr int kPartials = 16;

SG2_INLINE_IN_CLONES EpilogueSums gradient_run(const GradientPlane& g_plane, const ActivationParams& a,
                                               int64_t begin, int64_t end) {
  const float *x = g_plane.x, *dy = g_plane.dy, *y = g_plane.y, *noise = g_plane.noise;
  float* dx = g_plane.dx;
  const float demod = g_plane.demod;
  float g_x[kPartials] = {}, g[kPartials] = {}, g_noise[kPartials] = {};
  int64_t i = begin;
  for (; i + kPartials <= end; i += kPartials) {
    for (int k = 0; k < kPartials; ++k) {
      const float g_i = dy[i + k] * activation_slope(y[i + k], a);
      dx[i + k] = g_i * demod;
      g_x[k] += g_i * x[i + k];
      g[k] += g_i;
      g_noise[k] += g_i * noise[i + k];
    }
  }
  EpilogueSums sums;
  for (; i < end; ++i) {
    const float g_i = dy[i] * activation_slope(y[i], a);
    dx[i] = g_i * demod;
    sums.add(g_i, x[i], noise[i]);
  }
  for (int k = 0; k < kPartials; ++k) sums.add(EpilogueSums{g_x[k], g[k], g_noise[k]});
  return sums;
}

// Runs of kRun elements, each summed in float32 and added up in float64, so that a 1024x1024
// plane's sums stay near float32 rounding.
constexpr int64_t kRun = 4096;

SG2_INLINE_IN_CLONES void gradient_planes_at_this_level(const EpilogueJob& job, int64_t begin, int64_t end) {
  const ActivationParams a = job.a;
  const int64_t n = job.launch.plane_elements;
  for (int64_t p = begin; p < end; ++p) {
    const GradientPlane plane{job.plane_of(job.launch.x, p), job.plane_of(job.launch.dy, p),
                              job.plane_of(job.launch.y, p), job.noise_plane(p), job.out_plane(p),
                              job.launch.demod[p]};
    double g_x = 0, g = 0, g_noise = 0;
    for (int64_t start = 0; start < n; start += kRun) {
      const EpilogueSums run = gradient_run(plane, a, start, std::min(n, start + kRun));
      g_x += run.g_x;
      g += run.g;
      g_noise += run.g_noise;
    }
    job.launch.sums[3 * p] = static_cast<float>(g_x);
    job.launch.sums[3 * p + 1] = static_cast<float>(g);
    job.launch.sums[3 * p + 2] = static_cast<float>(g_noise);
  }
}

// NHWC: rows [begin, end) of [N * pixels, channels].
SG2_INLINE_IN_CLONES void forward_rows_at_this_level(const EpilogueJob& job, int64_t begin, int64_t end) {
  const ActivationParams a = job.a;
  const int64_t channels = job.launch.channels, pixels = job.launch.plane_elements;
  const float strength = strength_of(job.launch);
  const float* bias = job.biases();
  for (int64_t row = begin; row < end; ++row) {
    const int64_t n = row / pixels;
    const float *x = job.row_of(job.launch.x, row), *demod = job.launch.demod + n * channels;
    const float noise = pixel_noise(job.launch, n, row - n * pixels);
    float* y = job.out_row(row);
    for (int64_t c = 0; c < channels; ++c) {
      y[c] = epilogue_element(x[c], noise, EpiloguePlane{demod[c], bias[c], strength}, a);
    }
  }
}

// NHWC: the gradient over runs of kRunPixels pixels of a sample, each channel's sums in float32
// along the run (the runs' are added in float64 afterwards). Task t is run t % chunks of sample
// t / chunks; its sums go to launch.sums as [N, chunks, channels, 3].
constexpr int64_t kRunPixels = 1024;

// The sums of one run, per channel.
struct ChannelSums {
  std::vector<float> g_x, g, g_noise;
  explicit ChannelSums(int64_t channels) : g_x(channels), g(channels), g_noise(channels) {}
};

// One row's gradient: g into dx first (the activation's branches, a loop of their own so that both
// vectorise), then dx = g * demod and the sums, while the row is in cache.
SG2_INLINE_IN_CLONES void gradient_row(const EpilogueJob& job, int64_t row, const float* __restrict demod, float noise,
                                       ChannelSums& sums) {
  const ActivationParams a = job.a;
  const int64_t channels = job.launch.channels;
  const float *__restrict x = job.row_of(job.launch.x, row), *__restrict dy = job.row_of(job.launch.dy, row),
              *__restrict y = job.row_of(job.launch.y, row);
  float* __restrict dx = job.out_row(row);
  for (int64_t c = 0; c < channels; ++c) dx[c] = dy[c] * activation_slope(y[c], a);
  float *__restrict g_x = sums.g_x.data(), *__restrict g = sums.g.data(), *__restrict g_noise = sums.g_noise.data();
  for (int64_t c = 0; c < channels; ++c) {
    const float g_c = dx[c];
    dx[c] = g_c * demod[c];
    g_x[c] += g_c * x[c];
    g[c] += g_c;
    g_noise[c] += g_c * noise;
  }
}

SG2_INLINE_IN_CLONES void gradient_pixel_runs_at_this_level(const EpilogueJob& job, int64_t begin, int64_t end) {
  const int64_t channels = job.launch.channels, pixels = job.launch.plane_elements, runs = job.launch.chunks;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t n = task / runs, first = (task - n * runs) * kRunPixels;
    ChannelSums sums(channels);
    for (int64_t pixel = first; pixel < std::min(pixels, first + kRunPixels); ++pixel) {
      gradient_row(job, n * pixels + pixel, job.launch.demod + n * channels, pixel_noise(job.launch, n, pixel), sums);
    }
    float* out = job.launch.sums + task * channels * 3;
    for (int64_t c = 0; c < channels; ++c) {
      out[3 * c] = sums.g_x[c];
      out[3 * c + 1] = sums.g[c];
      out[3 * c + 2] = sums.g_noise[c];
    }
  }
}

// Runs PartsAtThisLevel over parts [0, parts) of elements_per_part each, in parallel.
template <auto PartsAtThisLevel>
void run_parts(const EpilogueJob& job, int64_t parts, int64_t elements_per_part) {
  constexpr int64_t kGrainElements = 16384;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, elements_per_part));
  at::parallel_for(0, parts, grain, [&](int64_t begin, int64_t end) {
    cpu::run_at_cpu_level<PartsAtThisLevel>(job, begin, end);
  });
}

// The job of a call, and the zeros its loops read in place of a missing noise (NCHW) or bias (NHWC).
std::pair<EpilogueJob, at::Tensor> epilogue_job(const EpilogueTensors& t, const ActivationParams& a) {
  const EpilogueLaunch launch = epilogue_launch(t);
  at::Tensor zeros;
  if (launch.channels_last && !t.bias.defined()) zeros = at::zeros({launch.channels});
  if (!launch.channels_last && !t.noise.defined()) zeros = at::zeros({launch.plane_elements});
  return {EpilogueJob{launch, a, zeros.defined() ? zeros.data_ptr<float>() : nullptr}, zeros};
}

}  // namespace

at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const ActivationParams& a) {
  at::Tensor y = at::empty_like(t.x);  // x's layout
  if (t.x.numel() == 0) return y;
  auto [job, zeros] = epilogue_job(t, a);
  job.launch.out = y.data_ptr();
  const EpilogueLaunch& l = job.launch;
  if (l.channels_last) {
    run_parts<forward_rows_at_this_level>(job, l.planes / l.channels * l.plane_elements, l.channels);
  } else {
    run_parts<forward_planes_at_this_level>(job, l.planes, l.plane_elements);
  }
  return y;
}

EpilogueGradient conv_epilogue_grad(const at::Tensor& dy_in, const at::Tensor& y_in, const EpilogueTensors& t,
                                    const ActivationParams& a) {
  const at::Tensor y = laid_out_like(y_in, t.x), dy = laid_out_like(dy_in, t.x);  // no copies from the op
  EpilogueGradient grad{at::empty_like(t.x), at::zeros({t.x.size(0), t.x.size(1), 3}, t.x.options())};
  if (t.x.numel() == 0) return grad;
  auto [job, zeros] = epilogue_job(t, a);
  job.launch.dy = dy.data_ptr();
  job.launch.y = y.data_ptr();
  job.launch.out = grad.dx.data_ptr();
  const EpilogueLaunch& l = job.launch;
  if (!l.channels_last) {
    job.launch.sums = grad.plane_sums.data_ptr<float>();
    run_parts<gradient_planes_at_this_level>(job, l.planes, l.plane_elements);
    return grad;
  }
  job.launch.chunks = (l.plane_elements + kRunPixels - 1) / kRunPixels;
  const int64_t samples = t.x.size(0), channels = t.x.size(1);
  const at::Tensor run_sums = at::empty({samples, l.chunks, channels, 3}, t.x.options());
  job.launch.sums = run_sums.data_ptr<float>();
  const int64_t elements_per_run = std::min(l.plane_elements, kRunPixels) * channels;
  run_parts<gradient_pixel_runs_at_this_level>(job, samples * l.chunks, elements_per_run);
  grad.plane_sums = run_sums.sum(1, false, at::kDouble).to(at::kFloat);
  return grad;
}

}  // namespace sg2::ops::kernels::host
