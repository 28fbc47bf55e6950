// CUDA kernels for upfirdn2d and bias_act (see fir_bias_act_kernels.h). The generic kernels take
// one thread per output element (the arithmetic is in fir_bias_act_elements.h), float32 whatever
// the storage type (float32, float16, bfloat16), grid-stride loops over 32-bit indices where the
// launch fits them and 64-bit ones otherwise; upfirdn2d visits only the taps that read a sample.
// StyleGAN2's shapes of upfirdn2d (4x4 filter; up 2, down 2 or neither) run a tiled kernel with
// those fixed at compile time (in 16-byte lanes of channels where channels_last memory allows:
// fir_lanes_elements.h), and bias_act runs 16 bytes per thread wherever the memory is whole
// aligned packs (runs_in_lanes); any other launch runs the generic kernel. The references are in
// ../upfirdn2d.cpp and ../bias_act.cpp; the CPU kernels compute the same sums in the same tap order. The synthesis
// layers' epilogue runs 16 bytes per thread in NCHW or channels_last (epilogue_elements.h).
#include "epilogue_elements.h"
#include "fir_bias_act_elements.h"
#include "fir_lanes_elements.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace sg2::ops::cuda {

namespace {

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// kLanes<T> elements in one 16-byte access: float32 values for the arithmetic.
template <typename T>
struct alignas(kLaneBytes) LanePack {
  T lane[kLanes<T>];
};

template <typename T>
__device__ __forceinline__ void load_lanes(const T* p, int64_t pack, float (&v)[kLanes<T>]) {
  const LanePack<T> packed = reinterpret_cast<const LanePack<T>*>(p)[pack];
#pragma unroll
  for (int k = 0; k < kLanes<T>; ++k) v[k] = load(packed.lane, k);
}

template <typename T>
__device__ __forceinline__ void store_lanes(T* p, int64_t pack, const float (&v)[kLanes<T>]) {
  LanePack<T> packed;
#pragma unroll
  for (int k = 0; k < kLanes<T>; ++k) store(packed.lane, k, v[k]);
  reinterpret_cast<LanePack<T>*>(p)[pack] = packed;
}

constexpr int kThreads = 256;

// Enough blocks to fill the device several times over; the loops stride over the rest.
unsigned int blocks_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

// Errors of the launch itself (its configuration, or machine code or PTX that this GPU or driver
// cannot run); any other error is a device fault (an illegal address, say) that an earlier
// asynchronous operation left behind, which only surfaces here.
bool is_launch_error(cudaError_t status) {
  return status == cudaErrorInvalidConfiguration || status == cudaErrorLaunchOutOfResources ||
         status == cudaErrorInvalidDeviceFunction || status == cudaErrorNoKernelImageForDevice ||
         status == cudaErrorInvalidValue || status == cudaErrorInvalidKernelImage || status == cudaErrorInvalidPtx ||
         status == cudaErrorUnsupportedPtxVersion;
}

// An error that a CUDA call returns may be a device fault left by earlier work.
constexpr const char* kEarlierFaultHint =
    "; it may come from an earlier asynchronous operation on the device "
    "(CUDA_LAUNCH_BLOCKING=1 reports each error at the call that caused it)";

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  const std::string error = cudaGetErrorString(status);
  if (is_launch_error(status)) {
    throw std::runtime_error(std::string("CUDA kernel ") + kernel + " failed to launch: " + error);
  }
  throw std::runtime_error(std::string("CUDA error found at the launch of kernel ") + kernel + ": " + error +
                           kEarlierFaultHint);
}

// The grid-stride loops run over Index: int32_t where the launch fits (fits_32bit_indices).
template <typename T, typename Index>
__global__ void upfirdn2d_kernel(FirLaunch job, Index total) {
  const T* x = static_cast<const T*>(job.x);
  T* y = static_cast<T*>(job.y);
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(gridDim.x) * blockDim.x) {
    store(y, i, upfirdn2d_element<Index>(job, i, [x](Index offset) { return load(x, offset); }));
  }
}

// Fir::kOutputs outputs per thread of a kTileX x kTileY block (upfirdn2d_tile_thread); z strides
// over the slices.
template <typename T, typename Fir>
__global__ void __launch_bounds__(kTileX * kTileY) upfirdn2d_tiled_kernel(FirLaunch job, int32_t slices) {
  const T* x = static_cast<const T*>(job.x);
  T* y = static_cast<T*>(job.y);
  const FirTaps<Fir::kTaps> taps = load_fir_taps<Fir::kTaps>(job);
  const auto read = [x](int32_t offset) { return load(x, offset); };
  const auto write = [y](int32_t offset, float value) { store(y, offset, value); };
  for (int32_t slice = blockIdx.z; slice < slices; slice += gridDim.z) {
    upfirdn2d_tile_thread<int32_t, Fir>(job, taps, int32_t(blockIdx.x), int32_t(blockIdx.y), slice, threadIdx.x,
                                        threadIdx.y, read, write);
  }
}

