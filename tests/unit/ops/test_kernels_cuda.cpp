// The CUDA kernels (src/ops/cuda). On every machine: their per-element arithmetic, run on the host
// over whole tensors, against the definition and the reference ops. On a GPU: the kernels themselves
// in float32, float16 and bfloat16, strided views, bias_act in every activation, and derivatives to
// second order (R1 and path length need them); skipped where no GPU is present or the build has no
// CUDA kernels (a CPU LibTorch), and run by the GPU kit (scripts/gpu/run.sh).
#include "sg2/ops/kernels.h"
#include "kink_pinning.h"
#include "sg2/ops/ops.h"
#include "channel_layout.h"
#include "cuda/fir_bias_act_elements.h"
#include "cuda/kernels_cuda.h"
#include "fir_host_launch.h"
#include "ops_test_support.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sg2::ops {
namespace {

using test::asymmetric_filter;
using test::fir_cases;
using test::kPrecisions;
using test::Precision;
using test::max_relative_error;
using test::upfirdn2d_by_elements;
using test::upfirdn2d_direct;

// The tiled kernel's launch run on the host thread by thread over its whole grid (each thread's
// work is upfirdn2d_tile_thread, as on the GPU), with grid_z z blocks striding over the slices;
// writes counts how often each output was written.
at::Tensor upfirdn2d_by_tiles(const at::Tensor& x, const at::Tensor& f_in, const ops::FirParams& p, int32_t grid_z,
                              at::Tensor& writes) {
  const at::Tensor f = f_in.contiguous();
  const auto [out_h, out_w] = kernels::upfirdn2d_output_size(x, f, p);
  const cuda::FirLaunch job = kernels::gpu::fir_launch(x, f, p, out_h, out_w);
  at::Tensor y = at::empty({job.batch, job.channels, job.out_h, job.out_w},
                           at::TensorOptions().memory_format(ops::layout_of(x)))
                     .fill_(NAN);  // poisoned: an output never written shows
  writes = at::zeros({y.numel()}, at::kInt);
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  int32_t* count = writes.data_ptr<int32_t>();
  const bool tiled = cuda::with_fixed_fir(job, [&](auto fir) {
    using Fir = decltype(fir);
    const auto taps = cuda::load_fir_taps<Fir::kTaps>(job);
    const cuda::FirTiles tiles = cuda::fir_tiles(job, Fir::kOutputs);
    const auto read = [px](int32_t i) { return px[i]; };
    const auto write = [&](int32_t offset, float value) {
      py[offset] = value;
      ++count[offset];
    };
    for (int32_t z = 0; z < grid_z; ++z) {
      for (int32_t slice = z; slice < tiles.slices; slice += grid_z) {
        for (int32_t by = 0; by < tiles.y; ++by) {
          for (int32_t bx = 0; bx < tiles.x; ++bx) {
            for (int ty = 0; ty < cuda::kTileY; ++ty) {
              for (int tx = 0; tx < cuda::kTileX; ++tx) {
                cuda::upfirdn2d_tile_thread<int32_t, Fir>(job, taps, bx, by, slice, tx, ty, read, write);
              }
            }
          }
        }
      }
    }
  });
  EXPECT_TRUE(tiled) << "no tiled kernel for up " << p.up << " down " << p.down << " filter " << f.sizes();
  return y;
}

// Beyond fir_cases: upsampling by 4, cropping while upsampling, and down by 3 with a flipped filter.
std::vector<ops::FirParams> more_fir_cases() {
  std::vector<ops::FirParams> cases = fir_cases();
  cases.push_back({4, 1, {3, 2, -1, 4}, false, 16.0});
  cases.push_back({2, 1, {-3, 1, 2, -2}, false, 4.0});
  cases.push_back({1, 3, {2, 0, 1, 3}, true, 1.0});
  cases.push_back({3, 2, {0, 5, 4, -2}, false, 9.0});
  return cases;
}

TEST(CudaKernelArithmetic, Upfirdn2dElementsMatchTheDefinitionOnTheHost) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({2, 3, 7, 6}), big = at::randn({2, 4, 12, 11});
  for (const at::Tensor& f : {ops::setup_filter({1, 3, 3, 1}), asymmetric_filter(), asymmetric_filter().slice(0, 1)}) {
    for (const auto& p : more_fir_cases()) {
      const auto channels_last = at::MemoryFormat::ChannelsLast;
      for (const at::Tensor& view : {x, big.slice(1, 1, 3).slice(2, 2, 9), big.transpose(2, 3), x.contiguous(channels_last),
                                     x.contiguous(channels_last).slice(2, 1, 6), big.slice(1, 0, 1).contiguous(channels_last)}) {
        const at::Tensor expected = upfirdn2d_direct(view, f, p);
        EXPECT_LT(max_relative_error(upfirdn2d_by_elements<int64_t>(view, f, p), expected), 1e-6)
            << "up " << p.up << " down " << p.down << " view " << view.sizes() << " filter " << f.sizes();
        EXPECT_TRUE(upfirdn2d_by_elements<int32_t>(view, f, p).equal(upfirdn2d_by_elements<int64_t>(view, f, p)))
            << "32-bit indices, up " << p.up << " down " << p.down << " view " << view.sizes();
      }
    }
  }
}

