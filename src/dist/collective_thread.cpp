#include "backends.h"

#include "sg2/core/error.h"

#include <exception>
#include <cstring>
#include <future>

namespace sg2::dist {

struct CollectiveThread::Job : Work {
  std::function<void()> body;
  std::promise<void> done;
  std::shared_future<void> result = done.get_future().share();
  double seconds = 0;
  void wait() override { result.get(); }
  double busy_seconds() const override { return seconds; }
};

CollectiveThread::CollectiveThread() : thread_([this] { loop(); }) {}

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
    const auto start = std::chrono::steady_clock::now();
    try {
      job->body();
      job->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      job->done.set_value();
    } catch (...) {
      job->done.set_exception(std::current_exception());
    }
  }
}

void check_contiguous(const std::vector<at::Tensor>& tensors, const Communicator& comm, const char* op) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    SG2_CHECK(tensors[i].defined() && tensors[i].is_contiguous(), "{} on rank {} ({}): tensor {} is {}", op,
              comm.rank(), comm.backend(), i, tensors[i].defined() ? "not contiguous" : "undefined");
    SG2_CHECK(tensors[i].device().type() == comm.device().type(),
              "{} on rank {}: tensor {} is on {}, the {} backend takes {} tensors", op, comm.rank(), i,
              tensors[i].device().str(), comm.backend(), comm.device().str());
  }
}

void check_avg_dtype(const at::Tensor& tensor, const Communicator& comm) {
  SG2_CHECK(at::isFloatingType(tensor.scalar_type()), "allreduce(avg) on rank {}: dtype {} is not floating point",
            comm.rank(), c10::toString(tensor.scalar_type()));
}

bool Communicator::any(bool flag) {
  at::Tensor value = at::full({1}, flag ? 1 : 0, at::TensorOptions().dtype(at::kInt).device(device()));
  allreduce({value}, ReduceOp::Sum);
  return value.item<int>() > 0;
}

std::string Communicator::broadcast_bytes(const std::string& bytes, int root) {
  const auto on_device = [this](at::ScalarType dtype) { return at::TensorOptions().dtype(dtype).device(device()); };
  at::Tensor length = at::full({1}, static_cast<int64_t>(bytes.size()), on_device(at::kLong));
  broadcast({length}, root);
  const int64_t n = length.cpu().item<int64_t>();
  at::Tensor data = at::zeros({std::max<int64_t>(n, 1)}, at::TensorOptions().dtype(at::kByte));
  if (rank() == root) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  data = data.to(device());
  broadcast({data}, root);
  data = data.cpu();
  return std::string(static_cast<const char*>(data.data_ptr()), static_cast<size_t>(n));
}

}  // namespace sg2::dist
