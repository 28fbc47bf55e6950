#include "sg2/metrics/detector.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/data/crc32c.h"
#include "sg2/nn/state_dict.h"

#include <torch/script.h>

#include <filesystem>

namespace sg2::metrics {

namespace {

// "<file name> <bytes> bytes crc32c <hex>": content, not path, so a moved file keeps its caches.
std::string file_identity(const std::string& path) {
  const std::vector<char> bytes = read_file_bytes<char>(path);
  return fmt::format("{} {} bytes crc32c {:08x}", std::filesystem::path(path).filename().string(), bytes.size(),
                     data::crc32c(bytes.data(), bytes.size()));
}

class TorchScriptDetector : public FeatureDetector {
 public:
  TorchScriptDetector(const std::string& path, const at::Device& device) : path_(path), device_(device) {
    SG2_CHECK(std::filesystem::is_regular_file(path), "detector file '{}' {}", path,
              std::filesystem::exists(path) ? "is not a file (a directory?)" : "does not exist");
    identity_ = file_identity(path);
    try {
      module_ = torch::jit::load(path, device);
    } catch (const std::exception& e) {
      SG2_FAIL("detector file '{}' is not a loadable TorchScript archive: {}", path, first_line(e.what()));
    }
    SG2_CHECK(module_.find_method("forward").has_value(), "detector file '{}' has no forward method", path);
    module_.eval();
  }

  at::Tensor features(const at::Tensor& images) override {
    const at::Tensor features = call(detector_input(images, device_), {{"return_features", true}},
                                     "forward(images, return_features=True)");
    SG2_CHECK(feature_dim_ < 0 || features.size(1) == feature_dim_,
              "detector '{}' returned {} features per image, earlier {}", path_, features.size(1), feature_dim_);
    feature_dim_ = features.size(1);
    return features.to(at::kFloat);
  }

  at::Tensor class_probabilities(const at::Tensor& images) override {
    const at::Tensor p = call(detector_input(images, device_), {{"no_output_bias", true}},
                              "forward(images, no_output_bias=True) (the Inception Score's call)");
    SG2_CHECK(p.size(1) >= 2 && (p.sum(1) - 1).abs().max().item<double>() < 1e-3 && p.min().item<double>() >= 0,
              "detector '{}' returned no class probabilities for the Inception Score (rows of {} values summing to "
              "1 expected): is it an Inception classifier?", path_, p.size(1));
    return p;
  }

  at::Tensor lpips_features(const at::Tensor& images) override {
    SG2_CHECK(images.dim() == 4 && images.size(1) == 3 && images.is_floating_point(),
              "LPIPS input must be float [N, 3, H, W], got {} {}", c10::toString(images.scalar_type()), images.sizes());
    return call(images.to(device_, at::kFloat), {{"resize_images", false}, {"return_lpips", true}},
                "forward(images, resize_images=False, return_lpips=True) (perceptual path length's call: a VGG16 "
                "LPIPS file such as NVIDIA's vgg16.pt)");
  }

  int64_t feature_dim() const override { return feature_dim_; }

  // forward(input, **kwargs) -> float32 [N, D]; errors name the file and the call.
  at::Tensor call(const at::Tensor& input, const std::unordered_map<std::string, c10::IValue>& kwargs,
                  const std::string& what) {
    c10::IValue output;
    try {
      at::NoGradGuard no_grad;
      output = module_.forward({input}, kwargs);
    } catch (const std::exception& e) {
      SG2_FAIL("detector '{}' failed on images {} called as {}: {}", path_, input.sizes(), what, first_line(e.what()));
    }
    SG2_CHECK(output.isTensor(), "detector '{}' returned a {}, expected a Tensor [N, D]", path_, output.tagKind());
    const at::Tensor out = output.toTensor();
    SG2_CHECK(out.dim() == 2 && out.size(0) == input.size(0),
              "detector '{}' returned features of shape {} for {} images, expected [{}, D]", path_, out.sizes(),
              input.size(0), input.size(0));
    SG2_CHECK(out.is_floating_point(), "detector '{}' returned {} features, expected floating point", path_,
              c10::toString(out.scalar_type()));
    return out.to(at::kFloat);
  }
  std::string identity() const override { return identity_; }
  std::string name() const override { return std::filesystem::path(path_).stem().string(); }

 private:
  std::string path_, identity_;
  at::Device device_;
  torch::jit::Module module_;
  int64_t feature_dim_ = -1;
};

}  // namespace

at::Tensor FeatureDetector::class_probabilities(const at::Tensor&) {
  SG2_FAIL("detector '{}' gives no class probabilities (the Inception Score needs an Inception file)", name());
}

at::Tensor FeatureDetector::lpips_features(const at::Tensor&) {
  SG2_FAIL("detector '{}' gives no LPIPS features (perceptual path length needs a VGG16 file such as vgg16.pt)", name());
}

at::Tensor detector_input(const at::Tensor& images, const at::Device& device) {
  SG2_CHECK(images.dim() == 4 && (images.size(1) == 1 || images.size(1) == 3) && images.scalar_type() == at::kByte,
            "detector input must be uint8 [N, 1 or 3, H, W], got {} {}", c10::toString(images.scalar_type()), images.sizes());
  at::Tensor x = images.to(device, at::kFloat);  // [N, C, H, W] in [0, 255]
  return images.size(1) == 1 ? x.repeat({1, 3, 1, 1}) : x;
}

std::unique_ptr<FeatureDetector> load_torchscript_detector(const std::string& path, const at::Device& device,
                                                           int64_t probe_resolution) {
  auto detector = std::make_unique<TorchScriptDetector>(path, device);
  const at::Tensor probe = at::full({2, 3, probe_resolution, probe_resolution}, 128, at::kByte);
  const at::Tensor features = detector->features(probe);
  SG2_CHECK(at::isfinite(features).all().item<bool>(), "detector '{}' returned non-finite features for a grey image",
            path);
  return detector;
}

}  // namespace sg2::metrics
