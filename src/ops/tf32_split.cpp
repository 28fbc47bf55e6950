#include "sg2/ops/tf32_split.h"

#include "sg2/core/error.h"

#include <ATen/Context.h>
#include <fmt/format.h>

#include <cstdint>

namespace sg2::ops {

namespace {

// float32's 13 low mantissa bits, the ones TF32 drops, and half of their range: added to a float's
// bits (sign and magnitude: the addition grows the magnitude, carrying into the exponent where it
// must), it rounds the magnitude to the nearest TF32 number, ties away from zero.
constexpr int32_t kTf32Mask = ~int32_t{0x1FFF};
constexpr int32_t kTf32Half = 0x1000;

bool splits(const at::Tensor& a, const at::Tensor& b, DeviceSet devices) {
  if (!covers(devices, a) || a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat) return false;
  return !(at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad()));
}

}  // namespace

CudnnTf32Scope::CudnnTf32Scope(bool allow)
    : ScopedSetting([] { return at::globalContext().allowTF32CuDNN(); },
                    [](bool on) { at::globalContext().setAllowTF32CuDNN(on); }, allow) {}

std::string tf32_split_warning(DeviceSet devices, int capability) {
  if (devices == DeviceSet::None || capability <= 0 || capability >= 80) return "";
  return fmt::format("run.float32_convolutions 3xtf32 on a GPU of compute capability {}.{}, which has no TF32: its "
                     "three passes run in float32, about three times the float32 convolutions' time (ieee is faster "
                     "there)",
                     capability / 10, capability % 10);
}

std::pair<at::Tensor, at::Tensor> split_tf32(const at::Tensor& a) {
  SG2_CHECK(a.scalar_type() == at::kFloat, "split_tf32: expected float32, got {}", c10::toString(a.scalar_type()));
  at::Tensor hi = at::bitwise_and(a.view(at::kInt) + kTf32Half, kTf32Mask).view(at::kFloat);  // a's layout
  at::Tensor lo = a - hi;
  return {std::move(hi), std::move(lo)};
}

at::Tensor bilinear_in_tf32_passes(const at::Tensor& a, const at::Tensor& b, DeviceSet devices, const Bilinear& f) {
  if (!splits(a, b, devices)) return f(a, b);
  const auto [a_hi, a_lo] = split_tf32(a);
  const auto [b_hi, b_lo] = split_tf32(b);
  const CudnnTf32Scope tf32(true);
  at::Tensor small = f(a_hi, b_lo).add_(f(a_lo, b_hi));  // the small terms first, then the large one
  return f(a_hi, b_hi).add_(small);
}

}  // namespace sg2::ops
