#include "sg2/train/snapshot.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/rng.h"
#include "sg2/data/atomic_file.h"
#include "sg2/data/crc32c.h"
#include "sg2/train/trainer.h"

#include <ATen/core/Dict.h>
#include <spdlog/spdlog.h>
#include <torch/serialize.h>

namespace sg2::train {

int64_t Snapshot::integer(const std::string& key) const {
  auto it = integers.find(key);
  SG2_CHECK(it != integers.end(), "{}: snapshot has no '{}'", path, key);
  return it->second;
}

using Dict = c10::Dict<c10::IValue, c10::IValue>;

Dict snapshot_dict(const std::string& config_yaml, const TrainingState& state) {
  Dict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", std::string(kSnapshotFormat));
  dict.insert("version", kSnapshotVersion);
  dict.insert("config", config_yaml);
  dict.insert("networks", state.network_options().dump());
  for (const auto& [name, tensor] : state.saved_tensors()) dict.insert(name, tensor.detach().cpu().clone());
  for (const auto& [name, value] : state.counters()) dict.insert(name, value);
  return dict;
}

namespace {

constexpr const char* kChecksumKey = "checksum";

uint32_t crc_of_value(const c10::IValue& value, uint32_t crc) {
  const auto add = [&crc](const void* data, size_t size) { crc = data::crc32c(data, size, crc); };
  if (value.isTensor()) {
    const at::Tensor t = value.toTensor().detach().cpu().contiguous();
    const auto dtype = static_cast<int8_t>(t.scalar_type());
    add(&dtype, sizeof(dtype));
    add(t.sizes().data(), t.sizes().size() * sizeof(int64_t));
    add(t.data_ptr(), t.numel() * t.element_size());
  } else if (value.isInt()) {
    const int64_t v = value.toInt();
    add(&v, sizeof(v));
  } else if (value.isDouble()) {
    const double v = value.toDouble();
    add(&v, sizeof(v));
  } else if (value.isString()) {
    add(value.toStringRef().data(), value.toStringRef().size());
  } else {
    const std::string kind = value.tagKind();
    add(kind.data(), kind.size());
  }
  return crc;
}

}  // namespace

uint32_t snapshot_checksum(const Dict& dict) {
  std::map<std::string, c10::IValue> entries;  // sorted: the sum does not depend on the dict's order
  for (const auto& item : dict) {
    if (item.key().isString() && item.key().toStringRef() != kChecksumKey) entries.emplace(item.key().toStringRef(), item.value());
  }
  uint32_t crc = 0;
  for (const auto& [key, value] : entries) {
    crc = data::crc32c(key.c_str(), key.size() + 1, crc);  // with its NUL: "ab"+"c" differs from "a"+"bc"
    crc = crc_of_value(value, crc);
  }
  return crc;
}

void write_snapshot_dict(const std::string& path, Dict dict) {
  dict.insert_or_assign(kChecksumKey, static_cast<int64_t>(snapshot_checksum(dict)));
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  data::write_file_atomically(path, bytes.data(), bytes.size());
}

Dict read_pickled_dict(const std::string& path) {
  const c10::IValue value = nn::read_torch_save_file(path);
  SG2_CHECK(value.isGenericDict(), "'{}' is not a snapshot: expected a dict, found {}", path, value.tagKind());
  return value.toGenericDict();
}

bool is_snapshot_dict(const Dict& dict) {
  const auto format = dict.find(std::string("format"));
  return format != dict.end() && format->value().isString() && format->value().toStringRef() == kSnapshotFormat;
}

void verify_snapshot_checksum(const Dict& dict, const std::string& path) {
  const auto stored = dict.find(std::string(kChecksumKey));
  const auto version = dict.find(std::string("version"));
  const bool before_checksums = version != dict.end() && version->value().isInt() && version->value().toInt() < 2;
  if (stored == dict.end() && before_checksums) {
    spdlog::warn("{}: a version-1 snapshot, written before snapshots carried checksums: its contents cannot be "
                 "verified", path);
    return;
  }
  SG2_CHECK(stored != dict.end() && stored->value().isInt(), "'{}' has no checksum: the file is damaged or was not "
            "written by stylegan2-cpp", path);
  const uint32_t expected = static_cast<uint32_t>(stored->value().toInt());
  const uint32_t actual = snapshot_checksum(dict);
  SG2_CHECK(actual == expected, "'{}' is damaged: its contents' CRC-32C is {:08x}, the snapshot recorded {:08x} "
            "(a changed tensor, counter or config). Use an earlier snapshot of the run", path, actual, expected);
}

void save_snapshot(const std::string& path, Trainer& trainer, const std::vector<at::Tensor>& rank_states) {
  Dict dict = snapshot_dict(train_schema().to_yaml_string(trainer.config()), trainer.state());
  dict.insert("world_size", static_cast<int64_t>(trainer.world_size()));
  {
    std::lock_guard<std::mutex> lock(trainer.step_rng().mutex());
    dict.insert("rng.step", trainer.step_rng().get_state());
  }
  // CPU (Mersenne Twister) and CUDA (Philox seed + offset) states differ in kind and size.
  dict.insert("rng.device_type", static_cast<int64_t>(trainer.step_rng().device().type()));
  for (size_t r = 1; r < rank_states.size(); ++r) dict.insert(fmt::format("rng.step.rank{}", r), rank_states[r]);
  write_snapshot_dict(path, dict);
}

Snapshot load_snapshot(const std::string& path) {
  const Dict dict = read_pickled_dict(path);
  Snapshot s;
  s.path = path;
  std::string format;
  for (const auto& item : dict) {
    if (!item.key().isString()) continue;
    const std::string& key = item.key().toStringRef();
    const c10::IValue& v = item.value();
    if (v.isTensor()) s.tensors[key] = v.toTensor();
    if (v.isInt()) s.integers[key] = v.toInt();
    if (v.isString() && key == "format") format = v.toStringRef();
    if (v.isString() && key == "config") s.config_yaml = v.toStringRef();
    if (v.isString() && key == "networks") s.networks = nlohmann::json::parse(v.toStringRef());
  }
  SG2_CHECK(format == kSnapshotFormat, "'{}' is not a {} file (format '{}')", path, kSnapshotFormat, format);
  verify_snapshot_checksum(dict, path);
  s.version = s.integer("version");
  SG2_CHECK(s.version >= 1 && s.version <= kSnapshotVersion,
            "'{}' has snapshot version {}; this build reads versions 1 to {}", path, s.version, kSnapshotVersion);
  SG2_CHECK(s.networks.contains("G") && s.networks.contains("D"), "'{}': snapshot lacks the network options", path);
  return s;
}

namespace {

// Whether the snapshot's step rng state can be loaded into `rng` (same device type; snapshots
// before rng.device_type was recorded: the same state size).
bool step_rng_state_fits(const Snapshot& s, at::Generator& rng) {
  const auto device_type = s.integers.find("rng.device_type");
  if (device_type != s.integers.end()) return device_type->second == static_cast<int64_t>(rng.device().type());
  return s.tensors.at("rng.step").numel() == rng.get_state().numel();
}

}  // namespace

void restore_trainer(Trainer& trainer, const Snapshot& s) {
  trainer.state().load_modules(s.tensors, s.path);
  if (s.imported()) return;  // weights only: fresh optimizers, progress 0
  trainer.state().load_training_progress(s.tensors, s.integers, s.path);
  if (trainer.rank() != 0) trainer.state().clear_rank_sums();  // the snapshot's sums resume on rank 0
  const Progress& p = trainer.progress();
  // The step generator continues where it was when the world is the same. Each rank's stream is
  // its own, so another world size starts fresh streams keyed by (seed, rank, step). With
  // dist.rng = global the step's draws are keyed by the step itself and need no state.
  const int rank = trainer.rank();
  SG2_CHECK(s.tensors.count("rng.step"), "{}: snapshot has no rng.step", s.path);
  auto rng = s.tensors.find(rank == 0 ? std::string("rng.step") : fmt::format("rng.step.rank{}", rank));
  std::lock_guard<std::mutex> lock(trainer.step_rng().mutex());
  const bool same_world = s.integer("world_size") == trainer.world_size() && rng != s.tensors.end();
  const bool same_device = step_rng_state_fits(s, trainer.step_rng());
  if (same_world && !same_device) {
    spdlog::warn("{}: its step generator ran on another device type than {}; starting fresh per-rank streams "
                 "(dist.rng = global draws are unaffected)", s.path, trainer.step_rng().device().str());
  }
  if (same_world && same_device) {
    trainer.step_rng().set_state(rng->second);
  } else {
    trainer.step_rng().set_current_seed(mix_seed({static_cast<uint64_t>(trainer.config().train.seed),
                                                   static_cast<uint64_t>(trainer.rank()),
                                                   static_cast<uint64_t>(p.batch_idx)}));
  }
}

nn::MixedPrecision snapshot_precision(const Snapshot& s, const at::Device& device) {
  if (s.config_yaml.empty()) return {};
  try {
    return inference_precision(train_schema().from_yaml_string(s.config_yaml, s.path), device);
  } catch (const std::exception& e) {
    spdlog::warn("{}: its run config does not read ({}); the generator runs in float32", s.path, e.what());
    return {};
  }
}

std::shared_ptr<nn::Generator> load_generator(const Snapshot& s, const nn::MixedPrecision& precision,
                                              const std::string& which) {
  SG2_CHECK(which == "G_ema" || which == "G", "{}: which generator, '{}'? expected G_ema or G", s.path, which);
  SG2_CHECK(nn::has_prefix(s.tensors, which + "."), "{}: the snapshot holds no {} tensors{}", s.path, which,
            which == "G_ema" ? " (try G)" : "");
  nn::GeneratorOptions options = nn::generator_options_from_json(s.networks.at("G"));
  options.precision = precision;
  auto G = std::make_shared<nn::Generator>(options);
  nn::load_state_dict(*G, s.tensors, which + ".", s.path);
  return G;
}

namespace {

std::string describe_images(int64_t width, int64_t height, int64_t channels) {
  const std::string kind = channels == 1 ? "grayscale" : channels == 3 ? "RGB" : fmt::format("{}-channel", channels);
  return fmt::format("{}x{} {}", width, height, kind);
}

}  // namespace

void check_network_fits_dataset(const nn::GeneratorOptions& g, const std::string& network,
                                const data::Dataset& dataset, const std::string& data_path) {
  const data::ImageShape s = dataset.shape();
  const bool same_shape = s.height == g.img_resolution && s.width == g.img_resolution && s.channels == g.img_channels;
  SG2_CHECK(same_shape, "'{}' makes {} images, but the dataset '{}' holds {} images: use the data the network was "
            "trained on, or a dataset made at its shape (stylegan2_dataset create --source {} --dest NEW "
            "--resolution {} --channels {})", network, describe_images(g.img_resolution, g.img_resolution, g.img_channels),
            data_path, describe_images(s.width, s.height, s.channels), data_path, g.img_resolution, g.img_channels);
  SG2_CHECK(g.c_dim == 0 || dataset.label_dim() == g.c_dim,
            "'{}' is conditioned on {} label values but the dataset '{}' gives {} (a labelled dataset and "
            "data.use_labels: true are needed)", network, g.c_dim, data_path, dataset.label_dim());
}

}  // namespace sg2::train
