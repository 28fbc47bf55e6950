#include "backends.h"

#include "sg2/core/error.h"

namespace sg2::dist {

void* current_cuda_stream(const at::Device& device) {
  SG2_FAIL("device {}: this LibTorch was built without CUDA, so the NCCL backend has no CUDA tensors to reduce",
           device.str());
}

}  // namespace sg2::dist
