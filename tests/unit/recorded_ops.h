#pragma once
// The calls of named ops that LibTorch's dispatcher (or a RECORD_FUNCTION with inputs) sees while a
// RecordedOps lives, on any thread, with their inputs: what a training step hands an op, for tests
// that check it. One recorder at a time.

#include "sg2/core/error.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sg2::test {

struct OpCall {
  std::string op;
  std::vector<c10::IValue> inputs;  // tensors by reference: the very tensors the op received
};

class RecordedOps {
 public:
  explicit RecordedOps(std::vector<std::string> ops) : ops_(std::move(ops)) {
    std::lock_guard<std::mutex> lock(mutex());
    SG2_CHECK(active() == nullptr, "only one RecordedOps can record at a time");
    active() = this;
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_call).needsInputs(true));
  }
  ~RecordedOps() {
    at::removeCallback(handle_);
    std::lock_guard<std::mutex> lock(mutex());
    active() = nullptr;
  }
  RecordedOps(const RecordedOps&) = delete;
  RecordedOps& operator=(const RecordedOps&) = delete;

  // The calls since the last take (or the start), in order.
  std::vector<OpCall> take() {
    std::lock_guard<std::mutex> lock(mutex());
    return std::exchange(calls_, {});
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static RecordedOps*& active() {
    static RecordedOps* recorder = nullptr;
    return recorder;
  }
  static std::unique_ptr<at::ObserverContext> on_call(const at::RecordFunction& fn) {
    std::lock_guard<std::mutex> lock(mutex());
    RecordedOps* self = active();
    if (self == nullptr || std::find(self->ops_.begin(), self->ops_.end(), fn.name()) == self->ops_.end()) {
      return nullptr;
    }
    const auto inputs = fn.inputs();
    self->calls_.push_back({fn.name(), std::vector<c10::IValue>(inputs.begin(), inputs.end())});
    return nullptr;
  }

  std::vector<std::string> ops_;
  std::vector<OpCall> calls_;
  at::CallbackHandle handle_ = 0;
};

}  // namespace sg2::test
