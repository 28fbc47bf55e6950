#pragma once
// Feature detectors for FID, KID, precision/recall, IS and PPL. The standard one is NVIDIA's
// TorchScript Inception (inception-2015-12-05.pt), called as forward(images, return_features=True) on
// float images in [0, 255], NCHW, 3 channels, any size, returning [N, 2048]; the reference's
// precision/recall calls NVIDIA's vgg16.pt the same way ([N, 4096]). The Inception Score calls the
// Inception as forward(images, no_output_bias=True) for class probabilities [N, 1008]; perceptual
// path length calls vgg16.pt as forward(images, resize_images=False, return_lpips=True) for LPIPS
// features. Any TorchScript file with these calling conventions works the same way, including the
// built-in detector (builtin_detector.h; features and class probabilities).

#include <ATen/ATen.h>

#include <memory>
#include <string>

namespace sg2::metrics {

class FeatureDetector {
 public:
  virtual ~FeatureDetector() = default;
  // images: uint8 [N, C, H, W] (C = 1 or 3; grayscale is repeated to 3 channels) on any device
  // -> float32 [N, feature_dim] on the detector's device. Errors name the detector.
  virtual at::Tensor features(const at::Tensor& images) = 0;
  virtual int64_t feature_dim() const = 0;
  // images as for features() -> float32 [N, classes], each row summing to 1 (the Inception Score's).
  virtual at::Tensor class_probabilities(const at::Tensor& images);
  // float images [N, 3, H, W] in [0, 255] (not quantized) -> float32 [N, D] LPIPS features, whose
  // squared distance is the perceptual distance (perceptual path length's).
  virtual at::Tensor lpips_features(const at::Tensor& images);
  // What identifies the detector in cache keys: its file name, size and content checksum.
  virtual std::string identity() const = 0;
  virtual std::string name() const = 0;  // short, for cache file names and messages
};

// A TorchScript file loaded with torch::jit::load onto `device`. Loading probes it with a small
// batch of `probe_resolution` images, so a file that is not TorchScript, has no such forward or
// returns the wrong shape fails here with a message naming the file.
std::unique_ptr<FeatureDetector> load_torchscript_detector(const std::string& path, const at::Device& device,
                                                           int64_t probe_resolution = 32);

// uint8 [N, C, H, W] -> float32 [N, 3, H, W] in [0, 255] (grayscale repeated, as the reference does).
at::Tensor detector_input(const at::Tensor& images, const at::Device& device);

}  // namespace sg2::metrics
