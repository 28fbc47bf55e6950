// Gloo from LibTorch (c10d::ProcessGroupGloo): the CPU backend of Env launches. Collectives run on
// the collective thread like MPI's, so the code path and the overlap are the same.
#include "backends.h"

#include "sg2/core/error.h"

#include "sg2/core/system.h"
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>

namespace sg2::dist {

namespace {

// The rendezvous as the c10d::Store ProcessGroupGloo exchanges its addresses through.
class RendezvousStore final : public c10d::Store {
 public:
  explicit RendezvousStore(std::shared_ptr<Rendezvous> rendezvous)
      : c10d::Store(rendezvous->timeout()), rendezvous_(std::move(rendezvous)) {}
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    rendezvous_->set(key, std::string(value.begin(), value.end()));
  }
  std::vector<uint8_t> get(const std::string& key) override {
    const std::string value = rendezvous_->get(key);
    return std::vector<uint8_t>(value.begin(), value.end());
  }
  int64_t add(const std::string& key, int64_t value) override { return rendezvous_->add(key, value); }
  bool deleteKey(const std::string& key) override { return rendezvous_->delete_key(key); }
  bool check(const std::vector<std::string>& keys) override { return rendezvous_->check(keys); }
  int64_t getNumKeys() override { return rendezvous_->num_keys(); }
  void wait(const std::vector<std::string>& keys) override { rendezvous_->wait(keys, getTimeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    rendezvous_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<Rendezvous> rendezvous_;
};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const World& world, const std::shared_ptr<Rendezvous>& store, double timeout_seconds)
      : Communicator(world), store_(store) {
    auto options = c10d::ProcessGroupGloo::Options::create(
        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    options->devices.push_back(interface ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                         : c10d::ProcessGroupGloo::createDefaultDevice());
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<RendezvousStore>(store), world.rank,
                                                         world.size, options);
  }
  ~GlooCommunicator() override { thread_.reset(); }
  std::string backend() const override { return "gloo"; }
  at::Device device() const override { return at::Device(at::kCPU); }

  std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor> tensors, ReduceOp op) override {
    check_allreduce_args(tensors, op, *this);
    return thread_->submit([this, tensors = std::move(tensors), op]() mutable {
      for (auto& t : tensors) {
        std::vector<at::Tensor> one{t};
        finish(group_->allreduce(one, c10d::AllreduceOptions{}), "allreduce");
        if (op == ReduceOp::Avg) t.div_(size());  // Gloo has no AVG
      }
    });
  }

  void broadcast(std::vector<at::Tensor> tensors, int root) override {
    check_contiguous(tensors, *this, "broadcast");
    thread_->run([&] {
      c10d::BroadcastOptions options;
      options.rootRank = root;
      for (auto& t : tensors) {
        std::vector<at::Tensor> one{t};
        finish(group_->broadcast(one, options), "broadcast");
      }
    });
  }

  at::Tensor allgather(const at::Tensor& input) override {
    check_contiguous({input}, *this, "allgather");
    std::vector<at::Tensor> inputs{input};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < size(); ++r) outputs[0].push_back(at::empty_like(input));
    thread_->run([&] { finish(group_->allgather(outputs, inputs), "allgather"); });
    return at::stack(outputs[0]);
  }

  void barrier() override {
    thread_->run([&] { finish(group_->barrier(), "barrier"); });
  }

  // Gloo has no abort: this rank exits and the launcher ends the others (peers time out).
  void abort(const std::string& reason) noexcept override {}

 private:
  template <class WorkPtr>
  void finish(const WorkPtr& work, const char* op) {
    try {
      work->wait();
    } catch (const std::exception& e) {
      SG2_FAIL("gloo {} failed on host {} rank {} of {}: {}", op, hostname(), rank(), size(), e.what());
    }
  }

  std::shared_ptr<Rendezvous> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::unique_ptr<CollectiveThread> thread_ = std::make_unique<CollectiveThread>();
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const World& world, const std::shared_ptr<Rendezvous>& store,
                                                     double timeout_seconds) {
  return std::make_unique<GlooCommunicator>(world, store, timeout_seconds);
}

}  // namespace sg2::dist
