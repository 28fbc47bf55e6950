#pragma once
// Batches decoded ahead by worker threads into a bounded queue (data.workers, data.prefetch).
// Worker w builds batches w, w + workers, ...; at most `prefetch` batches wait ahead of the consumer.
// get(k) returns this rank's slice of global batch k; asking for another batch than the next one
// (after a resume) restarts the workers there. A worker's error is rethrown by get().

#include "sg2/data/loader.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace sg2::data {

class PrefetchLoader {
 public:
  PrefetchLoader(std::shared_ptr<const BatchLoader> loader, const PrefetchOptions& options);
  ~PrefetchLoader();
  PrefetchLoader(const PrefetchLoader&) = delete;
  PrefetchLoader& operator=(const PrefetchLoader&) = delete;

  Batch get(int64_t batch_index);
  // Returns once batches first_batch, ... (the `prefetch` that may wait ahead) are decoded, the
  // workers (re)started there as get() would: a timed run then starts as a steady one does, not with
  // the restart's first decode (a worker's error waits for get()).
  void prime(int64_t first_batch);
  double last_wait_seconds() const { return last_wait_seconds_; }  // time get() blocked
  const BatchLoader& loader() const { return *loader_; }

 private:
  void start(int64_t first_batch);
  void stop();
  void work(int64_t first);  // builds batches first, first + workers, ...

  std::shared_ptr<const BatchLoader> loader_;
  PrefetchOptions options_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Batch> ready_;
  std::exception_ptr failure_;
  int64_t next_ = -1;  // the batch the consumer takes next
  bool stopping_ = false;
  double last_wait_seconds_ = 0;
};

}  // namespace sg2::data