// StyleGAN2's shapes (the 4x4 filter alone, up 2, down 2; cropping, flips) in both layouts and in
// strided views: every output written once, the generic kernel's sums, which match the definition.
TEST(CudaKernelArithmetic, TiledUpfirdn2dWritesEveryOutputOnceWithTheGenericSums) {
  at::manual_seed(7);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const at::Tensor x = at::randn({2, 3, 7, 6}), wide = at::randn({2, 18, 5, 9});
  const std::vector<ops::FirParams> cases{{1, 1, {1, 2, 2, 1}, false, 1.0}, {2, 1, {2, 1, 2, 1}, false, 4.0},
                                          {1, 2, {1, 1, 1, 1}, false, 1.0}, {2, 1, {-1, 0, 3, 2}, true, 4.0},
                                          {1, 2, {-1, 2, 3, -1}, true, 2.0}, {1, 1, {0, 0, 0, 0}, false, 1.0}};
  for (const at::Tensor& f : {ops::setup_filter({1, 3, 3, 1}), asymmetric_filter()}) {
    for (const auto& p : cases) {
      for (const at::Tensor& view : {x, x.transpose(2, 3), wide.slice(1, 1, 3).slice(3, 2, 8), wide.contiguous(channels_last),
                                     wide.contiguous(channels_last).slice(2, 1, 5)}) {
        for (const int32_t grid_z : {1, 5, 1 << 16}) {
          at::Tensor writes;
          const at::Tensor y = upfirdn2d_by_tiles(view, f, p, grid_z, writes);
          const std::string where = "up " + std::to_string(p.up) + " down " + std::to_string(p.down) + " grid_z " +
                                    std::to_string(grid_z) + " view " + c10::str(view.sizes(), view.strides());
          EXPECT_TRUE(writes.eq(1).all().item<bool>()) << where;
          // The same sums in value (a sample outside the input adds a zero of either sign, or nothing).
          EXPECT_TRUE(y.eq(upfirdn2d_by_elements<int32_t>(view, f, p)).all().item<bool>()) << where;
          EXPECT_LT(max_relative_error(y, upfirdn2d_direct(view, f, p)), 1e-6) << where;
        }
      }
    }
  }
}

// A thread strides over about four slices where the grid stays large, over one where it would not.
TEST(CudaKernelArithmetic, TiledGridsStayLargeAndWithinCudasLimits) {
  EXPECT_EQ(cuda::fir_grid_z({8, 32, 4096}), 1024);      // config-f's 256x256 calls: 262,144 blocks
  EXPECT_EQ(cuda::fir_grid_z({1, 1, 16384}), 4096);      // 8x8 planes: 4096 blocks, four slices each
  EXPECT_EQ(cuda::fir_grid_z({1, 1, 2000}), 2000);       // fewer slices than kMinBlocks: one each
  EXPECT_EQ(cuda::fir_grid_z({2, 2, 5000}), 1250);
  EXPECT_EQ(cuda::fir_grid_z({1, 1, 1 << 20}), 65535);   // CUDA's limit on z
  EXPECT_EQ(cuda::fir_grid_z({1, 1, 3}), 3);
}

