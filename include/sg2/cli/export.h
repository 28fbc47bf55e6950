#pragma once
// stylegan2_export: a snapshot -> a network pickle in the form of NVIDIA's TensorFlow StyleGAN2
// (nn/tf_network_pickle.h), which stylegan2-ada-pytorch's legacy.load_network_pkl and every tool
// on it (generate.py, projector.py, style_mixing.py, calc_metrics.py, stylegan3's visualizer)
// load: G, D and G_ema as (G, D, Gs), the networks' options as its static_kwargs.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace sg2::cli {

struct ExportResult {
  int64_t tensors = 0;       // G, D and G_ema's, resample filters aside
  int64_t num_fp16_res = 0;  // the float16 blocks the pickle asks the reference to run
  uint64_t bytes = 0;
};

ExportResult export_network_pickle(const std::string& snapshot_path, const std::string& out_path,
                                   bool overwrite = false);

class ExportCommand {
 public:
  void add_to(CLI::App& app);
  int run();

 private:
  std::string network_, out_;
  bool overwrite_ = false;
};

}  // namespace sg2::cli
