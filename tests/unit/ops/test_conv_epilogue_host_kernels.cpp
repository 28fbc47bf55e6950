// The CUDA kernels of the synthesis layers' epilogue (src/ops/cuda/epilogue_elements.h), their
// per-pack and per-lane arithmetic run on the host, thread by thread over the whole launch, against
// the composed reference (y, dx and the plane sums), in NCHW and channels_last; on every machine.
// The kernels themselves on a GPU: test_conv_epilogue.cpp.
#include "sg2/ops/conv_epilogue.h"
#include "bias_act_autograd.h"
#include "channel_layout.h"
#include "cuda/epilogue_elements.h"
#include "epilogue_cases.h"
#include "ops_test_support.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace sg2::ops {
namespace {

using test::max_relative_error;

// The CUDA kernels' memory as the host sees it: float32 packs of four.
struct HostEpilogueMemory {
  static constexpr int kLanes = 4;
  const float *x, *dy, *y;
  float* dx;
  using Pack = float[kLanes];
  static void copy(const float* from, Pack& to) {
    for (int k = 0; k < kLanes; ++k) to[k] = from[k];
  }
  void load_x(int32_t pack, Pack& v) const { copy(x + pack * kLanes, v); }
  void load_dy(int32_t pack, Pack& v) const { copy(dy + pack * kLanes, v); }
  void load_y(int32_t pack, Pack& v) const { copy(y + pack * kLanes, v); }
  void load_floats(const float* p, int32_t offset, Pack& v) const { copy(p + offset, v); }
  void store_dx(int32_t pack, const Pack& v) const {
    for (int k = 0; k < kLanes; ++k) dx[pack * kLanes + k] = v[k];
  }
};

// A case on the host for the CUDA kernels' functions: float32 x in `layout`, dy, y and dx laid out
// alike (y and dx NaN until written), and the reference's y and gradients of sum(y * dy).
struct HostKernelRun {
  test::EpilogueInputs in;
  cuda::EpilogueLaunch job;
  kernels::ActivationParams a{};
  at::Tensor y, dy, dx, expected_y;
  std::vector<at::Tensor> expected_grads;  // x, demod, then the noise strength and bias where present

