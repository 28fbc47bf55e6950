// Built when the CUDA toolkit is found (SG2_WITH_CUDA): asks the CUDA runtime what it sees.
#include "sg2/core/error.h"
#include "sg2/core/system.h"

#include <cuda_runtime_api.h>

namespace sg2 {

CudaRuntimeInfo query_cuda_runtime() {
  CudaRuntimeInfo info;
  info.compiled = true;
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    info.error = cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return info;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) info.devices.emplace_back(prop.name);
  }
  return info;
}

void select_cuda_device(int index) {
  const cudaError_t status = cudaSetDevice(index);
  SG2_CHECK(status == cudaSuccess, "cudaSetDevice({}) failed: {}", index, cudaGetErrorString(status));
}

}  // namespace sg2
