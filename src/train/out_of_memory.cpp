#include "sg2/train/out_of_memory.h"

#include <c10/util/Exception.h>

#include <array>
#include <new>

namespace sg2::train {

std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  // The CPU allocator, LibTorch's CUDA allocator, and cuBLAS / cuDNN failing their own workspaces: a
  // cuBLAS handle without memory is "not initialized", and cuDNN's engines that all fail for want of
  // workspace (benchmark mode near a full GPU) leave "unable to find an engine". Whoever reports one
  // quotes the library's message, so a cause other than memory still shows.
  static constexpr std::array<const char*, 6> kMarks{
      "can't allocate memory",         "out of memory",      "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
      "CUBLAS_STATUS_NOT_INITIALIZED", "unable to find an engine"};
  const std::string message = message_of(e);
  for (const char* mark : kMarks) {
    if (message.find(mark) != std::string::npos) return true;
  }
  return false;
}

}  // namespace sg2::train
