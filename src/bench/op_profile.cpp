#include "sg2/bench/op_profile.h"

#include "sg2/core/error.h"
#include "sg2/core/timer.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace sg2::bench {

namespace {

struct Timed : at::ObserverContext {
  Stopwatch watch;
};

std::mutex g_mutex;
std::map<std::string, double> g_seconds;
std::map<std::string, int64_t> g_calls;           // every op, nested ones included
std::map<std::string, int64_t> g_calls_under_top;  // the same, counted under their top-level op
std::atomic<bool> g_active{false};
std::atomic<bool> g_count_calls{false};  // the profile in force counts calls (its constructor's choice)
thread_local int t_depth = 0;
thread_local std::string t_top_level;  // the name of this thread's running top-level op

void count_call(const at::RecordFunction& fn) {
  if (t_depth == 0) t_top_level = fn.name();
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_calls[fn.name()];
  ++g_calls_under_top[t_top_level];
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (g_count_calls) count_call(fn);
  return (t_depth++ == 0) ? std::make_unique<Timed>() : nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  --t_depth;
  if (context == nullptr) return;
  const double seconds = static_cast<Timed*>(context)->watch.seconds();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_seconds[fn.name()] += seconds;
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

OpProfile::OpProfile(bool count_calls) {
  SG2_CHECK(!g_active.exchange(true), "only one OpProfile can record at a time");
  g_count_calls = count_calls;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_seconds.clear();
    g_calls.clear();
    g_calls_under_top.clear();
  }
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end));
}

OpProfile::~OpProfile() {
  at::removeCallback(handle_);
  g_active = false;
}

std::map<std::string, double> OpProfile::seconds_by_op() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_seconds;
}

std::map<std::string, int64_t> OpProfile::calls_by_op() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls;
}

std::map<std::string, int64_t> OpProfile::calls_by_top_level_op() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls_under_top;
}

std::string OpProfile::family_of(const std::string& op) {
  std::string name = op;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  // Autograd runs a custom Function's backward as "autograd::engine::evaluate_function: ...CppNode<...Function>".
  const bool backward = contains(name, "backward") || contains(name, "evaluate_function");
  const std::string suffix = backward ? " (backward)" : "";
  if (contains(name, "upfirdn")) return "FIR resampling" + suffix;
  if (contains(name, "bias_act") || contains(name, "biasact") || contains(name, "epilogue") ||
      contains(name, "leakyrelu") || contains(name, "leaky_relu")) {
    return "bias + activation" + suffix;  // the fused epilogue (bias, noise, lrelu) included, before "conv"
  }
  if (contains(name, "conv")) return "convolution" + suffix;
  if (contains(name, "mm") || contains(name, "matmul") || contains(name, "linear")) return "matmul" + suffix;
  if (contains(name, "foreach") || contains(name, "nan_to_num")) return "optimizer";
  if (contains(name, "rand") || contains(name, "normal")) return "random";
  if (contains(name, "lerp") || contains(name, "copy_")) return "copy / lerp";
  if (contains(name, "sum") || contains(name, "mean") || contains(name, "norm") || contains(name, "max")) {
    return "reduction" + suffix;
  }
  for (const char* movement : {"pad", "slice", "select", "view", "reshape", "cat", "repeat", "flip", "index",
                               "narrow", "split", "unbind", "stack", "expand", "permute", "transpose", "clone",
                               "contiguous", "unsqueeze", "squeeze", "to", "where"}) {
    if (contains(name, movement)) return "data movement" + suffix;
  }
  for (const char* elementwise : {"mul", "add", "div", "sub", "square", "sqrt", "rsqrt", "pow", "softplus", "sign",
                                  "neg", "exp", "log", "clamp", "relu", "fill", "zero"}) {
    if (contains(name, elementwise)) return "elementwise" + suffix;
  }
  return "other";
}

std::map<std::string, double> OpProfile::seconds_by_family() const {
  std::map<std::string, double> out;
  for (const auto& [op, seconds] : seconds_by_op()) out[family_of(op)] += seconds;
  return out;
}

}  // namespace sg2::bench
