// CPU kernel for bias_act (cpu_kernels.h): y = clamp(act(x + b) * gain) in one pass over x's memory
// as [outer, C, inner] (channel_layout.h: contiguous or channels_last, kept in y), and its gradient
// dy * slope(y), with the per-element arithmetic the CUDA kernels use (bias_act_elements.h). The
// loops are written for the auto-vectoriser and compiled once per CPU level (sg2/core/cpu_level.h).
#include "channel_layout.h"
#include "cpu_kernels.h"
#include "sg2/core/cpu_level.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace sg2::nn::kernels::host {

namespace {

// One call's memory in runs of run_length elements (the last may be shorter), for parallel_for:
// NCHW planes with one bias each, whole channels_last pixels with a bias per element, or, for the
// gradient, stretches of flat memory.
struct BiasActJob {
  const float* in;     // forward: x; gradient: dy
  const float* other;  // forward: the bias, [channels] or [run_length] per element; gradient: y
  float* out;
  int64_t numel, channels, run_length;
  bool gradient, bias_per_element;
  ActivationParams a;

  int64_t runs() const { return (numel + run_length - 1) / run_length; }
};

SG2_INLINE_IN_CLONES void run_range_at_this_level(const BiasActJob& job, int64_t begin, int64_t end) {
  const ActivationParams a = job.a;  // a copy: no store below can change it, so the loops vectorise
  for (int64_t run = begin; run < end; ++run) {
    const int64_t offset = run * job.run_length, n = std::min(job.run_length, job.numel - offset);
    const float* in = job.in + offset;
    float* out = job.out + offset;
    if (job.gradient) {
      const float* y = job.other + offset;
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] * activation_slope(y[i], a);
    } else if (job.bias_per_element) {
      const float* bias = job.other;
      for (int64_t i = 0; i < n; ++i) out[i] = activate(in[i] + bias[i], a);
    } else {
      const float bias = job.other[run % job.channels];
      for (int64_t i = 0; i < n; ++i) out[i] = activate(in[i] + bias, a);
    }
  }
}

SG2_TARGET_AVX512 void run_range_avx512(const BiasActJob& job, int64_t begin, int64_t end) {
  run_range_at_this_level(job, begin, end);
}
SG2_TARGET_AVX2 void run_range_avx2(const BiasActJob& job, int64_t begin, int64_t end) {
  run_range_at_this_level(job, begin, end);
}
void run_range_baseline(const BiasActJob& job, int64_t begin, int64_t end) {
  run_range_at_this_level(job, begin, end);
}

void run(const BiasActJob& job) {
  constexpr int64_t kGrainElements = 16384;
  at::parallel_for(0, job.runs(), std::max<int64_t>(1, kGrainElements / job.run_length), [&](int64_t begin, int64_t end) {
    switch (cpu::cpu_level()) {
      case cpu::Level::Avx512: return run_range_avx512(job, begin, end);
      case cpu::Level::Avx2: return run_range_avx2(job, begin, end);
      case cpu::Level::Baseline: return run_range_baseline(job, begin, end);
    }
  });
}

}  // namespace

at::Tensor bias_act_forward(const at::Tensor& x_in, const at::Tensor& b_in, int64_t dim, const ActivationParams& a) {
  const at::Tensor x = dense(x_in);
  const ChannelLayout l = channel_layout(x, dim);
  check_bias(b_in, x, dim, l);
  if (x.numel() == 0) return at::empty_like(x);
  const at::Tensor b = b_in.defined() ? b_in.contiguous() : at::zeros({l.channels}, x.options());
  at::Tensor y = at::empty_like(x);  // x's layout
  if (l.inner > 1) {
    run({x.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), x.numel(), l.channels, l.inner, false, false,
         a});
    return y;
  }
  // The channels lie side by side (channels_last pixels, fully connected rows): runs of whole pixels,
  // about 1024 elements, against the bias repeated as often.
  const int64_t pixels_per_run = std::max<int64_t>(1, 1024 / l.channels);
  const at::Tensor bias_run = b.repeat({pixels_per_run});
  run({x.data_ptr<float>(), bias_run.data_ptr<float>(), y.data_ptr<float>(), x.numel(), l.channels,
       bias_run.numel(), false, true, a});
  return y;
}

at::Tensor bias_act_grad(const at::Tensor& dy_in, const at::Tensor& y_in, const ActivationParams& a) {
  const at::Tensor y = dense(y_in), dy = laid_out_like(dy_in, y);
  at::Tensor dx = at::empty_like(y);
  if (y.numel() == 0) return dx;
  run({dy.data_ptr<float>(), y.data_ptr<float>(), dx.data_ptr<float>(), y.numel(), 1, 4096, true, false, a});
  return dx;
}

}  // namespace sg2::nn::kernels::host
