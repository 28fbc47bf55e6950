#pragma once
// Progress of long work that is not a training tick (dataset creation, real statistics, metric
// evaluation, index building): on an interactive terminal a bar redrawn in place with count, rate
// and ETA; otherwise (logs, batch jobs) a plain log line every `log_interval` seconds. Disabled
// meters (other ranks) print nothing.

#include "sg2/core/timer.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace sg2 {

class ProgressMeter {
 public:
  ProgressMeter(std::string label, int64_t total, std::string unit, bool enabled = true,
                double log_interval_seconds = 10.0);
  ~ProgressMeter();  // finishes the line if finish() was not called

  void update(int64_t done);  // items done so far (monotonic)
  void finish();              // a final line with the total time

  // "[#######.....]  45% 2250/5000 img  210.3 img/s  ETA 13s"
  static std::string render(const std::string& label, int64_t done, int64_t total, const std::string& unit,
                            double elapsed_seconds, int bar_width = 24);

 private:
  std::string label_, unit_;
  int64_t total_, done_ = 0;
  bool enabled_, interactive_, finished_ = false, printed_ = false;
  double log_interval_, last_print_ = 0;
  Stopwatch clock_;
};

// A report(done, total) callback for work whose total its first report tells: the first call
// starts `meter` with that total, every call updates it (finish `meter` where it holds a value).
std::function<void(int64_t done, int64_t total)> meter_reporter(std::optional<ProgressMeter>& meter,
                                                                 std::string label, std::string unit);

}  // namespace sg2
