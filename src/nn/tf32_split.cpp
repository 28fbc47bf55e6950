#include "sg2/nn/tf32_split.h"

#include "sg2/core/error.h"

#include <ATen/Context.h>

#include <atomic>
#include <cstdint>

namespace sg2::nn::ops {

namespace {

std::atomic<Tf32SplitDevices> g_tf32_split{Tf32SplitDevices::None};

// float32's 13 low mantissa bits, the ones TF32 drops.
constexpr int32_t kTf32Mask = ~int32_t{0x1FFF};

// TF32 allowed in cuDNN's convolutions while it lives, the setting before it back after.
class Tf32ConvolutionsScope {
 public:
  Tf32ConvolutionsScope() : before_(at::globalContext().allowTF32CuDNN()) {
    at::globalContext().setAllowTF32CuDNN(true);
  }
  ~Tf32ConvolutionsScope() { at::globalContext().setAllowTF32CuDNN(before_); }
  Tf32ConvolutionsScope(const Tf32ConvolutionsScope&) = delete;
  Tf32ConvolutionsScope& operator=(const Tf32ConvolutionsScope&) = delete;

 private:
  bool before_;
};

bool splits(const at::Tensor& a, const at::Tensor& b) {
  const Tf32SplitDevices devices = g_tf32_split;
  if (devices == Tf32SplitDevices::None || a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat) return false;
  if (devices == Tf32SplitDevices::Cuda && !a.is_cuda()) return false;
  return !(at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad()));
}

}  // namespace

void set_tf32_split(Tf32SplitDevices devices) { g_tf32_split = devices; }

Tf32SplitDevices tf32_split_devices() { return g_tf32_split; }

Tf32SplitDevices parse_float32_convolutions(const std::string& name) {
  if (name == "ieee") return Tf32SplitDevices::None;
  SG2_CHECK(name == "3xtf32", "run.float32_convolutions: expected ieee or 3xtf32, got '{}'", name);
  return Tf32SplitDevices::Cuda;
}

std::pair<at::Tensor, at::Tensor> split_tf32(const at::Tensor& a) {
  SG2_CHECK(a.scalar_type() == at::kFloat, "split_tf32: expected float32, got {}", c10::toString(a.scalar_type()));
  at::Tensor hi = at::bitwise_and(a.view(at::kInt), kTf32Mask).view(at::kFloat);  // a's layout
  at::Tensor lo = a - hi;
  return {std::move(hi), std::move(lo)};
}

at::Tensor bilinear_in_tf32_passes(const at::Tensor& a, const at::Tensor& b, const Bilinear& f) {
  if (!splits(a, b)) return f(a, b);
  const auto [a_hi, a_lo] = split_tf32(a);
  const auto [b_hi, b_lo] = split_tf32(b);
  const Tf32ConvolutionsScope tf32;
  at::Tensor small = f(a_hi, b_lo).add_(f(a_lo, b_hi));  // the small terms first, then the large one
  return f(a_hi, b_hi).add_(small);
}

}  // namespace sg2::nn::ops
