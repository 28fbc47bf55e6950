#pragma once
// Replica consistency: every rank hashes its tensors, the hashes are all-gathered and compared with
// rank 0's. A mismatch is an error naming the first differing tensor and the ranks that differ.

#include "sg2/core/named_tensors.h"
#include "sg2/distributed/communicator.h"

#include <string>
#include <utility>
#include <vector>

namespace sg2::dist {

using sg2::NamedTensors;

// FNV-1a over the tensor's bytes (any device; copied to the host).
uint64_t tensor_hash(const at::Tensor& tensor);

// Cross-rank contract: all ranks call it with the same names in the same order.
void check_replicas_identical(Communicator& comm, const NamedTensors& tensors, const std::string& what);

// Cross-rank contract: all ranks call it. Fails on every rank unless every rank's `lines` equal rank
// 0's; the message names the first differing line, here and on rank 0, and the ranks that differ
// (what: e.g. "the training config").
void check_same_lines_on_every_rank(Communicator& comm, const std::vector<std::string>& lines, const std::string& what);

// Copies rank `root`'s values into every rank's tensors (in place, any dtype).
void broadcast_tensors(Communicator& comm, const NamedTensors& tensors, int root = 0);

}  // namespace sg2::dist