TEST(CudaKernelArithmetic, OnlyStyleGan2sFirShapesRunTiled) {
  const at::Tensor f4 = ops::setup_filter({1, 3, 3, 1}), f3 = ops::setup_filter({1, 2, 1});
  const auto tiled = [](const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p) {
    const auto [out_h, out_w] = kernels::upfirdn2d_output_size(x, f, p);
    return cuda::with_fixed_fir(kernels::gpu::fir_launch(x, f, p, out_h, out_w), [](auto) {});
  };
  const at::Tensor nchw = at::empty({2, 3, 8, 8});
  const ops::FirParams filter{1, 1, {1, 2, 1, 2}, false, 1.0}, up{2, 1, {2, 1, 2, 1}, false, 4.0},
      down{1, 2, {1, 1, 1, 1}, false, 1.0}, up_down{2, 2, {1, 0, 0, 1}, false, 1.0}, up4{4, 1, {2, 1, 2, 1}, false, 16.0};
  EXPECT_TRUE(tiled(nchw, f4, filter));
  EXPECT_TRUE(tiled(nchw, f4, up));
  EXPECT_TRUE(tiled(nchw, f4, down));
  EXPECT_FALSE(tiled(nchw, f4, up_down));
  EXPECT_FALSE(tiled(nchw, f4, up4));
  EXPECT_FALSE(tiled(nchw, f3, ops::FirParams{1, 1, {1, 1, 1, 1}, false, 1.0}));
  EXPECT_TRUE(tiled(at::empty({2, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast), f4, up));
  EXPECT_FALSE(tiled(at::empty({2, 3, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast), f4, up));  // RGB: generic
}

// The tap span against every tap tried one by one, for every small up, down, padding and length.
TEST(CudaKernelArithmetic, TapSpansHoldExactlyTheTapsThatReadASample) {
  for (int up = 1; up <= 4; ++up) {
    for (int down = 1; down <= 3; ++down) {
      for (int pad = -5; pad <= 5; ++pad) {
        for (int taps = 1; taps <= 6; ++taps) {
          for (int64_t in_len = 1; in_len <= 5; ++in_len) {
            for (int64_t o = 0; o < 12; ++o) {
              std::vector<std::pair<int, int64_t>> expected, spanned;
              for (int k = 0; k < taps; ++k) {
                const int64_t v = o * down + k - pad;
                if (v >= 0 && v < in_len * up && v % up == 0) expected.emplace_back(k, v / up);
              }
              const auto span = cuda::fir_tap_span<int64_t>(o, taps, down, pad, up, in_len);
              for (int j = 0; j < span.count; ++j) spanned.emplace_back(span.first_tap + j * up, span.first_src + j);
              ASSERT_EQ(spanned, expected) << "up " << up << " down " << down << " pad " << pad << " taps " << taps
                                           << " in_len " << in_len << " o " << o;
              const auto narrow = cuda::fir_tap_span<int32_t>(static_cast<int32_t>(o), taps, down, pad, up,
                                                               static_cast<int32_t>(in_len));
              ASSERT_EQ(narrow.count, span.count);
              if (span.count > 0) {
                ASSERT_EQ(narrow.first_src, span.first_src);
              }
            }
          }
        }
      }
    }
  }
}

TEST(CudaKernelArithmetic, LaunchesPastTwoToTheThirtyUse64BitIndices) {
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const ops::FirParams up{2, 1, {2, 1, 2, 1}, false, 4.0};
  const cuda::FirLaunch small = kernels::gpu::fir_launch(at::empty({4, 512, 8, 8}), f, up, 16, 16);
  EXPECT_TRUE(cuda::fits_32bit_indices(small));
  cuda::FirLaunch many_outputs = small;  // 32 x 512 x 256 x 256 = 2^30 outputs
  many_outputs.batch = 32;
  many_outputs.out_h = many_outputs.out_w = 256;
  EXPECT_FALSE(cuda::fits_32bit_indices(many_outputs));
  cuda::FirLaunch far_input = small;  // few outputs, but a view whose last sample lies past 2^30
  far_input.stride_n = int64_t{1} << 29;
  EXPECT_FALSE(cuda::fits_32bit_indices(far_input));
  cuda::FirLaunch wide_padding = small;
  wide_padding.pad_x0 = -(1 << 29);
  EXPECT_FALSE(cuda::fits_32bit_indices(wide_padding));
  EXPECT_TRUE(cuda::fits_32bit_indices(int64_t{1} << 29));
  EXPECT_FALSE(cuda::fits_32bit_indices(int64_t{1} << 30));
}

TEST(CudaKernelArithmetic, ChannelsLastInputsGiveChannelsLastOutputsInThreadOrder) {
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const ops::FirParams up{2, 1, {2, 1, 2, 1}, false, 4.0};
  const at::Tensor x = at::empty({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  const cuda::FirLaunch job = kernels::gpu::fir_launch(x, f, up, 8, 10);
  EXPECT_TRUE(job.channels_last);
  const auto first = cuda::output_position<int64_t>(job, 0), next = cuda::output_position<int64_t>(job, 1);
  const auto row = cuda::output_position<int64_t>(job, 3 * 10), sample = cuda::output_position<int64_t>(job, 3 * 80);
  EXPECT_EQ(std::vector<int64_t>({first.n, first.c, first.oy, first.ox}), std::vector<int64_t>({0, 0, 0, 0}));
  EXPECT_EQ(std::vector<int64_t>({next.n, next.c, next.oy, next.ox}), std::vector<int64_t>({0, 1, 0, 0}));
  EXPECT_EQ(std::vector<int64_t>({row.n, row.c, row.oy, row.ox}), std::vector<int64_t>({0, 0, 1, 0}));
  EXPECT_EQ(std::vector<int64_t>({sample.n, sample.c, sample.oy, sample.ox}), std::vector<int64_t>({1, 0, 0, 0}));
  EXPECT_FALSE(kernels::gpu::fir_launch(x.contiguous(), f, up, 8, 10).channels_last);
}

// The per-element kernel's arithmetic over x's memory, b's channel found as the launch finds it.
at::Tensor bias_act_by_elements(const at::Tensor& x, const at::Tensor& b, const cuda::ActivationParams& a) {
  const kernels::ChannelLayout l = kernels::channel_layout(x, 1);
  at::Tensor y = at::empty_like(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float bias = b.defined() ? b.data_ptr<float>()[cuda::bias_channel<int64_t>(i, l.channels, l.inner)] : 0.0f;
    y.data_ptr<float>()[i] = cuda::activate(x.data_ptr<float>()[i] + bias, a);
  }
  return y;
}

// In both layouts: the channel of each element of memory as the CUDA launch sees it (channel_layout).
TEST(CudaKernelArithmetic, BiasActElementsMatchTheReferenceOnTheHost) {
  at::manual_seed(6);
  const at::Tensor b = at::randn({5});
  for (const at::Tensor& x : {at::randn({3, 5, 4, 4}) * 2, (at::randn({3, 5, 4, 4}) * 2).contiguous(at::MemoryFormat::ChannelsLast)}) {
    for (const auto act : {ops::Activation::Linear, ops::Activation::Relu, ops::Activation::LRelu}) {
      for (const double clamp : {-1.0, 0.5}) {
        ops::BiasActParams p;
        p.act = act;
        p.clamp = clamp;
        const cuda::ActivationParams a{static_cast<int>(act), static_cast<float>(ops::default_alpha(act)),
                                       static_cast<float>(ops::default_gain(act)), static_cast<float>(clamp)};
        const at::Tensor expected = ops::bias_act_reference(x, b, p);
        const at::Tensor y = bias_act_by_elements(x, b, a);
        at::Tensor slope = at::empty_like(x);
        for (int64_t i = 0; i < x.numel(); ++i) {
          slope.data_ptr<float>()[i] = cuda::activation_slope(y.data_ptr<float>()[i], a);
        }
        EXPECT_LT(max_relative_error(y, expected), 1e-6) << ops::to_string(act) << " clamp " << clamp << " " << x.strides();
        // The slope is the reference's gradient of sum(y) with respect to x.
        at::Tensor xr = x.clone().requires_grad_(true);
        ops::bias_act_reference(xr, b, p).sum().backward();
        EXPECT_LT(max_relative_error(slope, xr.grad()), 1e-6) << ops::to_string(act) << " clamp " << clamp;
      }
    }
  }
}

// x's memory through `pack(v, first)` Lanes elements at a time, as the vectorised kernel's threads
// run it, into a tensor like x.
template <int Lanes, typename Index, typename Pack>
at::Tensor by_packs(const at::Tensor& x, Pack pack) {
  at::Tensor y = at::empty_like(x);
  const float* px = x.data_ptr<float>();
  for (Index first = 0; first < static_cast<Index>(x.numel()); first += Lanes) {
    float v[Lanes];
    std::copy(px + first, px + first + Lanes, v);
    pack(v, first);
    std::copy(v, v + Lanes, y.data_ptr<float>() + first);
  }
  return y;
}

// The vectorised kernels' packs (bias_act_lanes) give each element exactly what the per-element
// kernel gives it, where packs cross channels: planes of 12 or 16 elements, channels_last and
// fully connected layouts, 4 and 8 lanes (float32; float16 and bfloat16), with and without a bias.
template <int Lanes, typename Index>
at::Tensor bias_act_by_packs(const at::Tensor& x, const at::Tensor& b, const cuda::ActivationParams& a) {
  const kernels::ChannelLayout l = kernels::channel_layout(x, 1);
  const float* pb = b.defined() ? b.data_ptr<float>() : nullptr;
  const auto bias_at = [pb](Index c) { return pb != nullptr ? pb[c] : 0.0f; };
  return by_packs<Lanes, Index>(x, [&](float (&v)[Lanes], Index first) {
    cuda::bias_act_lanes<Lanes, Index>(v, first, Index(l.channels), Index(l.inner), a, bias_at);
  });
}

// The same where runs_in_channel_packs takes the launch: a pack's biases loaded at once, as the
// kernel loads them (a pack of b from its first channel).
template <int Lanes, typename Index>
at::Tensor bias_act_by_channel_packs(const at::Tensor& x, const at::Tensor& b, const cuda::ActivationParams& a) {
  const kernels::ChannelLayout l = kernels::channel_layout(x, 1);
  EXPECT_TRUE(cuda::runs_in_channel_packs(l.channels, l.inner, Lanes, b.data_ptr())) << x.sizes() << x.strides();
  const float* pb = b.data_ptr<float>();
  const auto bias_pack_at = [pb](Index c0, float (&bias)[Lanes]) { std::copy(pb + c0, pb + c0 + Lanes, bias); };
  return by_packs<Lanes, Index>(x, [&](float (&v)[Lanes], Index first) {
    cuda::bias_act_channel_pack<Lanes, Index>(v, first, Index(l.channels), a, bias_pack_at);
  });
}

TEST(CudaKernelArithmetic, BiasActPacksGiveEachElementItsOwnChannel) {
  at::manual_seed(10);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const cuda::ActivationParams lrelu{2, 0.2f, 1.41421356f, 0.7f};
  for (const at::Tensor& x : {at::randn({2, 3, 3, 4}), at::randn({2, 5, 4, 4}), at::randn({2, 6, 3, 4}).contiguous(channels_last),
                              at::randn({2, 3, 2, 4}).contiguous(channels_last), at::randn({8, 12}), at::randn({8, 1})}) {
    const at::Tensor b = at::randn({x.size(1)});
    for (const at::Tensor& bias : {b, at::Tensor()}) {
      const at::Tensor expected = bias_act_by_elements(x, bias, lrelu);
      const std::string where = c10::str(x.sizes(), x.strides(), bias.defined() ? " bias" : " no bias");
      EXPECT_TRUE((bias_act_by_packs<4, int32_t>(x, bias, lrelu).equal(expected))) << "4 lanes " << where;
      EXPECT_TRUE((bias_act_by_packs<8, int32_t>(x, bias, lrelu).equal(expected))) << "8 lanes " << where;
      EXPECT_TRUE((bias_act_by_packs<8, int64_t>(x, bias, lrelu).equal(expected))) << "64-bit " << where;
    }
  }
  // Packs of whole runs of channels (channels_last, fully connected) take their biases as packs; where
  // the channels are not a multiple of the lanes, or NCHW, or without a bias, the launch does not.
  for (const at::Tensor& x : {at::randn({2, 16, 3, 4}).contiguous(channels_last), at::randn({4, 32}),
                              at::randn({3, 8, 1, 5}).contiguous(channels_last)}) {
    const at::Tensor b = at::randn({x.size(1)});
    const at::Tensor expected = bias_act_by_elements(x, b, lrelu);
    const std::string where = c10::str(x.sizes(), x.strides());
    EXPECT_TRUE((bias_act_by_channel_packs<4, int32_t>(x, b, lrelu).equal(expected))) << "4 lanes " << where;
    EXPECT_TRUE((bias_act_by_channel_packs<8, int32_t>(x, b, lrelu).equal(expected))) << "8 lanes " << where;
    EXPECT_TRUE((bias_act_by_channel_packs<8, int64_t>(x, b, lrelu).equal(expected))) << "64-bit " << where;
  }
  alignas(16) static const float bias[16] = {};
  EXPECT_FALSE(cuda::runs_in_channel_packs(12, 1, 8, bias));      // 1.5 packs of channels
  EXPECT_FALSE(cuda::runs_in_channel_packs(16, 12, 8, bias));     // NCHW planes
  EXPECT_FALSE(cuda::runs_in_channel_packs(16, 1, 8, bias + 1));  // the biases 4 bytes off
  EXPECT_FALSE(cuda::runs_in_channel_packs(16, 1, 8, nullptr));   // no bias
  EXPECT_TRUE(cuda::runs_in_channel_packs(16, 1, 8, bias));
}

TEST(CudaKernelArithmetic, OnlyWholeAlignedPacksRunInLanes) {
  alignas(16) static const float memory[16] = {};
  EXPECT_TRUE(cuda::runs_in_lanes(16, 4, {memory, memory + 4}));
  EXPECT_TRUE(cuda::runs_in_lanes(0, 8, {memory}));
  EXPECT_FALSE(cuda::runs_in_lanes(12, 8, {memory, memory}));  // 1.5 packs
  EXPECT_FALSE(cuda::runs_in_lanes(8, 4, {memory, memory + 1}));  // the second pointer 4 bytes off
  EXPECT_FALSE(cuda::runs_in_lanes(8, 4, {memory + 2}));
  EXPECT_EQ(cuda::kLanes<float>, 4);
  EXPECT_EQ(cuda::kLanes<uint16_t>, 8);  // float16 and bfloat16
}

TEST(CudaKernels, Upfirdn2dMatchesTheDefinitionInEveryPrecision) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(0);
  const at::Tensor x = at::randn({2, 3, 7, 6});
  for (const at::Tensor& f : {ops::setup_filter({1, 3, 3, 1}), asymmetric_filter()}) {
    for (const auto& p : fir_cases()) {
      for (const Precision& precision : kPrecisions) {
        const at::Tensor stored = x.to(precision.type);  // the definition sees the same rounded inputs
        const at::Tensor y = kernels::upfirdn2d_forward(stored.cuda(), f.cuda(), p);
        EXPECT_EQ(y.scalar_type(), precision.type);
        EXPECT_LT(max_relative_error(y.cpu(), upfirdn2d_direct(stored, f, p)), precision.tolerance)
            << "up " << p.up << " down " << p.down << " " << c10::toString(precision.type);
      }
    }
  }
}

// The tiled kernel (StyleGAN2's shapes) against the generic one and the definition, in both layouts,
// and with more planes than the grid has z blocks, so that they stride.
TEST(CudaKernels, TiledUpfirdn2dMatchesTheGenericKernelAndTheDefinition) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(8);
  const at::Tensor f = asymmetric_filter();
  const std::vector<ops::FirParams> cases{{1, 1, {1, 2, 2, 1}, false, 1.0}, {2, 1, {2, 1, 2, 1}, false, 4.0},
                                          {1, 2, {1, 1, 1, 1}, true, 1.0}};
  const at::Tensor wide = at::randn({3, 20, 13, 9}), many_planes = at::randn({2, 33000, 3, 4});
  for (const Precision& precision : kPrecisions) {
    for (const at::Tensor& x : {wide, wide.contiguous(at::MemoryFormat::ChannelsLast), many_planes}) {
      const at::Tensor stored = x.to(precision.type), on_gpu = stored.cuda().contiguous(ops::layout_of(x));
      for (const auto& p : cases) {
        const at::Tensor tiled = kernels::upfirdn2d_forward(on_gpu, f.cuda(), p);
        const at::Tensor generic = kernels::upfirdn2d_forward(on_gpu, f.cuda(), p, Kernel::PerElement);
        const std::string where = "up " + std::to_string(p.up) + " down " + std::to_string(p.down) + " " +
                                  c10::toString(precision.type) + " " + c10::str(x.sizes(), x.strides());
        EXPECT_TRUE(tiled.is_contiguous(ops::layout_of(x))) << where;
        EXPECT_LT(max_relative_error(tiled.cpu().to(at::kFloat), generic.cpu().to(at::kFloat)), precision.tolerance)
            << where;
        EXPECT_LT(max_relative_error(tiled.cpu(), upfirdn2d_direct(stored, f, p)), precision.tolerance) << where;
      }
    }
  }
}

TEST(CudaKernels, Upfirdn2dReadsStridedViews) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(1);
  const at::Tensor big = at::randn({2, 4, 12, 11}).cuda();
  const at::Tensor f = asymmetric_filter().cuda();
  const ops::FirParams p{2, 1, {2, 1, 2, 1}, false, 4.0};
  for (const at::Tensor& view : {big.slice(1, 1, 3).slice(2, 2, 9), big.transpose(2, 3)}) {
    EXPECT_LT(max_relative_error(kernels::upfirdn2d_forward(view, f, p).cpu(), upfirdn2d_direct(view, f, p)), 2e-6);
  }
}

// t on the GPU at an address one element past a 16-byte boundary: the per-element kernel's case.
at::Tensor misaligned_on_gpu(const at::Tensor& t) {
  return at::empty({t.numel() + 1}, t.options().device(at::kCUDA)).slice(0, 1).view(t.sizes()).copy_(t);
}

// The vectorised kernels (whole aligned packs, also across channels: planes of 12 elements,
// channels_last; packs of whole runs of 16 channels, their biases loaded as packs) and the
// per-element ones (30 elements, a misaligned view), forward and gradient.
TEST(CudaKernels, BiasActMatchesTheReferenceInEveryActivationAndPrecision) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(2);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const std::vector<at::Tensor> inputs{at::randn({3, 5, 4, 4}), at::randn({2, 5, 3, 4}),
                                       at::randn({2, 5, 3, 4}).contiguous(channels_last), at::randn({6, 5}),
                                       at::randn({2, 16, 3, 4}).contiguous(channels_last), at::randn({6, 16})};
  for (const auto act : {ops::Activation::Linear, ops::Activation::Relu, ops::Activation::LRelu}) {
    for (const double clamp : {-1.0, 0.5}) {
      ops::BiasActParams p;
      p.act = act;
      p.clamp = clamp;
      const at::Tensor b = at::randn({16});
      for (const Precision& precision : kPrecisions) {
        for (const at::Tensor& x : inputs) {
          const at::Tensor xs = x.to(precision.type), bs = b.slice(0, 0, x.size(1)).to(precision.type);
          at::Tensor xr = xs.to(at::kFloat).detach().clone().requires_grad_(true);  // a leaf of its own
          const at::Tensor expected = ops::bias_act_reference(xr, bs.to(at::kFloat), p);
          expected.sum().backward();
          for (const at::Tensor& on_gpu : {xs.cuda().contiguous(ops::layout_of(x)), misaligned_on_gpu(xs)}) {
            const std::string where = ops::to_string(act) + " clamp " + std::to_string(clamp) + " " +
                                      c10::toString(precision.type) + " " + c10::str(on_gpu.sizes(), on_gpu.strides()) +
                                      (on_gpu.storage_offset() == 0 ? "" : " misaligned");
            const at::Tensor xg = on_gpu.detach().requires_grad_(true);
            const at::Tensor y = kernels::bias_act(xg, bs.cuda(), p);
            EXPECT_LT(max_relative_error(y.detach().cpu(), expected.detach()), precision.tolerance) << where;
            if (clamp >= 0) continue;  // the slope at an output rounded onto the clamp is 0: a coin toss here
            y.sum().backward();
            EXPECT_LT(max_relative_error(xg.grad().cpu(), xr.grad()), precision.tolerance) << where;
          }
        }
      }
    }
  }
}

