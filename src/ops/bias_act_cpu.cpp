// CPU kernel for bias_act (cpu_kernels.h): y = clamp(act(x + b) * gain) in one pass over x's memory
// as [outer, C, inner] (channel_layout.h: contiguous or channels_last, kept in y), and its gradient
// dy * slope(y), with the per-element arithmetic the CUDA kernels use (bias_act_elements.h). The
// loops are written for the auto-vectoriser and compiled once per CPU level (sg2/core/cpu_level.h).
#include "channel_layout.h"
#include "cpu_kernels.h"
#include "sg2/core/cpu_level.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace sg2::ops::kernels::host {

namespace {

enum class Pass { Forward, Gradient };

// One call's memory in runs of run_length elements (the last may be shorter), for parallel_for:
// NCHW planes with one bias each, whole channels_last pixels with a bias per element, or, for the
// gradient, stretches of flat memory.
struct BiasActJob {
  Pass pass = Pass::Forward;
  const float* in = nullptr;    // forward: x; gradient: dy
  const float* bias = nullptr;  // forward: [channels], or [run_length] with bias_per_element
  const float* y = nullptr;     // gradient: the forward's output
  float* out = nullptr;
  int64_t numel = 0, channels = 1, run_length = 1;
  bool bias_per_element = false;
  ActivationParams a{};

  int64_t runs() const { return (numel + run_length - 1) / run_length; }
};

SG2_INLINE_IN_CLONES void run_range_at_this_level(const BiasActJob& job, int64_t begin, int64_t end) {
  const ActivationParams a = job.a;  // a copy: no store below can change it, so the loops vectorise
  for (int64_t run = begin; run < end; ++run) {
    const int64_t offset = run * job.run_length, n = std::min(job.run_length, job.numel - offset);
    const float* in = job.in + offset;
    float* out = job.out + offset;
    if (job.pass == Pass::Gradient) {
      const float* y = job.y + offset;
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] * activation_slope(y[i], a);
    } else if (job.bias_per_element) {
      const float* bias = job.bias;
      for (int64_t i = 0; i < n; ++i) out[i] = activate(in[i] + bias[i], a);
    } else {
      const float bias = job.bias[run % job.channels];
      for (int64_t i = 0; i < n; ++i) out[i] = activate(in[i] + bias, a);
    }
  }
}

void run(const BiasActJob& job) {
  constexpr int64_t kGrainElements = 16384;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / job.run_length);
  at::parallel_for(0, job.runs(), grain, [&](int64_t begin, int64_t end) {
    cpu::run_at_cpu_level<run_range_at_this_level>(job, begin, end);
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
  BiasActJob job;
  job.in = x.data_ptr<float>();
  job.out = y.data_ptr<float>();
  job.numel = x.numel();
  job.channels = l.channels;
  job.a = a;
  if (l.inner > 1) {
    job.bias = b.data_ptr<float>();
    job.run_length = l.inner;
    run(job);
    return y;
  }
  // The channels lie side by side (channels_last pixels, fully connected rows): runs of whole pixels,
  // about 1024 elements, against the bias repeated as often.
  const at::Tensor bias_run = b.repeat({std::max<int64_t>(1, 1024 / l.channels)});
  job.bias = bias_run.data_ptr<float>();
  job.run_length = bias_run.numel();
  job.bias_per_element = true;
  run(job);
  return y;
}

at::Tensor bias_act_grad(const at::Tensor& dy_in, const at::Tensor& y_in, const ActivationParams& a) {
  const at::Tensor y = dense(y_in), dy = laid_out_like(dy_in, y);
  at::Tensor dx = at::empty_like(y);
  if (y.numel() == 0) return dx;
  BiasActJob job;
  job.pass = Pass::Gradient;
  job.in = dy.data_ptr<float>();
  job.y = y.data_ptr<float>();
  job.out = dx.data_ptr<float>();
  job.numel = y.numel();
  job.run_length = 4096;
  job.a = a;
  run(job);
  return dx;
}

}  // namespace sg2::ops::kernels::host
