#pragma once
// Where the time goes: times every top-level LibTorch op and autograd node by name through
// RecordFunction callbacks (nested ops are counted in their parent) and folds the names into op
// families: convolution, FIR resampling, bias + activation, matmul, elementwise, ...

#include <ATen/record_function.h>

#include <map>
#include <mutex>
#include <string>

namespace sg2::cli {

class OpProfile {
 public:
  OpProfile();   // starts recording (one profile at a time)
  ~OpProfile();  // stops
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  std::map<std::string, double> seconds_by_op() const;
  std::map<std::string, double> seconds_by_family() const;
  static std::string family_of(const std::string& op_name);

 private:
  at::CallbackHandle handle_;
};

}  // namespace sg2::cli
