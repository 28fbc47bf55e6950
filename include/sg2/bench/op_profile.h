#pragma once
// Where the time goes: times every top-level LibTorch op and autograd node by name through
// RecordFunction callbacks (nested ops are counted in their parent) and folds the names into op
// families: convolution, FIR resampling, bias + activation, matmul, elementwise, ... Asked to, it
// also counts every op's calls, the host's share of a GPU step (at a lock and two map updates per
// call, which the times then include).

#include <ATen/record_function.h>

#include <map>
#include <mutex>
#include <string>

namespace sg2::bench {

class OpProfile {
 public:
  explicit OpProfile(bool count_calls = false);  // starts recording (one profile at a time)
  ~OpProfile();  // stops
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  std::map<std::string, double> seconds_by_op() const;
  std::map<std::string, double> seconds_by_family() const;
  // Every op's calls, nested ones included: the host's dispatches (on a GPU, most launch a kernel);
  // empty unless constructed with count_calls.
  std::map<std::string, int64_t> calls_by_op() const;
  // The same calls, counted under the top-level op or autograd node they ran in.
  std::map<std::string, int64_t> calls_by_top_level_op() const;
  static std::string family_of(const std::string& op_name);

 private:
  at::CallbackHandle handle_;
};

}  // namespace sg2::bench