// A bias that takes a gradient: the first-order backward's one pass (the epilogue's gradient
// kernel: NCHW planes of whole packs, or channels_last) or two (NCHW planes of 25, not whole packs),
// against the reference's gradients of x and b in float32.
TEST(CudaKernels, BiasGradientsMatchTheReferenceInEveryPrecisionAndLayout) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(8);
  const ops::BiasActParams p{1, ops::Activation::LRelu, -1, -1, 256};
  const at::Tensor b = at::randn({16}) * 0.1;
  for (const Precision& precision : kPrecisions) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 16, 4, 6}, std::vector<int64_t>{3, 16, 5, 5}}) {
      const at::Tensor xs = at::randn(shape).to(precision.type), dys = at::randn(shape).to(precision.type);
      const at::Tensor bs = b.to(precision.type);
      // Copies, also in float32 (where to() would return xs and b themselves, and requires_grad_
      // would make them, and all later casts of them, parts of the graph).
      const at::Tensor xr = xs.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).requires_grad_(true);
      const at::Tensor br = bs.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).requires_grad_(true);
      ops::bias_act_reference(xr, br, p).backward(dys.to(at::kFloat));
      for (const at::Tensor& on_gpu : {xs.cuda(), xs.cuda().contiguous(at::MemoryFormat::ChannelsLast)}) {
        const std::string where = std::string(c10::toString(precision.type)) + " " +
                                  c10::str(on_gpu.sizes(), on_gpu.strides());
        const at::Tensor xg = on_gpu.detach().requires_grad_(true), bg = bs.cuda().requires_grad_(true);
        kernels::bias_act(xg, bg, p).backward(dys.cuda());
        EXPECT_LT(max_relative_error(xg.grad().cpu().to(at::kFloat), xr.grad()), precision.tolerance) << where;
        EXPECT_LT(max_relative_error(bg.grad().cpu().to(at::kFloat), br.grad()), precision.tolerance) << where;
      }
    }
  }
}

