#pragma once
// State dicts with the reference's keys and order (each module's parameters, then its buffers, then
// its children), loading with errors that list missing, unexpected and mis-shaped keys, and
// conversion from the flat dict that torch.save / torch::pickle_load produce.

#include "sg2/core/named_tensors.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}

namespace sg2::nn {

using sg2::NamedTensors;
using TensorMap = std::map<std::string, at::Tensor>;

NamedTensors state_dict(const torch::nn::Module& module, const std::string& prefix = "");
NamedTensors named_parameters(const torch::nn::Module& module, const std::string& prefix = "");
NamedTensors named_buffers(const torch::nn::Module& module, const std::string& prefix = "");
int64_t count_parameters(const torch::nn::Module& module);

// Copies source[prefix + key] into every parameter and buffer of `module`. Keys of `source` that
// start with `prefix` but match nothing are errors unless `allow_unexpected`. `source_name` names
// the file in errors.
void load_state_dict(torch::nn::Module& module, const TensorMap& source, const std::string& prefix,
                     const std::string& source_name, bool allow_unexpected = false);

// Whether any key of `tensors` starts with `prefix` ("G_ema.").
bool has_prefix(const TensorMap& tensors, const std::string& prefix);

// Copies every parameter and buffer of `from` into `to` (same architecture).
void copy_state(const torch::nn::Module& from, torch::nn::Module& to);

// What a torch.save file holds; a clear error naming `path` for anything unreadable.
c10::IValue read_torch_save_file(const std::string& path);
// Flat dict[str, Tensor] from a torch.save file (e.g. the parity fixtures).
TensorMap load_tensor_file(const std::string& path);
TensorMap to_tensor_map(const c10::IValue& value, const std::string& source_name);


}  // namespace sg2::nn
