#include "sg2/data/prefetch_loader.h"
#include "sg2/core/timer.h"

namespace sg2::data {

PrefetchLoader::PrefetchLoader(std::shared_ptr<const BatchLoader> loader, const PrefetchOptions& options)
    : loader_(std::move(loader)), options_(options) {
  options_.prefetch = std::max(options_.prefetch, 1);
}

PrefetchLoader::~PrefetchLoader() { stop(); }

void PrefetchLoader::start(int64_t first_batch) {
  stop();
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = false;
  failure_ = nullptr;
  ready_.clear();
  next_ = first_batch;
  for (int w = 0; w < options_.workers; ++w) threads_.emplace_back([this, first_batch, w] { work(first_batch + w); });
}

void PrefetchLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
}

void PrefetchLoader::work(int64_t first) {
  for (int64_t batch = first;; batch += options_.workers) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || batch < next_ + options_.prefetch; });
      if (stopping_) return;
    }
    try {
      Batch loaded = loader_->load(batch);
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.emplace(batch, std::move(loaded));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_) failure_ = std::current_exception();
      stopping_ = true;
    }
    changed_.notify_all();
  }
}

void PrefetchLoader::prime(int64_t first_batch) {
  if (options_.workers <= 0) return;
  if (first_batch != next_ || threads_.empty()) start(first_batch);
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] {
    if (failure_ != nullptr) return true;
    for (int64_t batch = first_batch; batch < first_batch + options_.prefetch; ++batch) {
      if (ready_.count(batch) == 0) return false;
    }
    return true;
  });
}

Batch PrefetchLoader::get(int64_t batch_index) {
  if (options_.workers <= 0) return loader_->load(batch_index);
  if (batch_index != next_ || threads_.empty()) start(batch_index);
  const Stopwatch watch;
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return failure_ != nullptr || ready_.count(batch_index) > 0; });
  if (failure_ && !ready_.count(batch_index)) {
    std::exception_ptr failure = failure_;
    lock.unlock();
    stop();
    threads_.clear();
    std::rethrow_exception(failure);
  }
  Batch batch = std::move(ready_.at(batch_index));
  ready_.erase(batch_index);
  ++next_;
  lock.unlock();
  changed_.notify_all();
  last_wait_seconds_ = watch.seconds();
  return batch;
}

}  // namespace sg2::data
