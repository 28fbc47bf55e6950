// CPU kernel for the synthesis layers' epilogue (cpu_kernels.h, conv_epilogue.h): demodulation, noise,
// bias and activation in one pass over each NCHW plane, and its gradient with the plane's three sums
// in the same pass. The per-element arithmetic is bias_act_elements.h's, as on the GPU; the loops are
// written for the auto-vectoriser and compiled once per CPU level (sg2/core/cpu_level.h).
#include "channel_layout.h"
#include "cpu_kernels.h"
#include "sg2/core/cpu_level.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <utility>

namespace sg2::nn::kernels::host {

namespace {

// A call (the EpilogueLaunch of channel_layout.h, float32 memory) with its activation. Without
// noise the loops read a plane of zeros of strength 0.
struct EpilogueJob {
  EpilogueLaunch launch;
  ActivationParams a{};
  const float* zeros = nullptr;  // [plane_elements]

  const float* plane_of(const void* memory, int64_t p) const {
    return static_cast<const float*>(memory) + p * launch.plane_elements;
  }
  EpiloguePlane plane(int64_t p) const {
    const float bias = launch.bias != nullptr ? launch.bias[p % launch.channels] : 0.0f;
    return {launch.demod[p], bias, launch.noise != nullptr ? *launch.noise_strength : 0.0f};
  }
  const float* noise_plane(int64_t p) const {
    return launch.noise != nullptr ? launch.noise + (p / launch.channels) * launch.noise_batch_stride : zeros;
  }
  float* out_plane(int64_t p) const { return static_cast<float*>(launch.out) + p * launch.plane_elements; }
};

SG2_INLINE_IN_CLONES void forward_planes_at_this_level(const EpilogueJob& job, int64_t begin, int64_t end) {
  const ActivationParams a = job.a;  // a copy: no store below can change it, so the loops vectorise
  const int64_t n = job.launch.plane_elements;
  for (int64_t p = begin; p < end; ++p) {
    const EpiloguePlane plane = job.plane(p);
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

template <auto PlanesAtThisLevel>
void run_planes(const EpilogueJob& job) {
  constexpr int64_t kGrainElements = 16384;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, job.launch.plane_elements));
  at::parallel_for(0, job.launch.planes, grain, [&](int64_t begin, int64_t end) {
    cpu::run_at_cpu_level<PlanesAtThisLevel>(job, begin, end);
  });
}

// The job of a call, and the zeros its loops read in place of the noise where there is none.
std::pair<EpilogueJob, at::Tensor> epilogue_job(const EpilogueTensors& t, const ActivationParams& a) {
  const at::Tensor zeros = t.noise.defined() ? at::Tensor() : at::zeros({t.x.size(2) * t.x.size(3)});
  return {EpilogueJob{epilogue_launch(t), a, zeros.defined() ? zeros.data_ptr<float>() : nullptr}, zeros};
}

}  // namespace

at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const ActivationParams& a) {
  at::Tensor y = at::empty_like(t.x);
  if (t.x.numel() == 0) return y;
  auto [job, zeros] = epilogue_job(t, a);
  job.launch.out = y.data_ptr();
  run_planes<forward_planes_at_this_level>(job);
  return y;
}

EpilogueGradient conv_epilogue_grad(const at::Tensor& dy_in, const at::Tensor& y, const EpilogueTensors& t,
                                    const ActivationParams& a) {
  const at::Tensor dy = laid_out_like(dy_in, y);
  EpilogueGradient grad{at::empty_like(t.x), at::zeros({t.x.size(0), t.x.size(1), 3}, t.x.options())};
  if (t.x.numel() == 0) return grad;
  auto [job, zeros] = epilogue_job(t, a);
  job.launch.dy = dy.data_ptr();
  job.launch.y = y.data_ptr();
  job.launch.out = grad.dx.data_ptr();
  job.launch.sums = grad.plane_sums.data_ptr<float>();
  run_planes<gradient_planes_at_this_level>(job);
  return grad;
}

}  // namespace sg2::nn::kernels::host
