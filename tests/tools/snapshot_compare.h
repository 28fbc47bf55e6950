#pragma once
// The comparison behind tests/tools/snapshot_diff (the distributed-equivalence tests), in a header so that
// a unit test checks it too.

#include "sg2/core/error.h"
#include "sg2/train/snapshot.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

namespace sg2::test {

// The differences of two snapshots over the tensors whose names start with one prefix.
struct SnapshotDifference {
  double diff = 0;  // the largest absolute difference of an element, in tensor `name`
  std::string name;
  int64_t compared = 0;
  double squared_sum = 0;  // of the differences of every element
  int64_t elements = 0;
  double rms() const { return elements > 0 ? std::sqrt(squared_sum / static_cast<double>(elements)) : 0.0; }
};

// Throws when a tensor is in only one of them, or differs in shape, or no tensor has the prefix.
inline SnapshotDifference compare_snapshot_tensors(const train::Snapshot& a, const train::Snapshot& b,
                                                   const std::string& prefix) {
  SnapshotDifference worst;
  for (const auto& [name, ta] : a.tensors) {
    if (name.rfind(prefix, 0) != 0) continue;
    auto it = b.tensors.find(name);
    SG2_CHECK(it != b.tensors.end(), "'{}' is in {} but not in {}", name, a.path, b.path);
    SG2_CHECK(ta.sizes() == it->second.sizes(), "'{}': shape {} vs {}", name, ta.sizes(), it->second.sizes());
    const at::Tensor delta = ta.to(at::kDouble) - it->second.to(at::kDouble);
    // A NaN or Inf on either side is an infinite difference: NaN would compare as within any tolerance.
    const bool finite = delta.isfinite().all().item<bool>();
    const double diff = finite ? delta.abs().max().item<double>() : INFINITY;
    ++worst.compared;
    worst.squared_sum += finite ? delta.square().sum().item<double>() : INFINITY;
    worst.elements += delta.numel();
    if (diff >= worst.diff) {
      worst.diff = diff;
      worst.name = name;
    }
  }
  SG2_CHECK(worst.compared > 0, "no tensor named {}* in {}", prefix, a.path);
  for (const auto& entry : b.tensors) {
    const std::string& name = entry.first;
    SG2_CHECK(name.rfind(prefix, 0) != 0 || a.tensors.count(name) > 0, "'{}' is in {} but not in {}", name, b.path,
              a.path);
  }
  return worst;
}

}  // namespace sg2::test