TEST(CudaKernels, ChannelsLastKeepsItsLayoutInEveryPrecision) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(9);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const at::Tensor x = at::randn({2, 6, 7, 5}), b = at::randn({6}), f = asymmetric_filter();
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  p.clamp = 1.0;
  for (const Precision& precision : kPrecisions) {
    const at::Tensor stored = x.to(precision.type), bias = b.to(precision.type);
    const at::Tensor on_gpu = stored.cuda().contiguous(channels_last);
    for (const auto& fir : fir_cases()) {
      const at::Tensor y = kernels::upfirdn2d_forward(on_gpu, f.cuda(), fir);
      EXPECT_TRUE(y.is_contiguous(channels_last));
      EXPECT_LT(max_relative_error(y.cpu(), upfirdn2d_direct(stored, f, fir)), precision.tolerance)
          << "up " << fir.up << " down " << fir.down << " " << c10::toString(precision.type);
    }
    const at::Tensor y = kernels::bias_act_forward(on_gpu, bias.cuda(), p);
    EXPECT_TRUE(y.is_contiguous(channels_last));
    const at::Tensor expected = ops::bias_act_reference(stored.to(at::kFloat), bias.to(at::kFloat), p);
    EXPECT_LT(max_relative_error(y.cpu(), expected), precision.tolerance) << c10::toString(precision.type);
  }
}

