// CPU kernel for upfirdn2d (cpu_kernels.h): one pass per output row, vectorised by the compiler
// through stride-specialised inner loops, parallel over image planes, compiled once per CPU level
// (sg2/core/cpu_level.h).
#include "cpu_kernels.h"

#include "sg2/core/cpu_level.h"

#include <ATen/Parallel.h>

#include <numeric>
#include <vector>

namespace sg2::ops::kernels::host {

namespace {

// Output positions x = x_start + j * x_step that read input src_start + j * src_step (j < count),
// for one filter tap along one axis: the upsampled, padded coordinate v = x * down + tap - pad0
// must land on an input sample (v >= 0, v < in_len * up, v divisible by up).
struct TapRun {
  int64_t x_start = 0, x_step = 1, src_start = 0, src_step = 1, count = 0;
};

TapRun tap_run(int64_t tap, int64_t up, int64_t down, int64_t pad0, int64_t in_len, int64_t out_len) {
  TapRun run;
  run.x_step = up / std::gcd(up, down);
  run.src_step = down * run.x_step / up;
  // Smallest x >= 0 with v >= 0, then advance to the first x whose v is divisible by up.
  int64_t x = std::max<int64_t>(0, (pad0 - tap + down - 1) / down);
  int64_t tries = 0;
  while (x < out_len && ((x * down + tap - pad0) % up) != 0 && tries++ < up) ++x;
  if (x >= out_len || ((x * down + tap - pad0) % up) != 0) return run;
  run.x_start = x;
  run.src_start = (x * down + tap - pad0) / up;
  if (run.src_start >= in_len) return run;
  const int64_t by_output = (out_len - 1 - x) / run.x_step + 1;
  const int64_t by_input = (in_len - 1 - run.src_start) / run.src_step + 1;
  run.count = std::min(by_output, by_input);
  return run;
}

template <int XStep, int SrcStep>
SG2_INLINE_IN_CLONES void axpy_strided(float* __restrict out, const float* __restrict in, float w, int64_t count) {
  for (int64_t j = 0; j < count; ++j) out[j * XStep] += w * in[j * SrcStep];
}

SG2_INLINE_IN_CLONES void axpy_run(float* out_row, const float* in_row, float w, const TapRun& r) {
  float* out = out_row + r.x_start;
  const float* in = in_row + r.src_start;
  if (r.x_step == 1 && r.src_step == 1) return axpy_strided<1, 1>(out, in, w, r.count);
  if (r.x_step == 1 && r.src_step == 2) return axpy_strided<1, 2>(out, in, w, r.count);
  if (r.x_step == 2 && r.src_step == 1) return axpy_strided<2, 1>(out, in, w, r.count);
  for (int64_t j = 0; j < r.count; ++j) out[j * r.x_step] += w * in[j * r.src_step];
}

// No upsampling (the common case): copy the plane into a zero-padded scratch buffer, then every
// output row is a dense sum of kh x kw shifted rows, one vectorised pass per tap, no bounds checks.
struct Plane {
  const float* data;
  int64_t height, width, row_stride;
};

// out_row[ox] += sum_kx taps[kx] * row[ox * down + kx]; compile-time DOWN and KW (0: run time).
template <int DOWN, int KW>
SG2_INLINE_IN_CLONES void fir_row(float* __restrict out_row, const float* __restrict row, const float* __restrict taps,
                    int64_t out_w, int64_t down_runtime, int64_t kw_runtime) {
  const int64_t down = DOWN > 0 ? DOWN : down_runtime, kw = KW > 0 ? KW : kw_runtime;
  for (int64_t ox = 0; ox < out_w; ++ox) {
    float sum = 0.0f;
    for (int64_t kx = 0; kx < kw; ++kx) sum += taps[kx] * row[ox * down + kx];
    out_row[ox] += sum;
  }
}

template <int DOWN, int KW>
SG2_INLINE_IN_CLONES void fir_rows(const float* scratch, int64_t padded_w, float* out, int64_t out_h, int64_t out_w,
                     const float* g, int64_t kh, int64_t kw, int64_t down) {
  for (int64_t oy = 0; oy < out_h; ++oy) {
    for (int64_t ky = 0; ky < kh; ++ky) {
      fir_row<DOWN, KW>(out + oy * out_w, scratch + (oy * down + ky) * padded_w, g + ky * kw, out_w, down, kw);
    }
  }
}

SG2_INLINE_IN_CLONES void fir_plane_no_up(const Plane& in, float* out, int64_t out_h, int64_t out_w, const float* g, int64_t kh,
                     int64_t kw, int64_t down, const ops::Padding& pad, float* scratch) {
  const auto [px0, px1, py0, py1] = pad;
  const int64_t padded_h = in.height + py0 + py1, padded_w = in.width + px0 + px1;
  std::fill(scratch, scratch + padded_h * padded_w, 0.0f);
  const int64_t x_begin = std::max<int64_t>(0, -px0), x_end = std::min(in.width, padded_w - px0);
  for (int64_t y = std::max<int64_t>(0, -py0); y < std::min(in.height, padded_h - py0) && x_end > x_begin; ++y) {
    std::copy(in.data + y * in.row_stride + x_begin, in.data + y * in.row_stride + x_end,
              scratch + (y + py0) * padded_w + x_begin + px0);
  }
  if (down == 1 && kw == 4) return fir_rows<1, 4>(scratch, padded_w, out, out_h, out_w, g, kh, kw, down);
  if (down == 2 && kw == 4) return fir_rows<2, 4>(scratch, padded_w, out, out_h, out_w, g, kh, kw, down);
  fir_rows<0, 0>(scratch, padded_w, out, out_h, out_w, g, kh, kw, down);
}

// One call's planes: x [N, C, in_h, in_w] (rows contiguous) -> y [N, C, out_h, out_w] (contiguous).
struct PlaneJob {
  const float* in;
  int64_t channels, in_h, in_w, stride_n, stride_c, stride_y;
  float* out;
  int64_t out_h, out_w;
  const float* taps;  // [fh, fw], correlation order, gain applied
  int64_t fh, fw;
  ops::FirParams p;
  std::vector<TapRun> runs_x;  // per column tap, for up > 1
};

// Upsampling: every tap of every output row adds a strided run of one input row.
SG2_INLINE_IN_CLONES void fir_plane_up(const PlaneJob& job, const float* in_plane, float* out_plane) {
  const ops::FirParams& p = job.p;
  for (int64_t oy = 0; oy < job.out_h; ++oy) {
    float* out_row = out_plane + oy * job.out_w;
    for (int64_t ky = 0; ky < job.fh; ++ky) {
      const int64_t vy = oy * p.down + ky - p.padding[2];  // row in upsampled coordinates
      if (vy < 0 || vy >= job.in_h * p.up || vy % p.up != 0) continue;
      const float* in_row = in_plane + (vy / p.up) * job.stride_y;
      for (int64_t kx = 0; kx < job.fw; ++kx) {
        axpy_run(out_row, in_row, job.taps[ky * job.fw + kx], job.runs_x[static_cast<size_t>(kx)]);
      }
    }
  }
}

SG2_INLINE_IN_CLONES void run_planes_at_this_level(const PlaneJob& job, int64_t begin, int64_t end) {
  const ops::Padding& pad = job.p.padding;
  std::vector<float> scratch;
  if (job.p.up == 1) scratch.resize(static_cast<size_t>((job.in_h + pad[2] + pad[3]) * (job.in_w + pad[0] + pad[1])));
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* in_plane = job.in + (plane / job.channels) * job.stride_n + (plane % job.channels) * job.stride_c;
    float* out_plane = job.out + plane * job.out_h * job.out_w;
    if (job.p.up == 1) {
      fir_plane_no_up(Plane{in_plane, job.in_h, job.in_w, job.stride_y}, out_plane, job.out_h, job.out_w, job.taps,
                      job.fh, job.fw, job.p.down, pad, scratch.data());
    } else {
      fir_plane_up(job, in_plane, out_plane);
    }
  }
}

}  // namespace