// Channels_last in 16-byte lanes (upfirdn2d_lanes_thread): x over one row of threads (lanes_rows
// output rows), y striding over those rows.
template <typename T, typename Fir>
__global__ void __launch_bounds__(kFirLanesBlock) upfirdn2d_lanes_kernel(FirLaunch job, int32_t threads_per_row,
                                                                          int32_t rows) {
  constexpr int kPack = kLanes<T>;
  const int32_t t = blockIdx.x * kFirLanesBlock + threadIdx.x;
  if (t >= threads_per_row) return;
  const T* x = static_cast<const T*>(job.x);
  T* y = static_cast<T*>(job.y);
  const FirTaps<Fir::kTaps> taps = load_fir_taps<Fir::kTaps>(job);
  const auto read = [x](int32_t offset) {
    FirLanes<kPack> v;
    load_lanes(x + offset, 0, v.v);
    return v;
  };
  const auto write = [y](int32_t offset, const FirLanes<kPack>& v) { store_lanes(y + offset, 0, v.v); };
  for (int32_t row = blockIdx.y; row < rows; row += gridDim.y) {
    upfirdn2d_lanes_thread<int32_t, Fir, kPack>(job, taps, t, row, read, write);
  }
}

template <typename T, typename Index>
__global__ void bias_act_kernel(const T* x, const T* b, T* y, Index numel, Index channels, Index inner,
                                ActivationParams a) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < numel; i += Index(gridDim.x) * blockDim.x) {
    const float bias = b != nullptr ? load(b, bias_channel<Index>(i, channels, inner)) : 0.0f;
    store(y, i, activate(load(x, i) + bias, a));
  }
}

template <typename T, typename Index>
__global__ void bias_act_grad_kernel(const T* dy, const T* y, T* dx, Index numel, ActivationParams a) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < numel; i += Index(gridDim.x) * blockDim.x) {
    store(dx, i, load(dy, i) * activation_slope(load(y, i), a));
  }
}

// The same two kernels 16 bytes at a time, for launches that runs_in_lanes takes: one thread's
// loads then keep a whole pack in flight instead of one 2-byte element, which is what an
// elementwise kernel needs to approach the GPU's memory bandwidth. packs = numel / kLanes<T>.
// channel_packs (runs_in_channel_packs: channels_last) loads a pack's biases as one pack too.
template <typename T, typename Index>
__global__ void bias_act_lanes_kernel(const T* x, const T* b, T* y, Index packs, Index channels, Index inner,
                                      ActivationParams a, bool channel_packs) {
  constexpr int kPackLanes = kLanes<T>;
  const auto bias_at = [b](Index c) { return b != nullptr ? load(b, c) : 0.0f; };
  const auto bias_pack_at = [b](Index c0, float (&bias)[kPackLanes]) { load_lanes(b, c0 / kPackLanes, bias); };
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < packs; i += Index(gridDim.x) * blockDim.x) {
    float v[kPackLanes];
    load_lanes(x, i, v);
    if (channel_packs) {
      bias_act_channel_pack<kPackLanes, Index>(v, i * kPackLanes, channels, a, bias_pack_at);
    } else {
      bias_act_lanes<kPackLanes, Index>(v, i * kPackLanes, channels, inner, a, bias_at);
    }
    store_lanes(y, i, v);
  }
}

template <typename T, typename Index>
__global__ void bias_act_grad_lanes_kernel(const T* dy, const T* y, T* dx, Index packs, ActivationParams a) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < packs; i += Index(gridDim.x) * blockDim.x) {
    float g[kLanes<T>], v[kLanes<T>];
    load_lanes(dy, i, g);
    load_lanes(y, i, v);
#pragma unroll
    for (int k = 0; k < kLanes<T>; ++k) g[k] *= activation_slope(v[k], a);
    store_lanes(dx, i, g);
  }
}

