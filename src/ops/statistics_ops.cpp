// The ops of the mapping network and the discriminator's epilogue that have no faster form:
// pixel norm and minibatch standard deviation.
#include "sg2/core/error.h"
#include "sg2/ops/ops.h"

namespace sg2::ops {

at::Tensor normalize_2nd_moment(const at::Tensor& x, int64_t dim) {
  return x * (x.square().mean(dim, /*keepdim=*/true) + 1e-8).rsqrt();
}

at::Tensor minibatch_stddev(const at::Tensor& x, int64_t group_size, int64_t num_channels) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t g = (group_size <= 0) ? n : std::min(group_size, n);
  const int64_t f = num_channels;
  SG2_CHECK(n % g == 0, "minibatch stddev: batch {} is not divisible by the group size {}", n, g);
  SG2_CHECK(c % f == 0, "minibatch stddev: {} channels are not divisible into {} groups", c, f);
  at::Tensor y = x.reshape({g, -1, f, c / f, h, w});  // [G, n, F, c, H, W]
  y = y - y.mean(0);                                   // subtract the group mean
  y = y.square().mean(0);                              // [n, F, c, H, W] variance over the group
  y = (y + 1e-8).sqrt();                               // stddev
  y = y.mean({2, 3, 4});                               // [n, F] average over channels and pixels
  y = y.reshape({-1, f, 1, 1});                        // [n, F, 1, 1]
  y = y.repeat({g, 1, h, w});                          // [N, F, H, W]
  return at::cat({x, y}, 1);                           // [N, C+F, H, W]
}

}  // namespace sg2::ops
