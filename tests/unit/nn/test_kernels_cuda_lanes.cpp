// upfirdn2d's tiled kernels in 16-byte lanes of channels, unstaged and staged in shared memory
// (src/nn/cuda/fir_lanes_elements.h, fir_staged_elements.h). On every machine: the launches run on
// the host, thread by thread over their whole grids (block by block, phase by phase, staged),
// against the generic kernel's sums (bit for bit) and the definition, and which launches take them.
// On a GPU: the kernels themselves in every precision against the tiled and generic kernels and the
// definition.
#include "sg2/core/scoped_setting.h"
#include "sg2/nn/kernels.h"
#include "sg2/nn/ops.h"
#include "sg2/nn/upfirdn2d.h"
#include "cuda/fir_kernel_choice.h"
#include "cuda/fir_staged_elements.h"
#include "fir_host_launch.h"
#include "nn_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sg2::nn {
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

// The staged launch run on the host: every block, its threads' phase 1 into a poisoned stage, then
// their phase 2 (the barrier between them).
template <int Lanes>
bool run_staged_on_host(HostLanes<Lanes>& host) {
  return cuda::with_fixed_fir(host.job, [&](auto fir) {
    using Fir = decltype(fir);
    using Tile = cuda::FirStagedTile<Fir>;
    const auto taps = cuda::load_fir_taps<Fir::kTaps>(host.job);
    const cuda::FirStagedGrid grid = cuda::fir_staged_grid<Fir>(host.job, Lanes);
    std::vector<cuda::FirLanes<Lanes>> stage(Tile::kInPacks);
    const auto copy = [&](int i, int32_t offset) { stage.at(static_cast<size_t>(i)) = host.read(offset); };
    const auto zero = [&](int i) { stage.at(static_cast<size_t>(i)) = cuda::FirLanes<Lanes>{}; };
    const auto load = [&](int i) { return stage.at(static_cast<size_t>(i)); };
    const auto write = [&](int32_t offset, const cuda::FirLanes<Lanes>& v) { host.write(offset, v); };
    cuda::FirLanes<Lanes> poison;
    for (float& v : poison.v) v = NAN;
    for (int32_t pack_tile = 0; pack_tile < grid.pack_tiles; ++pack_tile) {
      for (int32_t row_tile = 0; row_tile < grid.row_tiles; ++row_tile) {
        for (int32_t column_tile = 0; column_tile < grid.column_tiles; ++column_tile) {
          const auto origin = cuda::fir_staged_origin<int32_t, Fir>(host.job, column_tile, row_tile, pack_tile);
          std::fill(stage.begin(), stage.end(), poison);
          for (int t = 0; t < Tile::kThreads; ++t) {
            cuda::fir_staged_load<int32_t, Fir, Lanes>(host.job, origin, t, copy, zero);
          }
          for (int t = 0; t < Tile::kThreads; ++t) {
            cuda::fir_staged_thread<int32_t, Fir, Lanes>(host.job, taps, origin, t, load, write);
          }
        }
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
// kernel's sums, by the lanes launch and by the staged one.
template <int Lanes, typename RunOnHost>
void expect_launch_matches_the_generic_sums(const std::string& launch, const RunOnHost& run_on_host) {
  at::manual_seed(11);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const at::Tensor small = at::randn({2, 16, 5, 7}).contiguous(channels_last);
  const at::Tensor wide = at::randn({3, 24, 9, 13}).contiguous(channels_last);
  const at::Tensor tiles = at::randn({2, 72, 21, 37}).contiguous(channels_last);  // several staged tiles each way
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

TEST(CudaKernelArithmetic, StagedUpfirdn2dWritesEveryOutputOnceWithTheGenericSums) {
  expect_launch_matches_the_generic_sums<4>("staged", run_staged_on_host<4>);
  expect_launch_matches_the_generic_sums<8>("staged", run_staged_on_host<8>);
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
  EXPECT_EQ(kernels::upfirdn2d_kernel_run(single(24), f, p), kernels::FirKernelRun::Generic);  // on the CPU
}

// The kernels on the GPU: in every precision, channels_last with 24, 32 and 72 channels (whole
// lanes of 8 and 4; 72 leaves a staged block's last lanes idle) and shapes of several staged tiles
// each way, the staged kernel and the unstaged lanes one give the same values as the tiled and
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
        EXPECT_EQ(kernels::upfirdn2d_kernel_run(on_gpu, f, p), kernels::FirKernelRun::InLanes) << where;
        EXPECT_EQ(kernels::upfirdn2d_kernel_run(on_gpu.contiguous(), f, p), kernels::FirKernelRun::Tiled) << where;
        const at::Tensor fastest = kernels::upfirdn2d_forward(on_gpu, f, p);  // one of the two, timed
        const at::Tensor staged = kernels::upfirdn2d_forward(on_gpu, f, p, kernels::KernelVariant::Staged);
        const at::Tensor lanes = kernels::upfirdn2d_forward(on_gpu, f, p, kernels::KernelVariant::Lanes);
        const at::Tensor tiled = kernels::upfirdn2d_forward(on_gpu, f, p, kernels::KernelVariant::Tiled);
        const at::Tensor generic = kernels::upfirdn2d_forward(on_gpu, f, p, kernels::KernelVariant::Generic);
        for (const at::Tensor& y : {fastest, staged, lanes}) {
          EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast)) << where;
          // The same sums (nvcc may contract each kernel's multiply-adds its own way).
          EXPECT_TRUE(close(y, generic, precision.tolerance)) << where;
          EXPECT_TRUE(close(y, tiled, precision.tolerance)) << where;
          EXPECT_LT(max_relative_error(y.cpu(), upfirdn2d_direct(stored, f.cpu(), p)), precision.tolerance) << where;
        }
        EXPECT_TRUE(close(staged, lanes, precision.tolerance)) << where;
      }
    }
  }
}