// Lanes float32 values in 16-byte loads (p + offset aligned: epilogue_runs_in_lanes).
template <int Lanes>
__device__ __forceinline__ void load_float4s(const float* p, int64_t offset, float (&v)[Lanes]) {
  static_assert(Lanes % 4 == 0, "whole float4 loads");
#pragma unroll
  for (int k = 0; k < Lanes; k += 4) {
    const float4 q = *reinterpret_cast<const float4*>(p + offset + k);
    v[k] = q.x;
    v[k + 1] = q.y;
    v[k + 2] = q.z;
    v[k + 3] = q.w;
  }
}

// The epilogue's memory as epilogue_elements.h's functions read and write it.
template <typename T>
struct EpilogueMemory {
  const T *x, *dy, *y;
  T* dx;

  __device__ explicit EpilogueMemory(const EpilogueLaunch& job)
      : x(static_cast<const T*>(job.x)), dy(static_cast<const T*>(job.dy)), y(static_cast<const T*>(job.y)),
        dx(static_cast<T*>(job.out)) {}
  __device__ void load_x(int64_t pack, float (&v)[kLanes<T>]) const { load_lanes(x, pack, v); }
  __device__ void load_dy(int64_t pack, float (&v)[kLanes<T>]) const { load_lanes(dy, pack, v); }
  __device__ void load_y(int64_t pack, float (&v)[kLanes<T>]) const { load_lanes(y, pack, v); }
  __device__ void load_floats(const float* p, int64_t offset, float (&v)[kLanes<T>]) const {
    load_float4s(p, offset, v);
  }
  __device__ void store_dx(int64_t pack, const float (&v)[kLanes<T>]) const { store_lanes(dx, pack, v); }
};

// A thread per pack: NCHW (epilogue_pack) or channels_last (epilogue_pixel_pack).
template <typename T, bool ChannelsLast>
__global__ void conv_epilogue_kernel(EpilogueLaunch job, ActivationParams a, int32_t packs) {
  const EpilogueMemory<T> memory(job);
  T* y = static_cast<T*>(job.out);
  for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += gridDim.x * blockDim.x) {
    float v[kLanes<T>];
    if constexpr (ChannelsLast) {
      epilogue_pixel_pack<kLanes<T>, int32_t>(job, a, i, memory, v);
    } else {
      epilogue_pack<kLanes<T>, int32_t>(job, a, i, memory, v);
    }
    store_lanes(y, i, v);
  }
}

constexpr int kWarp = 32;

__device__ __forceinline__ EpilogueSums warp_sum(EpilogueSums s) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    s.g_x += __shfl_xor_sync(0xffffffffu, s.g_x, offset);
    s.g += __shfl_xor_sync(0xffffffffu, s.g, offset);
    s.g_noise += __shfl_xor_sync(0xffffffffu, s.g_noise, offset);
  }
  return s;
}

// A warp per chunk of a plane (job.chunks per plane): every lane of a warp runs the same chunks, so
// the shuffles see the whole warp. sums: [planes, chunks, 3].
template <typename T, typename Index>
__global__ void conv_epilogue_grad_kernel(EpilogueLaunch job, ActivationParams a) {
  const EpilogueMemory<T> memory(job);
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const Index warps = Index(gridDim.x) * (blockDim.x / kWarp), chunks = Index(job.chunks);
  for (Index w = (blockIdx.x * Index(blockDim.x) + threadIdx.x) / kWarp; w < Index(job.planes) * chunks; w += warps) {
    const Index plane = w / chunks;
    const EpilogueSums sums =
        warp_sum(epilogue_grad_lane<kLanes<T>, Index>(job, a, plane, w - plane * chunks, lane, kWarp, memory));
    if (lane == 0) {
      job.sums[3 * w] = sums.g_x;
      job.sums[3 * w + 1] = sums.g;
      job.sums[3 * w + 2] = sums.g_noise;
    }
  }
}

