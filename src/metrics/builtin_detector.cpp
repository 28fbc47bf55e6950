#include "sg2/metrics/builtin_detector.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"
#include "sg2/data/atomic_file.h"
#include "sg2/data/loader.h"

#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>
#include <torch/script.h>

#include <cmath>
#include <sstream>

namespace sg2::metrics {

namespace {

constexpr int64_t kResolution = 32;     // inputs are resized to this
constexpr int64_t kFeatureDim = 128;
const std::vector<int64_t> kChannels = {16, 32, 64};

// The images [n, C, H, W] and class indices [n] of items order[start, start + count); classes: [N].
std::pair<at::Tensor, at::Tensor> read_batch(const data::Dataset& dataset, const at::Tensor& classes,
                                             const std::vector<int64_t>& order, int64_t start, int64_t count) {
  const std::vector<int64_t> indices(order.begin() + start, order.begin() + start + count);
  return {data::read_images(dataset, indices), classes.index_select(0, at::tensor(indices, at::kLong))};
}

void add_parameter(torch::jit::Module& module, const std::string& name, std::vector<int64_t> shape, int64_t fan_in,
                   at::Generator& rng) {
  const at::Tensor weight = at::randn(shape, rng, at::kFloat) * std::sqrt(2.0 / static_cast<double>(fan_in));
  module.register_parameter(name + "_weight", weight.requires_grad_(true), false);
  module.register_parameter(name + "_bias", at::zeros({shape[0]}).requires_grad_(true), false);
}

torch::jit::Module build_detector(int64_t in_channels, int64_t num_classes, uint64_t seed) {
  torch::jit::Module module("Sg2BuiltinDetector");
  module.register_attribute("in_channels", c10::IntType::get(), in_channels);
  module.register_attribute("resolution", c10::IntType::get(), kResolution);
  at::Generator rng = at::detail::createCPUGenerator(seed);
  int64_t channels = in_channels;
  for (size_t i = 0; i < kChannels.size(); ++i) {
    add_parameter(module, "conv" + std::to_string(i), {kChannels[i], channels, 3, 3}, channels * 9, rng);
    channels = kChannels[i];
  }
  const int64_t flat = channels * (kResolution / 8) * (kResolution / 8);
  add_parameter(module, "fc", {kFeatureDim, flat}, flat, rng);
  add_parameter(module, "out", {num_classes, kFeatureDim}, kFeatureDim, rng);
  module.define(builtin_detector_source());
  return module;
}

std::vector<at::Tensor> parameters_of(const torch::jit::Module& module) {
  std::vector<at::Tensor> parameters;
  for (const at::Tensor& p : module.parameters()) parameters.push_back(p);
  return parameters;
}

at::Tensor logits_of(torch::jit::Module& module, const at::Tensor& images) {
  return module.forward({images.to(at::kFloat), false}).toTensor();  // [n, classes]
}

double accuracy(torch::jit::Module& module, const data::Dataset& dataset, int64_t batch) {
  at::NoGradGuard no_grad;
  const std::vector<int64_t> order = data::index_range(0, dataset.size());
  const at::Tensor classes = data::all_labels(dataset).argmax(1);
  int64_t correct = 0;
  for (int64_t start = 0; start < dataset.size(); start += batch) {
    const int64_t n = std::min(batch, dataset.size() - start);
    auto [images, labels] = read_batch(dataset, classes, order, start, n);
    correct += logits_of(module, images).argmax(1).eq(labels).sum().item<int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(dataset.size());
}

}  // namespace

std::string builtin_detector_source() {
  return R"(
def features(self, images):
    x = images.float()
    if x.size(1) != self.in_channels:
        if self.in_channels == 1:
            x = x.mean(dim=1, keepdim=True)
        else:
            x = x.expand(-1, self.in_channels, -1, -1)
    if x.size(2) != self.resolution or x.size(3) != self.resolution:
        x = torch.adaptive_avg_pool2d(x, [self.resolution, self.resolution])
    x = x / 127.5 - 1.0
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, self.conv0_weight, self.conv0_bias, [1, 1], [1, 1])), [2, 2])
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, self.conv1_weight, self.conv1_bias, [1, 1], [1, 1])), [2, 2])
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, self.conv2_weight, self.conv2_bias, [1, 1], [1, 1])), [2, 2])
    return torch.relu(torch.linear(x.flatten(1), self.fc_weight, self.fc_bias))

def forward(self, images, return_features: bool = False, no_output_bias: bool = False):
    f = self.features(images)
    if return_features:
        return f
    if no_output_bias:
        return torch.softmax(torch.linear(f, self.out_weight), 1)
    return torch.linear(f, self.out_weight, self.out_bias)
)";
}

DetectorTrainingResult train_builtin_detector(const data::Dataset& train, const data::Dataset* heldout,
                                              const DetectorTrainingOptions& options, const std::string& path) {
  SG2_CHECK(train.label_dim() >= 2, "dataset '{}' has no class labels; the detector learns to classify them",
            train.name());
  SG2_CHECK(options.epochs > 0 && options.batch > 0, "epochs and batch must be positive");
  SG2_CHECK(heldout == nullptr || heldout->label_dim() == train.label_dim(),
            "held-out dataset has {} classes, training {}", heldout ? heldout->label_dim() : 0, train.label_dim());
  torch::jit::Module module = build_detector(train.shape().channels, train.label_dim(), options.seed);
  torch::optim::Adam optimizer(parameters_of(module), torch::optim::AdamOptions(options.learning_rate));
  const at::Tensor classes = data::all_labels(train).argmax(1);  // [N]
  const int64_t count = options.max_images > 0 ? std::min(options.max_images, train.size()) : train.size();
  DetectorTrainingResult result;
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    const std::vector<int64_t> order = seeded_permutation(train.size(), mix_seed({options.seed, static_cast<uint64_t>(epoch)}));
    double loss_sum = 0;
    int64_t correct = 0;
    for (int64_t start = 0; start < count; start += options.batch) {
      const int64_t n = std::min(options.batch, count - start);
      auto [images, labels] = read_batch(train, classes, order, start, n);
      const at::Tensor logits = logits_of(module, images);
      const at::Tensor loss = at::cross_entropy_loss(logits, labels);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>() * static_cast<double>(n);
      correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
    }
    result.final_loss = loss_sum / static_cast<double>(count);
    result.train_accuracy = static_cast<double>(correct) / static_cast<double>(count);
    spdlog::info("detector epoch {}/{}: loss {:.4f}, train accuracy {:.2f}%", epoch + 1, options.epochs,
                 result.final_loss, result.train_accuracy * 100);
  }
  if (heldout != nullptr) {
    result.heldout_accuracy = accuracy(module, *heldout, options.batch);
    spdlog::info("detector held-out accuracy {:.2f}% on {} images", result.heldout_accuracy * 100, heldout->size());
  }
  std::ostringstream bytes;
  module.save(bytes);
  const std::string archive = bytes.str();
  data::write_file_atomically(path, archive.data(), archive.size());
  return result;
}

}  // namespace sg2::metrics
