#include "sg2/core/progress.h"

#include "sg2/core/system.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace sg2 {

ProgressMeter::ProgressMeter(std::string label, int64_t total, std::string unit, bool enabled,
                             double log_interval_seconds)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(std::max<int64_t>(total, 1)),
      enabled_(enabled),
      interactive_(enabled && isatty(STDERR_FILENO) == 1),
      log_interval_(log_interval_seconds) {}

ProgressMeter::~ProgressMeter() {
  if (!finished_ && interactive_ && printed_) std::fputs("\n", stderr);
}

std::string ProgressMeter::render(const std::string& label, int64_t done, int64_t total, const std::string& unit,
                                  double elapsed_seconds, int bar_width) {
  const double fraction = std::clamp(static_cast<double>(done) / static_cast<double>(std::max<int64_t>(total, 1)), 0.0, 1.0);
  const int filled = static_cast<int>(fraction * bar_width);
  const double rate = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0.0;
  const std::string eta = rate > 0 ? format_duration(static_cast<double>(total - done) / rate) : std::string("?");
  return fmt::format("{} [{}{}] {:3.0f}% {}/{} {} {:.1f} {}/s ETA {}", label, std::string(filled, '#'),
                     std::string(bar_width - filled, '.'), fraction * 100, done, total, unit, rate, unit, eta);
}

void ProgressMeter::update(int64_t done) {
  done_ = done;
  if (!enabled_) return;
  const double now = clock_.seconds();
  if (interactive_) {
    if (now - last_print_ < 0.2 && (done < total_ || !printed_)) return;
    std::fprintf(stderr, "\r%s\x1b[K", render(label_, done, total_, unit_, now).c_str());
    std::fflush(stderr);
  } else {
    if (now - last_print_ < log_interval_) return;
    spdlog::info(render(label_, done, total_, unit_, now));
  }
  last_print_ = now;
  printed_ = true;
}

void ProgressMeter::finish() {
  if (finished_) return;
  finished_ = true;
  if (!enabled_ || !printed_) return;  // work too short to have shown progress says nothing
  if (interactive_) std::fputs("\n", stderr);
  spdlog::info("{}: {} {} in {}", label_, done_, unit_, format_duration(clock_.seconds()));
}

std::function<void(int64_t, int64_t)> meter_reporter(std::optional<ProgressMeter>& meter, std::string label,
                                                     std::string unit) {
  return [&meter, label = std::move(label), unit = std::move(unit)](int64_t done, int64_t total) {
    if (!meter) meter.emplace(label, total, unit);
    meter->update(done);
  };
}

}  // namespace sg2