// channels_last: a block of kEpilogueBlockThreads per run of a sample's pixels (job.chunks runs:
// epilogue_grad_pixel_chunks), a thread per pack of channels and row group (epilogue_grad_pixels);
// the row groups' sums are added up in shared memory, laid out [3 * Lanes][threads] so that
// neither the stores nor the first row group's reads conflict. sums: [N, chunks, channels, 3].
template <typename T>
__global__ void __launch_bounds__(kEpilogueBlockThreads) conv_epilogue_grad_pixels_kernel(EpilogueLaunch job,
                                                                                          ActivationParams a) {
  constexpr int kPackLanes = kLanes<T>, kBlock = kEpilogueBlockThreads;
  __shared__ float shared[3 * kPackLanes * kBlock];
  const EpilogueMemory<T> memory(job);
  const int32_t packs_per_pixel = static_cast<int32_t>(job.channels) / kPackLanes;
  const int32_t row_groups = kBlock / packs_per_pixel, chunks = static_cast<int32_t>(job.chunks);
  const int32_t n = blockIdx.x / chunks, chunk = blockIdx.x - n * chunks;
  const int32_t t = threadIdx.x, channel_pack = t % packs_per_pixel, row_group = t / packs_per_pixel;
  EpilogueSums sums[kPackLanes];
  if (row_group < row_groups) {
    epilogue_grad_pixels<kPackLanes, int32_t>(job, a, n, chunk, channel_pack, row_group, row_groups, memory, sums);
  }
#pragma unroll
  for (int k = 0; k < kPackLanes; ++k) {
    shared[(3 * k) * kBlock + t] = sums[k].g_x;
    shared[(3 * k + 1) * kBlock + t] = sums[k].g;
    shared[(3 * k + 2) * kBlock + t] = sums[k].g_noise;
  }
  __syncthreads();
  if (row_group != 0) return;
  float* out = job.sums + ((int64_t{n} * chunks + chunk) * job.channels + channel_pack * kPackLanes) * 3;
  for (int j = 0; j < 3 * kPackLanes; ++j) {
    float total = 0.0f;
    for (int32_t group = 0; group < row_groups; ++group) total += shared[j * kBlock + group * packs_per_pixel + t];
    out[j] = total;  // j = 3 * lane + which sum, as [channels, 3]
  }
}

// Calls fn(T{}) with the storage type's tag.
template <typename Fn>
void with_type(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::Float32: return fn(float{});
    case ElementType::Float16: return fn(__half{});
    case ElementType::BFloat16: return fn(__nv_bfloat16{});
  }
}

// Calls fn(T{}, Index{}) with the storage type's tag and the narrowest index type that fits.
template <typename Fn>
void with_types(ElementType type, bool use_32bit_indices, Fn&& fn) {
  with_type(type, [&](auto tag) {
    if (use_32bit_indices) return fn(tag, int32_t{});
    fn(tag, int64_t{});
  });
}

// upfirdn2d_lanes_kernel on the launch (fir_runs_in_lanes holds).
template <typename T, typename Fir>
void launch_in_lanes(const FirLaunch& job, cudaStream_t stream) {
  const FirLanesGrid lanes = fir_lanes_grid<Fir>(job, kLanes<T>);
  const dim3 grid(static_cast<unsigned int>(lanes.blocks_x), static_cast<unsigned int>(std::min(lanes.rows, kMaxGridY)));
  upfirdn2d_lanes_kernel<T, Fir><<<grid, kFirLanesBlock, 0, stream>>>(
      job, static_cast<int32_t>(lanes.threads_per_row), static_cast<int32_t>(lanes.rows));
}

}  // namespace

void launch_upfirdn2d(const FirLaunch& job, ElementType type, void* stream, Kernel kernel) {
  const int64_t total = job.batch * job.channels * job.out_h * job.out_w;
  if (total == 0) return;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const auto tiled = [&](auto fir) {
    using Fir = decltype(fir);
    with_type(type, [&](auto tag) {
      using T = decltype(tag);
      const bool in_lanes = kernel != Kernel::Tiled;  // Auto or ChannelLanes (PerElement never gets here)
      if (in_lanes && fir_runs_in_lanes(job, kLanes<T>)) {
        launch_in_lanes<T, Fir>(job, cuda_stream);
        return;
      }
      const FirTiles tiles = fir_tiles(job, Fir::kOutputs);
      const dim3 grid(static_cast<unsigned int>(tiles.x), static_cast<unsigned int>(tiles.y),
                      static_cast<unsigned int>(fir_grid_z(tiles)));
      upfirdn2d_tiled_kernel<T, Fir><<<grid, dim3(kTileX, kTileY), 0, cuda_stream>>>(
          job, static_cast<int32_t>(tiles.slices));
    });
  };
  if (kernel == Kernel::PerElement || !with_fixed_fir(job, tiled)) {
    with_types(type, fits_32bit_indices(job), [&](auto tag, auto index) {
      using T = decltype(tag);
      using Index = decltype(index);
      upfirdn2d_kernel<T, Index><<<blocks_for(total), kThreads, 0, cuda_stream>>>(job, Index(total));
    });
  }
  check_launch("upfirdn2d");
}