// Output, first and second derivatives of L = sum(op(x^2) * g) on the GPU, with kernels or the
// reference ops (both on CUDA, so only the kernels differ).
std::vector<at::Tensor> unary_op_derivatives(const std::function<at::Tensor(const at::Tensor&, Kernel)>& op,
                                             const at::Tensor& x0, Kernel kernel) {
  at::Tensor x = x0.clone().requires_grad_(true);
  at::Tensor y = op(x.square(), kernel);
  at::manual_seed(3);
  const at::Tensor g = at::randn(y.sizes()).cuda(), v = at::randn(x0.sizes()).cuda();
  const at::Tensor first = torch::autograd::grad({(y * g).sum()}, {x}, {}, true, true)[0];
  const at::Tensor second = torch::autograd::grad({(first * v).sum()}, {x})[0];
  return {y.detach(), first.detach(), second};
}

TEST(CudaKernels, DerivativesToSecondOrderMatchTheReferenceAtNetworkShapes) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(4);
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1}).cuda(), w = at::randn({6, 16, 3, 3}).cuda();
  ops::BiasActParams lrelu;
  lrelu.act = ops::Activation::LRelu;
  lrelu.clamp = 256;
  const at::Tensor bias = at::randn({16}).cuda();
  const std::vector<std::pair<std::string, std::function<at::Tensor(const at::Tensor&, Kernel)>>> cases{
      {"upsample2d", [&](const at::Tensor& x, Kernel kernel) { return ops::upsample2d(x, f, 2, kernel); }},
      {"downsample2d", [&](const at::Tensor& x, Kernel kernel) { return ops::downsample2d(x, f, 2, kernel); }},
      {"conv up 2", [&](const at::Tensor& x, Kernel kernel) {
         ops::ConvResampleParams p;
         p.up = 2;
         p.padding = {1, 1, 1, 1};
         p.flip_weight = false;
         return ops::conv2d_resample(x, w, f, p, kernel);
       }},
      {"bias_act lrelu clamp", [&](const at::Tensor& x, Kernel kernel) { return ops::bias_act(x, bias, lrelu, kernel); }},
  };
  // 16 channels: channels_last runs the tiled kernel too (with_fixed_fir).
  const at::Tensor nchw = at::randn({2, 16, 16, 16}).cuda();
  for (const at::Tensor& x0 : {nchw, nchw.contiguous(at::MemoryFormat::ChannelsLast)}) {  // the gradients contiguous
    for (const auto& [name, op] : cases) {
      const auto kernel = unary_op_derivatives(op, x0, Kernel::Auto);
      const auto reference = unary_op_derivatives(op, x0, Kernel::Reference);
      for (size_t i = 0; i < kernel.size(); ++i) {
        EXPECT_LT(max_relative_error(kernel[i], reference[i]), 2e-5)
            << name << ", derivative output " << i << ", x strides " << x0.strides();
      }
    }
  }
}

