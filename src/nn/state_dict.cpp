#include "sg2/nn/state_dict.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"

#include <torch/nn/module.h>
#include <torch/serialize.h>


#include <fstream>
#include <iterator>

namespace sg2::nn {

namespace {

enum class Kind { Parameters, Buffers, Both };

void collect(const torch::nn::Module& module, const std::string& prefix, Kind kind, NamedTensors& out) {
  if (kind != Kind::Buffers) {
    for (const auto& item : module.named_parameters(/*recurse=*/false)) out.emplace_back(prefix + item.key(), item.value());
  }
  if (kind != Kind::Parameters) {
    for (const auto& item : module.named_buffers(/*recurse=*/false)) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& child : module.named_children()) collect(*child.value(), prefix + child.key() + ".", kind, out);
}

}  // namespace

NamedTensors state_dict(const torch::nn::Module& module, const std::string& prefix) {
  NamedTensors out;
  collect(module, prefix, Kind::Both, out);
  return out;
}

NamedTensors named_parameters(const torch::nn::Module& module, const std::string& prefix) {
  NamedTensors out;
  collect(module, prefix, Kind::Parameters, out);
  return out;
}

NamedTensors named_buffers(const torch::nn::Module& module, const std::string& prefix) {
  NamedTensors out;
  collect(module, prefix, Kind::Buffers, out);
  return out;
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

void load_state_dict(torch::nn::Module& module, const TensorMap& source, const std::string& prefix,
                     const std::string& source_name, bool allow_unexpected) {
  std::vector<std::string> missing, mismatched, unexpected;
  std::map<std::string, bool> used;
  at::NoGradGuard no_grad;
  for (auto& [name, tensor] : state_dict(module, prefix)) {
    auto it = source.find(name);
    if (it == source.end()) {
      missing.push_back(name);
      continue;
    }
    used[name] = true;
    if (it->second.sizes() != tensor.sizes()) {
      mismatched.push_back(fmt::format("{} (file {}, network {})", name, it->second.sizes(), tensor.sizes()));
      continue;
    }
    tensor.copy_(it->second);
  }
  for (const auto& [name, tensor] : source) {
    if (name.rfind(prefix, 0) == 0 && !used.count(name)) unexpected.push_back(name);
  }
  std::string problems;
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    problems += fmt::format("\n  {} ({}):", what, names.size());
    for (size_t i = 0; i < names.size() && i < 10; ++i) problems += "\n    " + names[i];
    if (names.size() > 10) problems += fmt::format("\n    ... and {} more", names.size() - 10);
  };
  list("missing keys", missing);
  list("shape mismatches", mismatched);
  if (!allow_unexpected) list("unexpected keys", unexpected);
  SG2_CHECK(problems.empty(), "{}: the state dict under '{}' does not fit the network:{}", source_name, prefix,
            problems);
}

void copy_state(const torch::nn::Module& from, torch::nn::Module& to) {
  at::NoGradGuard no_grad;
  auto source = state_dict(from);
  auto target = state_dict(to);
  SG2_CHECK(source.size() == target.size(), "copy_state: networks differ ({} vs {} tensors)", source.size(),
            target.size());
  for (size_t i = 0; i < source.size(); ++i) target[i].second.copy_(source[i].second);
}

TensorMap to_tensor_map(const c10::IValue& value, const std::string& source_name) {
  SG2_CHECK(value.isGenericDict(), "{}: expected a dict of tensors, found {}", source_name, value.tagKind());
  TensorMap out;
  for (const auto& item : value.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor()) continue;
    out[item.key().toStringRef()] = item.value().toTensor();
  }
  return out;
}

bool has_prefix(const TensorMap& tensors, const std::string& prefix) {
  const auto first = tensors.lower_bound(prefix);  // the keys are sorted: a match comes first
  return first != tensors.end() && first->first.rfind(prefix, 0) == 0;
}

c10::IValue read_torch_save_file(const std::string& path) {
  try {
    return torch::pickle_load(read_file_bytes<char>(path));
  } catch (const c10::Error& e) {
    SG2_FAIL("'{}' is not a readable snapshot or torch.save file ({})", path, e.what_without_backtrace());
  }
}

TensorMap load_tensor_file(const std::string& path) { return to_tensor_map(read_torch_save_file(path), path); }

}  // namespace sg2::nn
