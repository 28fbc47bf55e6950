#include "sg2/nn/kink_pinning.h"

#include "sg2/core/error.h"

#include <atomic>
#include <mutex>
#include <vector>

namespace sg2::nn::ops {

namespace {

struct PinState {
  std::mutex mutex;
  double band = 1e-6;
  std::vector<at::Tensor> sides;  // per recorded call: v > 0
  size_t next_call = 0;
  int64_t pinned = 0;
};

std::atomic<KinkPinning> g_mode{KinkPinning::Off};

PinState& state() {
  static PinState s;
  return s;
}

}  // namespace

void set_kink_pinning(KinkPinning mode, double band) {
  PinState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (mode == KinkPinning::Record) s.sides.clear();
  s.next_call = 0;
  s.pinned = 0;
  s.band = band;
  g_mode = mode;
}

KinkPinning kink_pinning() { return g_mode; }

int64_t pinned_kink_count() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().pinned;
}

at::Tensor pin_kinks(const at::Tensor& v) {
  const KinkPinning mode = g_mode;
  if (mode == KinkPinning::Off) return v;
  PinState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (mode == KinkPinning::Record) {
    s.sides.push_back((v > 0).detach());
    return v;
  }
  SG2_CHECK(s.next_call < s.sides.size(), "kink pinning: replay call {} has no recorded call ({} were recorded)",
            s.next_call, s.sides.size());
  const at::Tensor positive = s.sides[s.next_call].to(v.device());  // recorded on the CPU, replayed on any device
  SG2_CHECK(positive.sizes() == v.sizes(), "kink pinning: replay call {} has shape {}, the recorded call {}",
            s.next_call, v.sizes(), positive.sizes());
  ++s.next_call;
  const at::Tensor magnitude = v.detach().abs();
  const at::Tensor tie = magnitude <= magnitude.max() * s.band;
  const at::Tensor flip = tie & ((v.detach() > 0) != positive);
  s.pinned += flip.sum().item<int64_t>();
  // Recorded side, the same magnitude (at least the smallest normal float, so 0 gets a side).
  const at::Tensor sided = at::where(positive, magnitude.clamp_min(1.1754944e-38), -magnitude);
  return v + (at::where(flip, sided, v.detach()) - v.detach());  // straight-through: d/dv = 1
}

}  // namespace sg2::nn::ops