  HostEpilogueMemory memory() const {
    return {in.x.data_ptr<float>(), dy.data_ptr<float>(), y.data_ptr<float>(), dx.data_ptr<float>()};
  }
  int64_t packs() const { return in.x.numel() / HostEpilogueMemory::kLanes; }
};

HostKernelRun host_kernel_run(const test::EpilogueCase& c, at::MemoryFormat layout) {
  HostKernelRun r;
  r.in = test::random_inputs(c, at::kFloat, at::kCPU, layout);
  r.job = kernels::epilogue_launch({r.in.x, r.in.demod, r.in.noise, r.in.noise_strength, r.in.bias});
  r.a = kernels::resolve(test::params_of(c));
  r.y = at::full(c.x_shape, NAN).contiguous(layout);
  r.dx = at::full(c.x_shape, NAN).contiguous(layout);
  r.dy = at::randn(c.x_shape).contiguous(layout);
  const std::vector<at::Tensor> v = test::leaves(r.in);
  const at::Tensor y = test::run_op(c, r.in, v, ops::Kernel::Reference);
  r.expected_y = y.detach();
  r.expected_grads = torch::autograd::grad({(y * r.dy).sum()}, v);
  return r;
}

// Runs pack_values(pack, v) over every pack and stores v into r.y's memory.
template <typename PackValues>
void host_forward(HostKernelRun& r, PackValues pack_values) {
  float* y = r.y.data_ptr<float>();
  for (int32_t pack = 0; pack < r.packs(); ++pack) {
    float v[HostEpilogueMemory::kLanes];
    pack_values(pack, v);
    for (int k = 0; k < HostEpilogueMemory::kLanes; ++k) y[pack * HostEpilogueMemory::kLanes + k] = v[k];
  }
}

// dx and the kernels' plane sums [N * C, 3] (g * x, g, g * noise) against the reference's gradients.
void expect_gradient_matches(const HostKernelRun& r, const at::Tensor& sums, const std::string& where) {
  const int64_t n = r.in.x.size(0);
  const std::vector<at::Tensor>& grads = r.expected_grads;
  EXPECT_LT(max_relative_error(r.dx, grads[0]), 1e-6) << where;
  EXPECT_LT(max_relative_error(sums.select(1, 0).reshape({n, -1}), grads[1]), 1e-5) << where;
  if (r.in.noise_strength.defined()) {
    EXPECT_LT(max_relative_error(sums.select(1, 2).sum(), grads[2]), 1e-5) << where;
  }
  if (r.in.bias.defined()) {
    EXPECT_LT(max_relative_error(sums.select(1, 1).reshape({n, -1}).sum(0), grads.back()), 1e-5) << where;
  }
}

at::Tensor sums_tensor(const std::vector<kernels::EpilogueSums>& sums) {
  at::Tensor out = at::empty({static_cast<int64_t>(sums.size()), 3});
  for (size_t p = 0; p < sums.size(); ++p) out[p] = at::tensor({sums[p].g_x, sums[p].g, sums[p].g_noise});
  return out;
}

// NCHW: the gradient kernel on the host, r.job.chunks runs of each plane, every lane of each run's
// warp: dx into r.dx (NaN until written), and the lanes' sums added up, [planes, 3].
at::Tensor host_gradient_lanes(HostKernelRun& r, const HostEpilogueMemory& memory) {
  constexpr int kWarp = 32, kLanes = HostEpilogueMemory::kLanes;
  r.dx.fill_(NAN);
  std::vector<kernels::EpilogueSums> sums(r.job.planes);
  for (int32_t plane = 0; plane < r.job.planes; ++plane) {
    for (int32_t chunk = 0; chunk < r.job.chunks; ++chunk) {
      for (int lane = 0; lane < kWarp; ++lane) {
        sums[plane].add(cuda::epilogue_grad_lane<kLanes, int32_t>(r.job, r.a, plane, chunk, lane, kWarp, memory));
      }
    }
  }
  return sums_tensor(sums);
}

// channels_last: the gradient kernel on the host, r.job.chunks runs of each sample's pixels, every
// thread of each run's block of row_groups rows: dx into r.dx, and the threads' sums added up.
at::Tensor host_gradient_pixels(HostKernelRun& r, const HostEpilogueMemory& memory, int32_t row_groups) {
  constexpr int kLanes = HostEpilogueMemory::kLanes;
  const auto channels = static_cast<int32_t>(r.job.channels), packs_per_pixel = channels / kLanes;
  r.dx.fill_(NAN);
  std::vector<kernels::EpilogueSums> sums(r.job.planes);
  for (int32_t n = 0; n < r.job.planes / channels; ++n) {
    for (int32_t chunk = 0; chunk < r.job.chunks; ++chunk) {
      for (int32_t group = 0; group < row_groups; ++group) {
        for (int32_t pack = 0; pack < packs_per_pixel; ++pack) {
          kernels::EpilogueSums thread[kLanes];
          cuda::epilogue_grad_pixels<kLanes, int32_t>(r.job, r.a, n, chunk, pack, group, row_groups, memory, thread);
          for (int k = 0; k < kLanes; ++k) sums[n * channels + pack * kLanes + k].add(thread[k]);
        }
      }
    }
  }
  return sums_tensor(sums);
}

// NCHW: every pack of the forward kernel and every lane of every warp of the gradient kernel, run on
// the host, against the composed reference: y, dx, and the lanes' sums added up.
TEST(CudaKernelArithmetic, EpiloguePacksAndWarpLanesMatchTheComposedReference) {
  constexpr int kLanes = HostEpilogueMemory::kLanes;
  for (const test::EpilogueCase& c : test::epilogue_cases()) {
    if (c.x_shape[2] * c.x_shape[3] % kLanes != 0) continue;  // the kernels compose these
    HostKernelRun r = host_kernel_run(c, at::MemoryFormat::Contiguous);
    const HostEpilogueMemory memory = r.memory();
    host_forward(r, [&](int32_t pack, float (&v)[kLanes]) {
      cuda::epilogue_pack<kLanes, int32_t>(r.job, r.a, pack, memory, v);
    });
    EXPECT_LT(max_relative_error(r.y, r.expected_y), 1e-6) << c.name;

    // Gradient, chunk by chunk of each plane (5: more chunks than some planes fill), lane by lane.
    for (const int32_t chunks : {1, 3, 5}) {
      r.job.chunks = chunks;
      expect_gradient_matches(r, host_gradient_lanes(r, memory), c.name + ", " + std::to_string(chunks) + " chunks");
    }
  }
}

// channels_last: every pack of the forward kernel (a pixel's channels), and every thread of every
// block of the gradient kernel for a few shapes of block (row groups) and splits of the pixels
// (chunks: 5 is more than some samples fill), run on the host against the composed reference.
TEST(CudaKernelArithmetic, EpiloguePixelPacksAndBlockThreadsMatchTheComposedReference) {
  constexpr int kLanes = HostEpilogueMemory::kLanes;
  int cases = 0;
  for (const test::EpilogueCase& c : test::epilogue_cases()) {
    if (c.x_shape[1] % kLanes != 0) continue;         // the kernels compose these
    if (c.x_shape[2] * c.x_shape[3] == 1) continue;  // contiguous as well: runs as NCHW
    ++cases;
    HostKernelRun r = host_kernel_run(c, at::MemoryFormat::ChannelsLast);
    ASSERT_TRUE(r.job.channels_last) << c.name;
    const HostEpilogueMemory memory = r.memory();
    host_forward(r, [&](int32_t pack, float (&v)[kLanes]) {
      cuda::epilogue_pixel_pack<kLanes, int32_t>(r.job, r.a, pack, memory, v);
    });
    EXPECT_LT(max_relative_error(r.y, r.expected_y), 1e-6) << c.name;

    for (const auto& [row_groups, chunks] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{64, 5}}) {
      r.job.chunks = chunks;
      expect_gradient_matches(r, host_gradient_pixels(r, memory, row_groups),
                              c.name + ", " + std::to_string(row_groups) + " row groups, " + std::to_string(chunks) +
                                  " chunks");
    }
  }
  EXPECT_EQ(cases, 6);
}

