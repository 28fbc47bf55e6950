#include "sg2/dist/consistency.h"

#include "sg2/core/error.h"

namespace sg2::dist {

uint64_t tensor_hash(const at::Tensor& tensor) {
  const at::Tensor host = tensor.detach().cpu().contiguous();
  const auto* bytes = static_cast<const unsigned char*>(host.data_ptr());
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0, n = host.numel() * host.element_size(); i < n; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

void check_replicas_identical(Communicator& comm, const NamedTensors& tensors, const std::string& what) {
  if (comm.size() == 1) return;
  at::Tensor hashes = at::empty({static_cast<int64_t>(tensors.size())}, at::kLong);
  for (size_t i = 0; i < tensors.size(); ++i) hashes[i] = static_cast<int64_t>(tensor_hash(tensors[i].second));
  const at::Tensor all = comm.allgather(hashes.to(comm.device())).cpu();  // [size, n]
  const at::Tensor differs = (all != all[0]).any(0);                    // [n]
  if (!differs.any().item<bool>()) return;
  const int64_t first = differs.nonzero()[0][0].item<int64_t>();
  std::vector<int> ranks;
  for (int r = 1; r < comm.size(); ++r) {
    if (all[r][first].item<int64_t>() != all[0][first].item<int64_t>()) ranks.push_back(r);
  }
  SG2_FAIL("replicas differ ({}): '{}' on rank(s) {} differs from rank 0 ({} of {} tensors differ)", what,
           tensors[first].first, ranks, differs.sum().item<int64_t>(), tensors.size());
}

void broadcast_tensors(Communicator& comm, const NamedTensors& tensors, int root) {
  if (comm.size() == 1) return;
  std::vector<at::Tensor> wire;
  for (const auto& [name, t] : tensors) wire.push_back(t.is_contiguous() ? t.detach() : t.detach().contiguous());
  comm.broadcast(wire, root);
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor target = tensors[i].second.detach();
    if (!wire[i].is_same(target)) target.copy_(wire[i]);
  }
}

}  // namespace sg2::dist