// upfirdn2d's Fastest variant in lanes: the staged or the unstaged kernel, whichever a shape's first
// launch timed faster (fir_kernel_choice.h), here with made-up timings.
using cuda::FirKernel;
using cuda::FirKernelChoices;

cuda::FirShapeKey key_of(int64_t channels) {
  cuda::FirLaunch job{};
  job.channels = channels;
  return cuda::fir_shape_key(job, cuda::ElementType::Float16, 0);
}

TEST(FirKernelChoice, TimesEachShapeOnceAndKeepsTheFasterKernel) {
  FirKernelChoices choices;
  std::map<FirKernel, int> timed;
  const auto lanes_faster = [&](FirKernel kernel) {
    ++timed[kernel];
    return kernel == FirKernel::Lanes ? 0.5 : 0.8;
  };
  const auto staged_faster = [&](FirKernel kernel) {
    ++timed[kernel];
    return kernel == FirKernel::Staged ? 0.5 : 0.8;
  };
  EXPECT_FALSE(choices.chosen(key_of(128)));
  EXPECT_EQ(choices.choose(key_of(128), lanes_faster), FirKernel::Lanes);
  EXPECT_EQ((std::map<FirKernel, int>{{FirKernel::Staged, 1}, {FirKernel::Lanes, 1}}), timed);
  EXPECT_EQ(choices.choose(key_of(128), staged_faster), FirKernel::Lanes);  // kept: not timed again
  EXPECT_EQ(timed[FirKernel::Staged], 1);
  EXPECT_EQ(choices.choose(key_of(256), staged_faster), FirKernel::Staged);  // another shape: timed
  EXPECT_EQ(timed[FirKernel::Staged], 2);
  EXPECT_EQ(choices.chosen(key_of(128)), FirKernel::Lanes);
  EXPECT_EQ(choices.chosen(key_of(256)), FirKernel::Staged);
  EXPECT_EQ((std::map<FirKernel, int>{{FirKernel::Staged, 1}, {FirKernel::Lanes, 1}}), choices.counts());
}

