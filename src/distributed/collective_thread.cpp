#include "backends.h"

#include "sg2/core/error.h"
#include "sg2/core/timer.h"

#include <atomic>
#include <exception>
#include <future>

namespace sg2::dist {

struct CollectiveThread::Job : Work {
  std::function<void()> body;
  std::promise<void> done;
  std::shared_future<void> result = done.get_future().share();
  std::atomic<bool> finished{false};  // read by the watchdog
  double seconds = 0;
  void wait() override { result.get(); }
  double busy_seconds() const override { return seconds; }
};

CollectiveThread::CollectiveThread(CollectiveWatchdog* watchdog, std::string what)
    : watchdog_(watchdog), what_(std::move(what)), thread_([this] { loop(); }) {}

CollectiveThread::~CollectiveThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

std::shared_ptr<Work> CollectiveThread::submit(std::function<void()> body) {
  auto job = std::make_shared<Job>();
  job->body = std::move(body);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
    ++submitted_;
    if (watchdog_ != nullptr) {
      watchdog_->watch(fmt::format("{} #{}", what_, submitted_), [job] { return job->finished.load(); });
    }
  }
  ready_.notify_one();
  return job;
}

void CollectiveThread::loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const Stopwatch watch;
    try {
      job->body();
      job->seconds = watch.seconds();
      job->done.set_value();
    } catch (...) {
      job->done.set_exception(std::current_exception());
    }
    job->finished = true;
  }
}

}  // namespace sg2::dist
