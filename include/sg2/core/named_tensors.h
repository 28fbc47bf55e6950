#pragma once
// The one type of a named tensor list ("G.mapping.fc0.weight", tensor), shared by nn (state dicts),
// dist (broadcast, replica checks, gradient buckets) and train (snapshots). Header only: core's
// library itself does not use LibTorch.

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace sg2 {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

}  // namespace sg2
