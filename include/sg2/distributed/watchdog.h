#pragma once
// Watches a backend's collectives from a thread of its own. A collective that has not completed
// within the timeout, or an error the communication library reports asynchronously, ends the job
// through on_failure (called once, from the watchdog thread), also while the training thread is
// blocked waiting for that collective (a device-to-host copy after a NCCL allreduce never returns
// when a peer died or stalls). The NCCL backend aborts its communicator, logs the reason naming the
// rank and host, and ends every rank (MPI_Abort, or exit so the launcher ends the others).
//
// The watchdog's own calls can block too (a CUDA event query the driver holds while another thread's
// cudaFree waits for a stalled kernel; an abort that waits for that kernel): a monitor thread that
// calls nothing of the library's ends the job through on_stuck when the watchdog's loop has not come
// round for twice the timeout (PyTorch's NCCL heartbeat monitor does the same).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sg2::dist {

struct WatchdogOptions {
  double timeout_seconds = 600;  // dist.timeout
  double poll_seconds = 0.1;
  std::function<void()> thread_setup;             // run first in the watchdog thread (e.g. cudaSetDevice)
  std::function<std::string()> async_error;       // the library's pending error, "" when none
  std::function<void(const std::string& reason)> on_failure;
  std::function<void(const std::string& reason)> on_stuck;  // unset: on_failure
};

class CollectiveWatchdog {
 public:
  explicit CollectiveWatchdog(WatchdogOptions options);
  ~CollectiveWatchdog();  // stops and joins the threads; pending collectives are forgotten
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // A collective just enqueued; is_done (called from the watchdog thread) says whether it completed.
  void watch(std::string what, std::function<bool()> is_done);
  size_t pending() const;
  bool failed() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::string what;
    std::function<bool()> is_done;
    Clock::time_point started;
  };
  void loop();
  std::string check_once();  // the failure found, "" if none
  void beat();               // the loop came round (when it ends, last_beat_ = max(): the monitor stops)
  void monitor();

  WatchdogOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> entries_;
  bool stopping_ = false;
  bool failed_ = false;
  std::atomic<Clock::rep> last_beat_;  // steady clock ticks; max(): the loop has ended
  std::mutex monitor_mutex_;            // not mutex_: the loop may hold that while it is stuck
  std::condition_variable monitor_wake_;
  bool monitor_stopping_ = false;
  std::thread thread_;
  std::thread monitor_thread_;
};

}  // namespace sg2::dist
