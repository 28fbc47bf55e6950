// Local: a world of one process. Collectives are identities, so one code path serves every size.
#include "backends.h"

#include "sg2/core/error.h"

namespace sg2::dist {

namespace {

struct DoneWork final : Work {
  void wait() override {}
};

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(const World& world, const at::Device& device) : Communicator(world), device_(device) {
    SG2_CHECK(world.size == 1, "dist.backend = local needs a world of one process, this job has {}", world.size);
  }
  std::string backend() const override { return "local"; }
  at::Device device() const override { return device_; }
  std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor> tensors, ReduceOp op) override {
    check_allreduce_args(tensors, op, *this);
    return std::make_shared<DoneWork>();
  }
  void broadcast(std::vector<at::Tensor> tensors, int root) override { check_contiguous(tensors, *this, "broadcast"); }
  at::Tensor allgather(const at::Tensor& input) override { return input.unsqueeze(0).clone(); }
  void barrier() override {}
  void abort(const std::string&) noexcept override {}

 private:
  at::Device device_;
};

}  // namespace

std::unique_ptr<Communicator> local_communicator(const at::Device& device) {
  return std::make_unique<LocalCommunicator>(World{}, device);
}

std::unique_ptr<Communicator> make_local_communicator(const World& world, const at::Device& device) {
  return std::make_unique<LocalCommunicator>(world, device);
}

}  // namespace sg2::dist
