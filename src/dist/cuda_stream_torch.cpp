#include "backends.h"

#include <c10/cuda/CUDAStream.h>

namespace sg2::dist {

void* current_cuda_stream(const at::Device& device) {
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
}

}  // namespace sg2::dist