TEST(FirKernelChoice, KeepsTheStagedKernelOnATieOrWithoutAUsableTiming) {
  FirKernelChoices choices;
  EXPECT_EQ(choices.choose(key_of(8), [](FirKernel) { return 1.0; }), FirKernel::Staged);
  EXPECT_EQ(choices.choose(key_of(16), [](FirKernel) { return static_cast<double>(NAN); }), FirKernel::Staged);
  EXPECT_EQ(choices.choose(key_of(24), [](FirKernel) { return 0.0; }), FirKernel::Staged);
  // A staged kernel that cannot take the launch (NaN) leaves the unstaged one, however slow.
  const auto staged_unusable = [](FirKernel kernel) { return kernel == FirKernel::Staged ? NAN : 100.0; };
  EXPECT_EQ(choices.choose(key_of(32), staged_unusable), FirKernel::Lanes);
  const auto staged_infinite = [](FirKernel kernel) { return kernel == FirKernel::Staged ? INFINITY : 100.0; };
  EXPECT_EQ(choices.choose(key_of(40), staged_infinite), FirKernel::Lanes);
}

TEST(FirKernelChoice, AShapeWhoseTimingThrowsStaysUntimed) {
  FirKernelChoices choices;
  const auto failing = [](FirKernel) -> double { throw std::runtime_error("cudaEventCreate failed"); };
  EXPECT_THROW(choices.choose(key_of(8), failing), std::runtime_error);
  EXPECT_FALSE(choices.chosen(key_of(8)));
  EXPECT_EQ(choices.choose(key_of(8), [](FirKernel kernel) { return kernel == FirKernel::Lanes ? 1.0 : 2.0; }),
            FirKernel::Lanes);  // and the lock was let go
}

