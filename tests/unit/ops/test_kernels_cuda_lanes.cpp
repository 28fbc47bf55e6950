// upfirdn2d's tiled kernel in 16-byte lanes of channels (src/ops/cuda/fir_lanes_elements.h). On
// every machine: the launch runs on the host, thread by thread over its whole grid, against the
// generic kernel's sums (bit for bit) and the definition, and which launches take it. On a GPU: the
// kernel itself in every precision against the tiled and generic kernels and the definition.
#include "sg2/ops/kernels.h"
#include "sg2/ops/ops.h"
#include "sg2/ops/upfirdn2d.h"
#include "fir_host_launch.h"
#include "ops_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace sg2::ops {
namespace {

using test::asymmetric_filter;
using test::kPrecisions;
using test::max_relative_error;
using test::Precision;
using test::upfirdn2d_by_elements;
using test::upfirdn2d_direct;

// Which offsets from x's first element are elements of x (a view's strides may skip memory).
std::vector<bool> element_offsets(const at::Tensor& x) {
  int64_t last = 0;
  for (int64_t d = 0; d < x.dim(); ++d) last += (x.size(d) - 1) * x.stride(d);
  std::vector<bool> inside(static_cast<size_t>(last + 1), false);
  const at::Tensor offsets = at::arange(x.size(0)).view({-1, 1, 1, 1}) * x.stride(0) +
                             at::arange(x.size(1)).view({1, -1, 1, 1}) * x.stride(1) +
                             at::arange(x.size(2)).view({1, 1, -1, 1}) * x.stride(2) +
                             at::arange(x.size(3)).view({1, 1, 1, -1}) * x.stride(3);
  const at::Tensor flat = offsets.flatten().contiguous();
  for (int64_t i = 0; i < flat.numel(); ++i) inside[static_cast<size_t>(flat.data_ptr<int64_t>()[i])] = true;
  return inside;
}

// x and a poisoned y (NaN: an output never written shows) as a lanes launch on the host sees them
// (Lanes float32 values a lane here, whatever the GPU's type would hold): read(offset) counts the
// samples read that are not elements of x (none may be: on a GPU, memory past x), write(offset, v)
// how often each output element was written.
template <int Lanes>
struct HostLanes {
  HostLanes(const at::Tensor& x, const at::Tensor& f_in, const ops::FirParams& p)
      : x(x), f(f_in.contiguous()), inside(element_offsets(x)) {
    const auto [out_h, out_w] = kernels::upfirdn2d_output_size(x, f, p);
    y = at::empty({x.size(0), x.size(1), out_h, out_w}, x.options().memory_format(ops::layout_of(x))).fill_(NAN);
    writes = at::zeros({y.numel()}, at::kInt);
    job = kernels::gpu::fir_launch(x, f, p, out_h, out_w);
    job.y = y.data_ptr();
  }
  cuda::FirLanes<Lanes> read(int32_t offset) {
    cuda::FirLanes<Lanes> v;
    for (int k = 0; k < Lanes; ++k) {
      const int64_t element = static_cast<int64_t>(offset) + k;
      const bool of_x = element >= 0 && element < static_cast<int64_t>(inside.size()) && inside[element];
      stray_reads += !of_x;
      v.v[k] = of_x ? x.data_ptr<float>()[element] : NAN;
    }
    return v;
  }
  void write(int32_t offset, const cuda::FirLanes<Lanes>& v) {
    for (int k = 0; k < Lanes; ++k) {
      y.data_ptr<float>()[offset + k] = v.v[k];
      ++writes.data_ptr<int32_t>()[offset + k];
    }
  }
  at::Tensor x, f, y, writes;
  std::vector<bool> inside;
  cuda::FirLaunch job;
  int64_t stray_reads = 0;
};

// The lanes launch run on the host: every thread of every row.
template <int Lanes>
bool run_lanes_on_host(HostLanes<Lanes>& host) {
  return cuda::with_fixed_fir(host.job, [&](auto fir) {
    using Fir = decltype(fir);
    const auto taps = cuda::load_fir_taps<Fir::kTaps>(host.job);
    const cuda::FirLanesGrid grid = cuda::fir_lanes_grid<Fir>(host.job, Lanes);
    const auto read = [&](int32_t offset) { return host.read(offset); };
    const auto write = [&](int32_t offset, const cuda::FirLanes<Lanes>& v) { host.write(offset, v); };
    const auto threads = static_cast<int32_t>(grid.blocks_x * cuda::kFirLanesBlock);  // the last block's idle ones too
    for (int32_t row = 0; row < static_cast<int32_t>(grid.rows); ++row) {
      for (int32_t t = 0; t < threads; ++t) {
        if (t >= grid.threads_per_row) continue;  // as the kernel returns
        cuda::upfirdn2d_lanes_thread<int32_t, Fir, Lanes>(host.job, taps, t, row, read, write);
      }
    }
  });
}

// Padding (x0, x1, y0, y1), negative where it crops, along either axis.
const std::vector<ops::FirParams> kStyleGan2Cases{
    {1, 1, {1, 2, 2, 1}, false, 1.0},  {2, 1, {2, 1, 2, 1}, false, 4.0},   {1, 2, {1, 1, 1, 1}, false, 1.0},
    {2, 1, {-1, 0, 3, 2}, true, 4.0},  {1, 2, {-1, 2, 3, -1}, true, 2.0},  {1, 1, {0, 0, 0, 0}, false, 1.0},
    {2, 1, {1, 2, -1, 2}, false, 4.0}, {1, 2, {2, -1, -1, 2}, true, 2.0}, {1, 1, {2, 1, -1, 0}, false, 1.0}};

// StyleGAN2's shapes (the 4x4 filter alone, up 2, down 2; cropping, flips), widths that leave a
// thread's last columns past the edge, heights that leave its second row past it (lanes_rows: the
// filter alone on 5 rows padded by 2 above and 1 below, say), rows cut from a larger tensor,
// channels that leave a block's last lanes idle: every output written once, with the generic
// kernel's sums.
template <int Lanes, typename RunOnHost>
void expect_launch_matches_the_generic_sums(const std::string& launch, const RunOnHost& run_on_host) {
  at::manual_seed(11);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const at::Tensor small = at::randn({2, 16, 5, 7}).contiguous(channels_last);
  const at::Tensor wide = at::randn({3, 24, 9, 13}).contiguous(channels_last);
  const at::Tensor tiles = at::randn({2, 72, 21, 37}).contiguous(channels_last);  // many rows and lanes
  for (const at::Tensor& f : {ops::setup_filter({1, 3, 3, 1}), asymmetric_filter()}) {
    for (const auto& p : kStyleGan2Cases) {
      for (const at::Tensor& view : {small, wide, wide.slice(2, 2, 7), wide.slice(3, 1, 10), tiles}) {
        if (view.size(1) % Lanes != 0) continue;
        HostLanes<Lanes> host(view, f, p);
        const std::string where = launch + ", lanes of " + std::to_string(Lanes) + ", up " + std::to_string(p.up) +
                                  " down " + std::to_string(p.down) + " view " +
                                  c10::str(view.sizes(), view.strides());
        ASSERT_TRUE(cuda::fir_runs_in_lanes(host.job, Lanes)) << where;
        ASSERT_TRUE(run_on_host(host)) << "no " << where;
        EXPECT_TRUE(host.writes.eq(1).all().template item<bool>()) << where;
        EXPECT_EQ(host.stray_reads, 0) << where;
        EXPECT_TRUE(host.y.eq(upfirdn2d_by_elements<int32_t>(view, f, p)).all().template item<bool>()) << where;
        EXPECT_LT(max_relative_error(host.y, upfirdn2d_direct(view, f, p)), 1e-6) << where;
      }
    }
  }
}

TEST(CudaKernelArithmetic, LanesUpfirdn2dWritesEveryOutputOnceWithTheGenericSums) {
  expect_launch_matches_the_generic_sums<4>("lanes", run_lanes_on_host<4>);  // float32
  expect_launch_matches_the_generic_sums<8>("lanes", run_lanes_on_host<8>);  // float16, bfloat16
}

// float32 in lanes of 4, float16 in lanes of 8 (16 bytes either way).
TEST(CudaKernelArithmetic, OnlyWholeAlignedChannelsLastLanesRunInLanes) {
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const ops::FirParams p{1, 1, {1, 2, 2, 1}, false, 1.0};
  const auto in_lanes = [&](const at::Tensor& x) {
    const auto [out_h, out_w] = kernels::upfirdn2d_output_size(x, f, p);
    const cuda::FirLaunch job = kernels::gpu::fir_launch(x, f, p, out_h, out_w);  // y: a fresh allocation
    return cuda::fir_runs_in_lanes(job, cuda::kLaneBytes / static_cast<int>(x.element_size()));
  };
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const auto half = [&](int64_t channels) { return at::zeros({2, channels, 8, 8}, at::kHalf).contiguous(channels_last); };
  const auto single = [&](int64_t channels) { return at::zeros({2, channels, 8, 8}).contiguous(channels_last); };
  EXPECT_TRUE(in_lanes(half(24)));
  EXPECT_TRUE(in_lanes(single(24)));
  EXPECT_TRUE(in_lanes(half(24).slice(2, 1, 7)));           // whole rows cut off: still aligned
  EXPECT_FALSE(in_lanes(at::zeros({2, 24, 8, 8})));         // NCHW
  EXPECT_FALSE(in_lanes(half(20)));                         // 20 channels: not whole lanes of 8
  EXPECT_TRUE(in_lanes(single(20)));                        // whole lanes of 4
  EXPECT_TRUE(in_lanes(half(24).slice(1, 8, 24)));          // channels 8 to 24: 16 bytes in, pixels 24 apart
  EXPECT_FALSE(in_lanes(half(24).slice(1, 4, 20)));         // channels 4 to 20: 8 bytes in
  EXPECT_FALSE(in_lanes(single(32).slice(1, 2, 18)));       // 8 bytes in
  EXPECT_FALSE(in_lanes(half(36).slice(1, 0, 16)));         // pixels 36 apart: every other one unaligned
  EXPECT_EQ(kernels::upfirdn2d_auto_kernel(single(24), f, p), Kernel::PerElement);  // on the CPU
}

// The kernels on the GPU: in every precision, channels_last with 24, 32 and 72 channels (whole
// lanes of 8 and 4), the lanes kernel (Auto's choice there) gives the same values as the tiled and
// generic kernels and the definition.
TEST(CudaKernels, LanesUpfirdn2dMatchesTheTiledAndGenericKernelsAndTheDefinition) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(12);
  const at::Tensor f = asymmetric_filter().cuda();
  const auto close = [](const at::Tensor& a, const at::Tensor& b, double tolerance) {
    return max_relative_error(a.cpu().to(at::kFloat), b.cpu().to(at::kFloat)) < tolerance;
  };
  for (const Precision& precision : kPrecisions) {
    for (const at::Tensor& x : {at::randn({3, 24, 13, 9}), at::randn({2, 32, 16, 17}), at::randn({2, 72, 21, 37})}) {
      const at::Tensor stored = x.to(precision.type);
      const at::Tensor on_gpu = stored.cuda().contiguous(at::MemoryFormat::ChannelsLast);
      for (const auto& p : kStyleGan2Cases) {
        const std::string where = "up " + std::to_string(p.up) + " down " + std::to_string(p.down) + " " +
                                  c10::toString(precision.type) + " " + c10::str(x.sizes());
        EXPECT_EQ(kernels::upfirdn2d_auto_kernel(on_gpu, f, p), Kernel::ChannelLanes) << where;
        EXPECT_EQ(kernels::upfirdn2d_auto_kernel(on_gpu.contiguous(), f, p), Kernel::Tiled) << where;
        const at::Tensor automatic = kernels::upfirdn2d_forward(on_gpu, f, p);
        const at::Tensor lanes = kernels::upfirdn2d_forward(on_gpu, f, p, Kernel::ChannelLanes);
        const at::Tensor tiled = kernels::upfirdn2d_forward(on_gpu, f, p, Kernel::Tiled);
        const at::Tensor generic = kernels::upfirdn2d_forward(on_gpu, f, p, Kernel::PerElement);
        EXPECT_TRUE(automatic.equal(lanes)) << where;  // the same kernel
        for (const at::Tensor& y : {lanes, tiled}) {
          EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast)) << where;
          // The same sums (nvcc may contract each kernel's multiply-adds its own way).
          EXPECT_TRUE(close(y, generic, precision.tolerance)) << where;
          EXPECT_LT(max_relative_error(y.cpu(), upfirdn2d_direct(stored, f.cpu(), p)), precision.tolerance) << where;
        }
        EXPECT_TRUE(close(lanes, tiled, precision.tolerance)) << where;
      }
    }
  }
}

}  // namespace
}  // namespace sg2::ops
