#include "sg2/ops/cuda_architectures.h"

#include "sg2/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#ifndef SG2_CUDA_ARCHITECTURES
#define SG2_CUDA_ARCHITECTURES ""
#endif

namespace sg2::ops {

CudaArchitectures parse_cuda_architectures(const std::string& list) {
  CudaArchitectures out;
  std::string entry;
  const auto add = [&](const std::string& item) {
    if (item.empty()) return;
    const size_t dash = item.find('-');
    const std::string number = item.substr(0, dash), suffix = dash == std::string::npos ? "" : item.substr(dash + 1);
    const bool digits = !number.empty() && std::all_of(number.begin(), number.end(), ::isdigit);
    SG2_CHECK(digits && (suffix.empty() || suffix == "real" || suffix == "virtual"),
              "CUDA architecture '{}': expected a number, NUMBER-real or NUMBER-virtual (as CMAKE_CUDA_ARCHITECTURES)",
              item);
    const int arch = std::stoi(number);
    if (suffix != "virtual") out.sass.push_back(arch);
    if (suffix != "real") out.ptx.push_back(arch);
  };
  for (const char c : list) {
    if (c == ';' || c == ',') {
      add(entry);
      entry.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      entry.push_back(c);
    }
  }
  add(entry);
  for (std::vector<int>* list : {&out.sass, &out.ptx}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return out;
}

CudaArchitectures built_cuda_architectures() { return parse_cuda_architectures(SG2_CUDA_ARCHITECTURES); }

KernelImage kernel_image_for(const CudaArchitectures& built, int compute_capability) {
  for (const int arch : built.sass) {
    if (arch / 10 == compute_capability / 10 && arch <= compute_capability) return KernelImage::Sass;
  }
  for (const int arch : built.ptx) {
    if (arch <= compute_capability) return KernelImage::Ptx;
  }
  return KernelImage::None;
}

KernelDecision decide_kernels(const CudaArchitectures& built, int compute_capability, const std::string& driver_error) {
  if (driver_error.empty()) return {true, ""};
  const int major = compute_capability / 10, minor = compute_capability % 10;
  if (kernel_image_for(built, compute_capability) == KernelImage::None) {
    return {false, fmt::format("the kernels are built for {}, none of which runs on compute capability {}.{} (build "
                               "with -DSG2_CUDA_ARCHITECTURES=\"{}-real;90\" where the toolkit still compiles sm_{})",
                               describe(built), major, minor, compute_capability, compute_capability)};
  }
  return {false, fmt::format("the driver does not load the kernels built for {} ({}); a driver older than the "
                             "toolkit cannot compile its PTX: update the driver",
                             describe(built), driver_error)};
}

std::string describe(const CudaArchitectures& built) {
  std::vector<std::string> parts;
  for (const int arch : built.sass) parts.push_back(fmt::format("sm_{}", arch));
  std::string text = fmt::format("{}", fmt::join(parts, ", "));
  if (!built.ptx.empty()) {
    std::vector<std::string> ptx;
    for (const int arch : built.ptx) ptx.push_back(fmt::format("compute_{}", arch));
    text += fmt::format("{}PTX {}", text.empty() ? "" : " and ", fmt::join(ptx, ", "));
  }
  return text.empty() ? "no architectures" : text;
}

}  // namespace sg2::ops
