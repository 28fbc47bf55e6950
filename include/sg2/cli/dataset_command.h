#pragma once
// stylegan2_dataset: makes, checks, exports, converts and benchmarks datasets (the commands of
// sg2/data/dataset_tool.h). Its own module, on the data library only: the tool needs no networks.

#include "sg2/data/dataset_tool.h"

#include <CLI/CLI.hpp>

#include <string>

namespace sg2::cli {

class DatasetCommand {
 public:
  void add_to(CLI::App& app);  // the create, convert, info, export and bench commands
  int run();                   // the command given; its exit status

 private:
  std::string filter_ = "lanczos";
  data::CreateOptions create_;
  std::string convert_source_, convert_dest_;
  bool convert_overwrite_ = false;
  std::string info_path_;
  bool skip_verify_ = false;
  data::SourceOptions export_source_;
  std::string outdir_;
  bool export_overwrite_ = false;
  data::LoaderBenchOptions bench_;
  CLI::App* create_cmd_ = nullptr;
  CLI::App* convert_cmd_ = nullptr;
  CLI::App* info_cmd_ = nullptr;
  CLI::App* export_cmd_ = nullptr;
  CLI::App* bench_cmd_ = nullptr;
};

}  // namespace sg2::cli
