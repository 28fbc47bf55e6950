#include "sg2/distributed/consistency.h"

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

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

// Index of the first line where `mine` differs from `root`'s, or -1 if none.
int64_t first_difference(const std::vector<std::string>& mine, const std::vector<std::string>& root) {
  for (size_t i = 0; i < std::max(mine.size(), root.size()); ++i) {
    if (i >= mine.size() || i >= root.size() || mine[i] != root[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string line_or_none(const std::vector<std::string>& lines, int64_t index) {
  return index < static_cast<int64_t>(lines.size()) ? "'" + lines[size_t(index)] + "'" : "nothing";
}

}  // namespace

void check_same_lines_on_every_rank(Communicator& comm, const std::vector<std::string>& lines, const std::string& what) {
  if (comm.size() == 1) return;
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  const std::vector<std::string> root_lines = split_lines(comm.broadcast_bytes(text, 0));
  const int64_t mine = first_difference(lines, root_lines);
  const at::Tensor mine_tensor = at::full({1}, mine, at::TensorOptions().dtype(at::kLong).device(comm.device()));
  const at::Tensor all = comm.allgather(mine_tensor).cpu().flatten();  // [size]
  std::vector<int> ranks;
  int64_t first_index = -1;
  for (int r = 0; r < comm.size(); ++r) {
    if (all[r].item<int64_t>() < 0) continue;
    ranks.push_back(r);
    if (first_index < 0) first_index = all[r].item<int64_t>();
  }
  if (ranks.empty()) return;
  const std::string fix = "start every rank with the same command line, config file and environment";
  SG2_CHECK(mine < 0, "{} of rank {} differs from rank 0's: {} here, {} on rank 0 (ranks differing: {}); {}", what,
            comm.rank(), line_or_none(lines, mine), line_or_none(root_lines, mine), ranks, fix);
  SG2_FAIL("{} of rank(s) {} differs from rank 0's, first at {} on rank 0 (see rank {}'s message); {}", what, ranks,
           line_or_none(root_lines, first_index), ranks[0], fix);
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
