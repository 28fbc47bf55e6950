// Built without the CUDA toolkit: no CUDA runtime to ask.
#include "sg2/core/error.h"
#include "sg2/core/system.h"

namespace sg2 {

CudaRuntimeInfo query_cuda_runtime() {
  CudaRuntimeInfo info;
  info.error = "built without the CUDA toolkit (SG2_WITH_CUDA=OFF)";
  return info;
}

void select_cuda_device(int index) {
  SG2_FAIL("cannot select CUDA device {}: built without the CUDA toolkit (SG2_WITH_CUDA=OFF)", index);
}

}  // namespace sg2
