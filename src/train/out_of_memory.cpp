#include "sg2/train/out_of_memory.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <new>

namespace sg2::train {

std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

namespace {

template <size_t N>
bool mentions_any(const std::exception& e, const std::array<const char*, N>& marks) {
  const std::string message = message_of(e);
  return std::any_of(marks.begin(), marks.end(),
                     [&](const char* mark) { return message.find(mark) != std::string::npos; });
}

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  // The CPU allocator, LibTorch's CUDA allocator, and cuBLAS / cuDNN failing their own workspaces.
  static constexpr std::array<const char*, 4> kMarks{"can't allocate memory", "out of memory",
                                                     "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED"};
  return mentions_any(e, kMarks);
}

bool may_be_out_of_memory(const std::exception& e) {
  // A cuBLAS handle created without memory is "not initialized"; cuDNN's engines that all fail for
  // want of workspace (benchmark mode near a full GPU) leave "unable to find an engine". Both have
  // other causes too (a library mismatch, an unsupported shape).
  static constexpr std::array<const char*, 2> kMarks{"CUBLAS_STATUS_NOT_INITIALIZED", "unable to find an engine"};
  return is_out_of_memory(e) || mentions_any(e, kMarks);
}

}  // namespace sg2::train