// A launch without x (bias_act's gradient with its bias sums, where g stands in for x): in both
// layouts the same dx and sums of g and g * noise as with x, bit for bit, the sums of g * x 0, and x
// never read (its memory NaN here, which a read would carry into the sums).
TEST(CudaKernelArithmetic, EpilogueGradientWithoutXLeavesItsSumsZeroAndTheRestAsWithX) {
  int cases = 0;
  for (const auto& [c, layout] : test::cases_in_both_layouts()) {
    const bool channels_last = layout == at::MemoryFormat::ChannelsLast;
    if ((channels_last ? c.x_shape[1] : c.x_shape[2] * c.x_shape[3]) % HostEpilogueMemory::kLanes != 0) continue;
    HostKernelRun r = host_kernel_run(c, layout);
    if (r.job.channels_last != channels_last) continue;  // 1x1 pixels run as NCHW
    ++cases;
    r.y.copy_(r.expected_y);
    const auto gradient = [&](const HostEpilogueMemory& memory) {
      const at::Tensor sums = channels_last ? host_gradient_pixels(r, memory, 3) : host_gradient_lanes(r, memory);
      return std::make_pair(sums, r.dx.clone());  // dx written by the line above
    };
    const auto [sums, dx] = gradient(r.memory());
    const at::Tensor poisoned_x = at::full_like(r.in.x, NAN);
    HostEpilogueMemory without_x = r.memory();
    without_x.x = poisoned_x.data_ptr<float>();
    r.job.x = nullptr;
    const auto [sums_without_x, dx_without_x] = gradient(without_x);
    const std::string where = c.name + ", " + test::layout_name(layout);
    EXPECT_TRUE(dx_without_x.equal(dx)) << where;
    EXPECT_TRUE(sums_without_x.select(1, 0).eq(0).all().item<bool>()) << where;
    EXPECT_TRUE(sums_without_x.slice(1, 1).equal(sums.slice(1, 1))) << where;
  }
  EXPECT_GE(cases, 6);
}

TEST(CudaKernelArithmetic, EpilogueGradientSplitsPlanesAcrossEnoughWarps) {
  EXPECT_EQ(cuda::epilogue_grad_chunks(4096, 8192), 2);  // config-f 256x256, batch 32: 4096 planes already
  EXPECT_EQ(cuda::epilogue_grad_chunks(128, 131072), 64);  // 1024x1024, 4 x 32 planes
  EXPECT_EQ(cuda::epilogue_grad_chunks(16384, 2), 1);      // 4x4 planes: one warp each
  EXPECT_EQ(cuda::epilogue_grad_chunks(8, 100), 1);        // small planes stay whole
  // channels_last, float16 (packs of 8 channels): 256x256 with 128 channels, batch 32: 16 threads a
  // pixel, 16 row groups, 32 blocks a sample; 1024x1024 with 32 channels, batch 4: 256 blocks a
  // sample; 4x4 with 512 channels: one block a sample.
  EXPECT_EQ(cuda::epilogue_row_groups(16), 16);
  EXPECT_EQ(cuda::epilogue_grad_pixel_chunks(32, 65536, 16), 32);
  EXPECT_EQ(cuda::epilogue_grad_pixel_chunks(4, 1048576, 4), 256);
  EXPECT_EQ(cuda::epilogue_grad_pixel_chunks(32, 16, 64), 1);
}

}  // namespace
}  // namespace sg2::ops
