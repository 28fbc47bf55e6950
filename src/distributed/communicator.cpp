// What every backend shares: argument checks and the collectives built from the backend's own.
#include "backends.h"

#include "sg2/core/error.h"

#include <cstring>

namespace sg2::dist {

void check_contiguous(const std::vector<at::Tensor>& tensors, const Communicator& comm, const char* op) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    SG2_CHECK(tensors[i].defined() && tensors[i].is_contiguous(), "{} on rank {} ({}): tensor {} is {}", op,
              comm.rank(), comm.backend(), i, tensors[i].defined() ? "not contiguous" : "undefined");
    const at::Device here = tensors[i].device(), expected = comm.device();  // "cuda" alone: any GPU
    SG2_CHECK(here.type() == expected.type() && (!expected.has_index() || here.index() == expected.index()),
              "{} on rank {}: tensor {} is on {}, the {} backend takes {} tensors", op, comm.rank(), i,
              tensors[i].device().str(), comm.backend(), comm.device().str());
  }
}

void check_allreduce_args(const std::vector<at::Tensor>& tensors, ReduceOp op, const Communicator& comm) {
  check_contiguous(tensors, comm, "allreduce");
  if (op != ReduceOp::Avg) return;
  for (const auto& t : tensors) {
    SG2_CHECK(at::isFloatingType(t.scalar_type()), "allreduce(avg) on rank {}: dtype {} is not floating point",
              comm.rank(), c10::toString(t.scalar_type()));
  }
}

at::Tensor Communicator::sum_over_ranks(const at::Tensor& tensor) {
  at::Tensor summed = tensor.to(device(), tensor.scalar_type(), /*non_blocking=*/false, /*copy=*/true).contiguous();
  allreduce({summed}, ReduceOp::Sum);
  return summed;
}

int64_t Communicator::max_over_ranks(int64_t value) {
  if (size() == 1) return value;  // no tensor, no device round trip
  const at::Tensor mine = at::full({1}, value, at::TensorOptions().dtype(at::kLong).device(device()));
  return allgather(mine).max().item<int64_t>();
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
