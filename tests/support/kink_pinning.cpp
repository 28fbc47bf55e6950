// Kink pinning for the parity checks (kink_pinning.h).
#include "kink_pinning.h"

#include "sg2/core/error.h"

#include <mutex>
#include <vector>

namespace sg2::test {

struct KinkPins::State {
  std::mutex mutex;
  std::vector<at::Tensor> sides;  // per recorded call: v > 0
  size_t next_call = 0;
  int64_t pinned = 0;
};

namespace {

// v with its near-ties (|v| <= band * max |v|) on the recorded sides `positive`, straight-through;
// counts the elements it moved into `pinned`.
at::Tensor pin(const at::Tensor& v, const at::Tensor& positive, double band, int64_t& pinned) {
  const at::Tensor magnitude = v.detach().abs();
  const at::Tensor tie = magnitude <= magnitude.max() * band;
  const at::Tensor flip = tie & ((v.detach() > 0) != positive);
  pinned += flip.sum().item<int64_t>();
  // Recorded side, the same magnitude (at least the smallest normal float, so 0 gets a side).
  const at::Tensor sided = at::where(positive, magnitude.clamp_min(1.1754944e-38), -magnitude);
  return v + (at::where(flip, sided, v.detach()) - v.detach());  // straight-through: d/dv = 1
}

}  // namespace

KinkPins::KinkPins() : state_(std::make_shared<State>()) {}

ops::PreActivationHook KinkPins::recorder() {
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->sides.clear();
  }
  return [state = state_](const at::Tensor& v) {
    const std::lock_guard<std::mutex> lock(state->mutex);
    state->sides.push_back((v > 0).detach());
    return v;
  };
}

ops::PreActivationHook KinkPins::replayer(double band) {
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->next_call = 0;
    state_->pinned = 0;
  }
  return [state = state_, band](const at::Tensor& v) {
    const std::lock_guard<std::mutex> lock(state->mutex);
    SG2_CHECK(state->next_call < state->sides.size(),
              "kink pinning: replay call {} has no recorded call ({} were recorded)", state->next_call,
              state->sides.size());
    const at::Tensor positive = state->sides[state->next_call].to(v.device());  // recorded on the CPU
    SG2_CHECK(positive.sizes() == v.sizes(), "kink pinning: replay call {} has shape {}, the recorded call {}",
              state->next_call, v.sizes(), positive.sizes());
    ++state->next_call;
    return pin(v, positive, band, state->pinned);
  };
}

int64_t KinkPins::pinned_count() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->pinned;
}

}  // namespace sg2::test
