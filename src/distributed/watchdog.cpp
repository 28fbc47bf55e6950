#include "sg2/distributed/watchdog.h"

#include <fmt/format.h>

namespace sg2::dist {

CollectiveWatchdog::CollectiveWatchdog(WatchdogOptions options)
    : options_(std::move(options)),
      last_beat_(Clock::now().time_since_epoch().count()),
      thread_([this] { loop(); }),
      monitor_thread_([this] { monitor(); }) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  {
    std::lock_guard<std::mutex> lock(monitor_mutex_);
    monitor_stopping_ = true;
  }
  monitor_wake_.notify_all();
  monitor_thread_.join();
}

void CollectiveWatchdog::watch(std::string what, std::function<bool()> is_done) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({std::move(what), std::move(is_done), Clock::now()});
}

size_t CollectiveWatchdog::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

bool CollectiveWatchdog::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

// Completed collectives leave the queue; the oldest one still running is checked against the
// timeout (a collective waits for the ones before it, so the oldest is the one that stalls).
std::string CollectiveWatchdog::check_once() {
  if (options_.async_error) {
    const std::string error = options_.async_error();
    if (!error.empty()) return error;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  while (!entries_.empty() && entries_.front().is_done()) entries_.pop_front();
  if (entries_.empty()) return "";
  const Entry& oldest = entries_.front();
  const double waited = std::chrono::duration<double>(Clock::now() - oldest.started).count();
  if (waited <= options_.timeout_seconds) return "";
  return fmt::format("{} has not completed after {:.1f} s (dist.timeout = {} s): a rank died, stalls or runs "
                     "other collectives ({} collective(s) pending)",
                     oldest.what, waited, options_.timeout_seconds, entries_.size());
}

void CollectiveWatchdog::beat() { last_beat_ = Clock::now().time_since_epoch().count(); }

void CollectiveWatchdog::loop() {
  if (options_.thread_setup) options_.thread_setup();
  const auto poll = std::chrono::duration<double>(options_.poll_seconds);
  for (;;) {
    beat();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, poll, [this] { return stopping_; })) break;
    }
    const std::string failure = check_once();
    if (failure.empty()) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failed_ = true;
    }
    if (options_.on_failure) options_.on_failure(failure);
    break;
  }
  last_beat_ = Clock::time_point::max().time_since_epoch().count();
}

void CollectiveWatchdog::monitor() {
  const auto poll = std::chrono::duration<double>(options_.poll_seconds);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(monitor_mutex_);
      if (monitor_wake_.wait_for(lock, poll, [this] { return monitor_stopping_; })) return;
    }
    const Clock::time_point beat{Clock::duration(last_beat_.load())};
    if (beat == Clock::time_point::max()) return;
    const double silent = std::chrono::duration<double>(Clock::now() - beat).count();
    if (silent <= 2 * options_.timeout_seconds) continue;  // twice: room for its own on_failure
    const std::string reason = fmt::format(
        "the collective watchdog has been stuck for {:.1f} s (twice dist.timeout = {} s) in a call of its own (a "
        "CUDA or NCCL call that does not return): ending the job without calling the communication library again",
        silent, options_.timeout_seconds);
    const auto& end_job = options_.on_stuck ? options_.on_stuck : options_.on_failure;
    if (end_job) end_job(reason);
    return;
  }
}

}  // namespace sg2::dist