TEST(CudaKernels, HalfPrecisionGradientsKeepTheirType) {
  SKIP_WITHOUT_CUDA_KERNELS();
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1}).cuda();
  at::Tensor x = at::randn({2, 4, 8, 8}).cuda().to(at::kHalf).requires_grad_(true);
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  at::Tensor y = ops::bias_act(ops::upsample2d(x, f), at::Tensor(), p);
  y.sum().backward();
  EXPECT_EQ(y.scalar_type(), at::kHalf);
  EXPECT_EQ(x.grad().scalar_type(), at::kHalf);
  EXPECT_TRUE(x.grad().isfinite().all().item<bool>());
}

// parity_check --device cuda: kink sides recorded by the reference ops on the CPU, replayed on the GPU
// by the kernels (tests/support/kink_pinning.h): both ties take the recorded slope, the gradient passes
// straight through.
TEST(CudaKernels, KinkSidesRecordedOnTheCpuAreReplayedOnTheGpu) {
  SKIP_WITHOUT_CUDA_KERNELS();
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  sg2::test::KinkPins pins;
  ComputeSettings compute(Kernel::Reference);
  compute.pre_activation = pins.recorder();
  ops::bias_act(at::tensor({2.0f, 1e-7f, -2e-7f}).reshape({1, 3}), at::Tensor(), p, compute);
  at::Tensor x = at::tensor({2.0f, -1e-7f, 2e-7f}).reshape({1, 3}).cuda().requires_grad_(true);
  compute.kernel = Kernel::Auto;
  compute.pre_activation = pins.replayer(1e-6);
  at::Tensor y = ops::bias_act(x, at::Tensor(), p, compute);
  y.sum().backward();
  EXPECT_EQ(pins.pinned_count(), 2);
  EXPECT_TRUE(y.is_cuda());
  const at::Tensor slopes = x.grad().cpu().to(at::kDouble).flatten() / std::sqrt(2.0);
  EXPECT_LT((slopes - at::tensor({1.0, 1.0, 0.2}, at::kDouble)).abs().max().item<double>(), 1e-6);
}

}  // namespace
}  // namespace sg2::ops
