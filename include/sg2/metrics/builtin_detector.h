#pragma once
// The built-in feature detector: a small CNN classifier trained on a labelled dataset (e.g.
// Fashion-MNIST), saved as a TorchScript file with the Inception calling convention, so FID can be
// measured offline where no Inception file exists. Its features are the 128 activations before the
// classifier. FIDs from it are comparable only with FIDs from the same file.

#include "sg2/data/dataset.h"

#include <ATen/ATen.h>

#include <string>

namespace sg2::metrics {

struct DetectorTrainingOptions {
  int64_t epochs = 2;
  int64_t batch = 128;
  double learning_rate = 2e-3;
  int64_t max_images = 0;  // 0: the whole dataset
  uint64_t seed = 0;
};

struct DetectorTrainingResult {
  double final_loss = 0;         // mean cross-entropy of the last epoch
  double train_accuracy = 0;     // of the last epoch
  double heldout_accuracy = -1;  // on the held-out dataset, if one was given
};

// The TorchScript source of the detector; in_channels and resolution are those of the training data.
std::string builtin_detector_source();

// Trains the detector on `train` (which must have labels) and writes it to `path` atomically.
// `heldout` (may be null) is evaluated after training. Progress lines go to the log.
DetectorTrainingResult train_builtin_detector(const data::Dataset& train, const data::Dataset* heldout,
                                              const DetectorTrainingOptions& options, const std::string& path);

}  // namespace sg2::metrics
