// Transposed convolution, and its polyphase form for stride 2 on the CPU.
//
// 1-D with stride 2: y[2m + p] = sum_j x[m - j] w[p + 2j] for each output phase p in {0, 1}, with
// j < J_p = ceil((K - p) / 2). That is an ordinary correlation of x (padded J_p - 1 on the left)
// with the phase's taps reversed. In 2-D the four phases (row phase, column phase) are four small
// convolutions on a common (M x M) grid, M = ceil(L / 2), whose outputs pixel_shuffle interleaves
// into (2M x 2M); the first L = 2(H - 1) + K rows and columns are the result.
#include "sg2/core/error.h"
#include "sg2/ops/ops.h"

namespace sg2::ops {

at::Tensor transposed_conv2d_reference(const at::Tensor& x, const at::Tensor& w, int64_t stride,
                                       std::array<int64_t, 2> padding, int64_t groups) {
  const std::array<int64_t, 2> strides{stride, stride}, zeros{0, 0}, ones{1, 1};
  return at::conv_transpose2d(x, w, at::Tensor(), strides, padding, zeros, groups, ones);
}

namespace {

// Tap indices of phase p for a K-tap kernel, in correlation order: p + 2 (J - 1 - a), a < J.
at::Tensor phase_taps(int64_t p, int64_t taps, const at::Device& device) {
  const int64_t count = (taps - p + 1) / 2;
  std::vector<int64_t> index;
  for (int64_t a = 0; a < count; ++a) index.push_back(p + 2 * (count - 1 - a));
  return at::tensor(index, at::TensorOptions().dtype(at::kLong)).to(device);
}

at::Tensor polyphase_stride2(const at::Tensor& x, const at::Tensor& w) {
  const int64_t n = x.size(0), h = x.size(2), wd = x.size(3);
  const int64_t kh = w.size(2), kw = w.size(3), out_channels = w.size(1);
  const int64_t out_h = 2 * (h - 1) + kh, out_w = 2 * (wd - 1) + kw;
  const int64_t grid_h = (out_h + 1) / 2, grid_w = (out_w + 1) / 2;
  const at::Tensor weight = w.transpose(0, 1);  // [O, I, kh, kw]: y[o] = sum_i x[i] * w[i, o]
  std::vector<at::Tensor> phases;               // (0,0), (0,1), (1,0), (1,1): pixel_shuffle order
  for (int64_t py = 0; py < 2; ++py) {
    for (int64_t px = 0; px < 2; ++px) {
      const at::Tensor ty = phase_taps(py, kh, x.device()), tx = phase_taps(px, kw, x.device());
      const int64_t jy = ty.size(0), jx = tx.size(0);
      if (jy == 0 || jx == 0) {  // a 1-tap kernel has no odd phase
        phases.push_back(at::zeros({n, out_channels, grid_h, grid_w}, x.options()));
        continue;
      }
      const at::Tensor k = weight.index_select(2, ty).index_select(3, tx);  // [O, I, jy, jx]
      const at::Tensor padded = at::constant_pad_nd(x, {jx - 1, grid_w - wd, jy - 1, grid_h - h});
      phases.push_back(at::conv2d(padded, k));  // [N, O, grid_h, grid_w]
    }
  }
  const at::Tensor stacked = at::stack(phases, 2).reshape({n, 4 * out_channels, grid_h, grid_w});
  const at::Tensor y = at::pixel_shuffle(stacked, 2).narrow(2, 0, out_h).narrow(3, 0, out_w);  // [N, O, out_h, out_w]
  return keeps_channels_last(y, x);
}

}  // namespace

at::Tensor transposed_conv2d(const at::Tensor& x, const at::Tensor& w, int64_t stride, std::array<int64_t, 2> padding,
                             int64_t groups, const ComputeSettings& compute) {
  const bool polyphase = !compute.reference() && x.device().is_cpu() && stride == 2 && groups == 1 && padding[0] == 0 &&
                         padding[1] == 0;
  if (polyphase) return polyphase_stride2(x, w);
  return transposed_conv2d_reference(x, w, stride, padding, groups);
}

}  // namespace sg2::ops