// What a launch's speed depends on tells shapes apart; its pointers, gain and taps do not.
TEST(FirKernelChoice, TheKeyHoldsWhatALaunchsSpeedDependsOn) {
  const at::Tensor x = at::zeros({2, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const ops::FirParams p{1, 2, {1, 1, 1, 1}, false, 1.0};
  const auto key = [&](const at::Tensor& x, const ops::FirParams& p, cuda::ElementType type, int device) {
    const auto [out_h, out_w] = kernels::upfirdn2d_output_size(x, f, p);
    return cuda::fir_shape_key(kernels::gpu::fir_launch(x, f, p, out_h, out_w), type, device);
  };
  const auto float16 = cuda::ElementType::Float16;
  const cuda::FirShapeKey base = key(x, p, float16, 0);
  ops::FirParams other_gain = p;
  other_gain.gain = 4.0;
  EXPECT_EQ(key(x.clone(), other_gain, float16, 0), base);  // another allocation, another gain
  EXPECT_NE(key(x, p, cuda::ElementType::Float32, 0), base);
  EXPECT_NE(key(x, p, float16, 1), base);
  EXPECT_NE(key(x.contiguous(), p, float16, 0), base);                                 // NCHW
  EXPECT_NE(key(at::zeros({2, 24, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast), p, float16, 0), base);
  EXPECT_NE(key(at::zeros({3, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast), p, float16, 0), base);
  EXPECT_NE(key(x.slice(2, 0, 6), p, float16, 0), base);                                // fewer rows
  EXPECT_NE(key(at::zeros({2, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast), ops::FirParams{2, 1, {2, 1, 2, 1}, false, 4.0},
                float16, 0),
            base);                                                                       // up, not down
  EXPECT_NE(key(x, ops::FirParams{1, 2, {2, 0, 1, 1}, false, 1.0}, float16, 0), base);  // padding
}

// The FIR kernel policy for a scope, the one before it back after.
class FirKernelPolicyScope : public ScopedSetting<kernels::FirKernelPolicy> {
 public:
  explicit FirKernelPolicyScope(kernels::FirKernelPolicy policy)
      : ScopedSetting(kernels::fir_kernel_policy, kernels::set_fir_kernel_policy, policy) {}
};

// The shapes timed so far, from the summary's "staged N, unstaged M".
int timed_shapes() {
  int staged = 0, unstaged = 0;
  EXPECT_EQ(std::sscanf(kernels::upfirdn2d_timing_summary().c_str(), "staged %d, unstaged %d", &staged, &unstaged), 2)
      << kernels::upfirdn2d_timing_summary();
  return staged + unstaged;
}

// On a GPU: under FirKernelPolicy::Autotune, the Fastest variant times a shape on its first launch,
// then runs the kernel it timed faster (the two kernels' outputs are equal, so the launcher's record
// of the kernel it ran tells); under Staged or Unstaged, that kernel, and it times nothing.
TEST(CudaKernels, FastestUpfirdn2dRunsTheKernelItTimedFasterForTheShape) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(13);
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1}).cuda();
  const auto half_nhwc = at::TensorOptions().device(at::kCUDA).dtype(at::kHalf);
  {
    const FirKernelPolicyScope autotune(kernels::FirKernelPolicy::Autotune);
    for (const auto& p : kStyleGan2Cases) {
      const at::Tensor x = at::randn({4, 64, 33, 33}, half_nhwc).contiguous(at::MemoryFormat::ChannelsLast);
      const std::string where = "up " + std::to_string(p.up) + " down " + std::to_string(p.down);
      const bool new_shape = !kernels::upfirdn2d_timed_variant(x, f, p);
      const int timed_before = timed_shapes();
      const at::Tensor fastest = kernels::upfirdn2d_forward(x, f, p);
      const auto timed = kernels::upfirdn2d_timed_variant(x, f, p);
      ASSERT_TRUE(timed) << where;
      ASSERT_TRUE(*timed == kernels::KernelVariant::Staged || *timed == kernels::KernelVariant::Lanes) << where;
      EXPECT_EQ(timed_shapes(), timed_before + (new_shape ? 1 : 0)) << where;
      EXPECT_EQ(kernels::upfirdn2d_last_variant_in_lanes(), timed) << where;  // the winner's launch came last
      EXPECT_TRUE(at::equal(fastest, kernels::upfirdn2d_forward(x, f, p, *timed))) << where;
      const int timed_after = timed_shapes();
      const at::Tensor again = kernels::upfirdn2d_forward(x, f, p);
      EXPECT_EQ(timed_shapes(), timed_after) << where;  // not timed again
      EXPECT_EQ(kernels::upfirdn2d_last_variant_in_lanes(), timed) << where;
      EXPECT_TRUE(at::equal(again, fastest)) << where;
    }
  }
  const at::Tensor x = at::randn({2, 40, 19, 23}, half_nhwc).contiguous(at::MemoryFormat::ChannelsLast);
  const ops::FirParams& p = kStyleGan2Cases.front();
  const int timed_before = timed_shapes();
  using kernels::KernelVariant;
  for (const auto& [policy, variant] : {std::pair{kernels::FirKernelPolicy::Staged, KernelVariant::Staged},
                                        std::pair{kernels::FirKernelPolicy::Unstaged, KernelVariant::Lanes}}) {
    const FirKernelPolicyScope scope(policy);
    kernels::upfirdn2d_forward(x, f, p, variant == KernelVariant::Staged ? KernelVariant::Lanes : KernelVariant::Staged);
    const at::Tensor by_policy = kernels::upfirdn2d_forward(x, f, p);  // the other kernel ran last before it
    EXPECT_EQ(kernels::upfirdn2d_last_variant_in_lanes(), variant);
    EXPECT_TRUE(at::equal(by_policy, kernels::upfirdn2d_forward(x, f, p, variant)));
  }
  EXPECT_EQ(timed_shapes(), timed_before);
  EXPECT_FALSE(kernels::upfirdn2d_timed_variant(x, f, p));
}

}  // namespace
}  // namespace sg2::nn