at::Tensor upfirdn2d_forward(const at::Tensor& x_in, const at::Tensor& f_in, const ops::FirParams& p, int64_t out_h,
                             int64_t out_w) {
  // Rows must be contiguous; planes and rows may be strided (e.g. a cropped view).
  const at::Tensor x = x_in.stride(3) == 1 ? x_in : x_in.contiguous();
  const int64_t channels = x.size(1), planes = x.size(0) * x.size(1), in_h = x.size(2), in_w = x.size(3);
  const int64_t stride_n = x.stride(0), stride_c = x.stride(1), stride_y = x.stride(2);
  const int64_t fh = f_in.size(0), fw = f_in.size(1);
  const int64_t px0 = p.padding[0];

  // Correlation taps: the filter flipped (true convolution) unless flip_filter, times the gain.
  at::Tensor taps = (f_in.to(at::kCPU, at::kFloat) * p.gain);
  if (!p.flip_filter) taps = taps.flip({0, 1});
  taps = taps.contiguous();
  const float* g = taps.data_ptr<float>();
  std::vector<TapRun> runs_x;
  for (int64_t kx = 0; kx < fw; ++kx) runs_x.push_back(tap_run(kx, p.up, p.down, px0, in_w, out_w));

  at::Tensor y = at::zeros({x.size(0), x.size(1), out_h, out_w}, x.options());
  const PlaneJob job{x.data_ptr<float>(), channels, in_h, in_w, stride_n, stride_c, stride_y, y.data_ptr<float>(),
                     out_h, out_w, g, fh, fw, p, std::move(runs_x)};
  at::parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
    cpu::run_at_cpu_level<run_planes_at_this_level>(job, begin, end);
  });
  return ops::keeps_channels_last(y, x_in);
}

}  // namespace sg2::ops::kernels::host