void launch_bias_act(const void* x, const void* b, void* y, int64_t numel, int64_t channels, int64_t inner,
                     const ActivationParams& a, ElementType type, void* stream, bool allow_lanes) {
  if (numel == 0) return;
  with_types(type, fits_32bit_indices(numel), [&](auto tag, auto index) {
    using T = decltype(tag);
    using Index = decltype(index);
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    const T *xt = static_cast<const T*>(x), *bt = static_cast<const T*>(b);
    if (allow_lanes && runs_in_lanes(numel, kLanes<T>, {x, y})) {
      const int64_t packs = numel / kLanes<T>;
      bias_act_lanes_kernel<T, Index><<<blocks_for(packs), kThreads, 0, cuda_stream>>>(
          xt, bt, static_cast<T*>(y), Index(packs), Index(channels), Index(inner), a,
          runs_in_channel_packs(channels, inner, kLanes<T>, b));
    } else {
      bias_act_kernel<T, Index><<<blocks_for(numel), kThreads, 0, cuda_stream>>>(
          xt, bt, static_cast<T*>(y), Index(numel), Index(channels), Index(inner), a);
    }
  });
  check_launch("bias_act");
}

void launch_bias_act_grad(const void* dy, const void* y, void* dx, int64_t numel, const ActivationParams& a,
                          ElementType type, void* stream, bool allow_lanes) {
  if (numel == 0) return;
  with_types(type, fits_32bit_indices(numel), [&](auto tag, auto index) {
    using T = decltype(tag);
    using Index = decltype(index);
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    const T *dyt = static_cast<const T*>(dy), *yt = static_cast<const T*>(y);
    if (allow_lanes && runs_in_lanes(numel, kLanes<T>, {dy, y, dx})) {
      const int64_t packs = numel / kLanes<T>;
      bias_act_grad_lanes_kernel<T, Index><<<blocks_for(packs), kThreads, 0, cuda_stream>>>(
          dyt, yt, static_cast<T*>(dx), Index(packs), a);
    } else {
      bias_act_grad_kernel<T, Index><<<blocks_for(numel), kThreads, 0, cuda_stream>>>(
          dyt, yt, static_cast<T*>(dx), Index(numel), a);
    }
  });
  check_launch("bias_act_grad");
}

void launch_conv_epilogue(const EpilogueLaunch& job, const ActivationParams& a, ElementType type, void* stream) {
  if (!epilogue_runs_in_lanes(job, type)) {
    throw std::runtime_error("conv_epilogue: a launch not in whole aligned packs");
  }
  if (job.planes == 0 || job.plane_elements == 0) return;
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t packs = job.planes * job.plane_elements / kLanes<T>;
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    const auto launch = [&](auto kernel) {
      kernel<<<blocks_for(packs), kThreads, 0, cuda_stream>>>(job, a, static_cast<int32_t>(packs));
    };
    if (job.channels_last) {
      launch(conv_epilogue_kernel<T, true>);
    } else {
      launch(conv_epilogue_kernel<T, false>);
    }
  });
  check_launch("conv_epilogue");
}

void launch_conv_epilogue_grad(const EpilogueLaunch& job, const ActivationParams& a, ElementType type, void* stream) {
  if (!epilogue_runs_in_lanes(job, type)) {
    throw std::runtime_error("conv_epilogue_grad: a launch not in whole aligned packs");
  }
  if (job.planes == 0) return;
  with_type(type, [&](auto tag) {
    const auto cuda_stream = static_cast<cudaStream_t>(stream);
    if (job.channels_last) {
      const auto blocks = static_cast<unsigned int>(job.planes / job.channels * job.chunks);
      conv_epilogue_grad_pixels_kernel<decltype(tag)><<<blocks, kEpilogueBlockThreads, 0, cuda_stream>>>(job, a);
    } else {
      conv_epilogue_grad_kernel<decltype(tag), int32_t>
          <<<blocks_for(job.planes * job.chunks * kWarp), kThreads, 0, cuda_stream>>>(job, a);
    }
  });
  check_launch("conv_epilogue_grad");
}

namespace {
__global__ void kernel_image_probe() {}
}  // namespace

std::string kernel_image_error(int device) {
  int previous = 0;
  cudaError_t status = cudaGetDevice(&previous);
  if (status == cudaSuccess) status = cudaSetDevice(device);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return cudaGetErrorString(status);
  }
  cudaFuncAttributes attributes{};
  status = cudaFuncGetAttributes(&attributes, kernel_image_probe);
  cudaGetLastError();  // a missing image is an answer here, not an error for the next call
  cudaSetDevice(previous);
  return status == cudaSuccess ? "" : cudaGetErrorString(status);
}

}  // namespace sg2::ops::cuda
