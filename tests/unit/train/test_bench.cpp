// stylegan2_bench's device profile: LibTorch's Kineto profiler through KernelProfile. On a GPU it
// lists kernels in GPU time (the kit runs that); here the same code path records the CPU's ops.
#include "sg2/bench/benchmark.h"
#include "sg2/bench/kernel_profile.h"
#include "sg2/bench/op_profile.h"
#include "sg2/bench/ops_benchmark.h"
#include "sg2/core/error.h"
#include "tiny_config.h"

#include <gtest/gtest.h>

#include <sstream>

namespace sg2::bench {
namespace {

// The op families of the bench's breakdown, for the names LibTorch's RecordFunction reports.
TEST(OpProfile, FamiliesOfOurKernelsAndTheirBackwardNodes) {
  const std::string node = "autograd::engine::evaluate_function: torch::autograd::CppNode<sg2::ops::kernels::";
  EXPECT_EQ(OpProfile::family_of("sg2::upfirdn2d"), "FIR resampling");
  EXPECT_EQ(OpProfile::family_of(node + "(anonymous namespace)::Upfirdn2dFunction>"), "FIR resampling (backward)");
  EXPECT_EQ(OpProfile::family_of(node + "(anonymous namespace)::BiasActFunction>"), "bias + activation (backward)");
  EXPECT_EQ(OpProfile::family_of("sg2::conv_epilogue"), "bias + activation");
  EXPECT_EQ(OpProfile::family_of(node + "(anonymous namespace)::ConvEpilogueFunction>"), "bias + activation (backward)");
  EXPECT_EQ(OpProfile::family_of("aten::convolution"), "convolution");
  EXPECT_EQ(OpProfile::family_of("aten::convolution_backward"), "convolution (backward)");
}

// Every op's calls, nested ones included, and the same calls under the top-level op they ran in.
TEST(OpProfile, CountsEveryDispatchAndTheTopLevelOpItRanIn) {
  const at::Tensor a = at::randn({8, 8}), b = at::randn({8, 8});
  std::map<std::string, int64_t> calls, under;
  {
    OpProfile timing_only;  // counts nothing: its times stay free of the counting's cost
    at::mm(a, b);
    EXPECT_TRUE(timing_only.calls_by_op().empty());
    EXPECT_TRUE(timing_only.calls_by_top_level_op().empty());
  }
  {
    OpProfile profile(/*count_calls=*/true);
    for (int i = 0; i < 3; ++i) at::mm(a, b);
    at::matmul(a, b);  // matmul dispatches mm, and maybe views
    calls = profile.calls_by_op();
    under = profile.calls_by_top_level_op();
  }
  EXPECT_EQ(calls.at("aten::mm"), 4);
  EXPECT_EQ(calls.at("aten::matmul"), 1);
  EXPECT_GE(under.at("aten::mm"), 3);  // mm's own calls and what they dispatch
  EXPECT_GE(under.at("aten::matmul"), 2);
  EXPECT_EQ(under.size(), 2U);  // every call ran in one of the two top-level ops
  int64_t total = 0, total_under = 0;
  for (const auto& [name, count] : calls) total += count;
  for (const auto& [name, count] : under) total_under += count;
  EXPECT_EQ(total, total_under);
}

TEST(KernelProfile, EventsAreSummedByNameAndTheBusyTimeOnlyWhenAsked) {
  const DeviceTimes times = sum_device_events({{"gemm", 2000}, {"fir", 500}, {"gemm", 1000}}, true);
  EXPECT_DOUBLE_EQ(times.seconds.at("gemm"), 3e-6);
  EXPECT_EQ(times.launches.at("gemm"), 2);
  EXPECT_EQ(times.launches.at("fir"), 1);
  EXPECT_DOUBLE_EQ(times.busy_seconds, 3.5e-6);
  EXPECT_EQ(sum_device_events({{"aten::mm", 10}}, false).busy_seconds, 0.0);
}

// Device work links to the host op that launched it by Kineto's correlation ids (as PyTorch's
// profiler tables link them); runtime calls, which link too, are not host ops.
TEST(KernelProfile, DeviceWorkIsTimedByTheHostOpThatLaunchedItWithItsShapes) {
  std::vector<ProfiledEvent> events;
  events.push_back({"aten::cudnn_convolution", 7, 0, {{32, 128, 64, 64}, {128, 128, 3, 3}, {}, {2}}, 900, false});
  events.push_back({"aten::add_", 8, 0, {}, 100, false});
  events.push_back({"cudaLaunchKernel", 20, 7, {}, 5, false});  // a runtime call: linked, not a host op
  events.push_back({"implicit_convolve_sgemm", 21, 7, {}, 3000, true});
  events.push_back({"implicit_convolve_sgemm", 22, 7, {}, 1000, true});
  events.push_back({"elementwise_kernel", 23, 8, {}, 500, true});
  events.push_back({"memcpy", 24, 99, {}, 200, true});  // its op was not recorded
  const auto seconds = time_by_launching_op(events);
  ASSERT_EQ(seconds.size(), 3U);
  EXPECT_DOUBLE_EQ(seconds.at("implicit_convolve_sgemm <- aten::cudnn_convolution 32x128x64x64 128x128x3x3 2"), 4e-6);
  EXPECT_DOUBLE_EQ(seconds.at("elementwise_kernel <- aten::add_"), 5e-7);
  EXPECT_DOUBLE_EQ(seconds.at("memcpy <- (no host op)"), 2e-7);
}

// Kernel names as the fourth H200 run's profile has them (cut where they run long).
TEST(KernelProfile, ConvolutionAndMatrixEnginesAreToldFromTheKernelsBoundByMemory) {
  for (const std::string engine :
       {"sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1",
        "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize256x64x8_stage3_warpsize2x2x1_g1_ffma",
        "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*, int)",
        "void cudnn::detail::dgrad_alg1_engine<float, 128, 6, 8, 3, 3, 5, false, false>(int, int, int, float)",
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int)",
        "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)",
        "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT",
        "ampere_sgemm_128x64_tn"}) {
    EXPECT_TRUE(is_matrix_kernel(engine)) << engine;
  }
  for (const std::string other :
       {"void sg2::ops::cuda::(anonymous namespace)::conv_epilogue_kernel<__half, true>(EpilogueLaunch)",
        "void sg2::ops::cuda::(anonymous namespace)::upfirdn2d_lanes_kernel<__half, sg2::ops::cuda::Fir<1, 1, 4> >",
        "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::Half>>",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::Half>>",
        "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true>(float)",
        "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false>(cublasSplitKParams<float>)",
        "Memcpy DtoD (Device -> Device)", "Memset (Device)"}) {
    EXPECT_FALSE(is_matrix_kernel(other)) << other;
  }
  const KernelKinds kinds = split_by_kind({{"sm90_xmma_fprop", 0.004}, {"Memset (Device)", 0.001},
                                           {"at::native::vectorized_elementwise_kernel", 0.002}});
  EXPECT_DOUBLE_EQ(kinds.matrix_seconds, 0.004);
  EXPECT_DOUBLE_EQ(kinds.other_seconds, 0.003);
  ASSERT_EQ(kinds.other.size(), 2U);
  EXPECT_DOUBLE_EQ(kinds.other.at("Memset (Device)"), 0.001);
}

TEST(KernelProfile, RecordsWhatTheDeviceRanAndOnlyOneAtATime) {
  const at::Tensor a = at::randn({256, 256});
  DeviceTimes times;
  {
    KernelProfile profile(at::Device(at::kCPU));
    EXPECT_THROW({ KernelProfile second{at::Device(at::kCPU)}; }, Error);
    for (int i = 0; i < 3; ++i) at::mm(a, a);
    times = profile.stop();
    EXPECT_THROW(profile.stop(), Error);
  }
  ASSERT_TRUE(times.seconds.count("aten::mm")) << "no aten::mm among " << times.seconds.size() << " op names";
  EXPECT_EQ(times.launches.at("aten::mm"), 3);
  EXPECT_GT(times.seconds.at("aten::mm"), 0.0);
  EXPECT_EQ(times.busy_seconds, 0.0);  // nested CPU ops overlap: no total
  KernelProfile again{at::Device(at::kCPU)};  // the first one let go of the profiler
}

TEST(Benchmark, DeviceKernelsProfileOneMoreCycleOfTheRealStep) {
  train::TrainConfig c = test::tiny_config();
  c.G.precision.num_fp16_res = 2;  // asked for, but mixed_precision auto runs float32 off CUDA: the text says what ran
  c.G.conv_clamp = 256;
  train::Trainer trainer(c, train::open_configured_dataset(c), at::Device(at::kCPU));
  BenchOptions options;
  options.warmup_steps = 1;
  options.phase_repeats = 1;
  options.op_families = false;
  options.device_kernels = true;
  const BenchResult result = run_benchmark(trainer, options);
  EXPECT_TRUE(result.kernel_seconds.count("aten::convolution")) << result.kernel_seconds.size() << " op names";
  EXPECT_GT(result.kernel_wall_seconds, 0.0);
  const std::string text = format_benchmark(result, trainer);
  EXPECT_NE(text.find("most expensive ops per step under the profiler"), std::string::npos) << text;
  EXPECT_NE(text.find(" host ms\n"), std::string::npos) << text;
  EXPECT_GT(result.step_host_seconds, 0.0);
  EXPECT_LE(result.step_host_seconds, result.step_seconds);
  EXPECT_NE(text.find("# precision: G float32, conv_clamp 256; D "), std::string::npos) << text;
  for (const auto& phase : trainer.phases()) {  // each phase once under its own profile
    ASSERT_TRUE(result.phase_device_times.count(phase.name)) << phase.name;
    EXPECT_TRUE(result.phase_device_times.at(phase.name).seconds.count("aten::convolution")) << phase.name;
    EXPECT_NE(text.find("most expensive ops (nested ones included) in one " + phase.name + " call:"), std::string::npos)
        << text;
    // The host's dispatches in one call of the phase: its convolutions among them.
    ASSERT_TRUE(result.phase_op_calls.count(phase.name)) << phase.name;
    EXPECT_GT(result.phase_op_calls.at(phase.name).at("aten::convolution"), 0) << phase.name;
    EXPECT_NE(text.find("ops one " + phase.name + " call dispatches (nested ones included): "), std::string::npos)
        << text;
  }
  for (const auto& p : result.phases) {
    EXPECT_GT(p.host_seconds, 0.0) << p.name;
    EXPECT_LE(p.host_seconds, p.seconds) << p.name;
  }
}

// stylegan2_bench ops on the CPU: upfirdn2d's seven calls (four forward, three gradients),
// bias_act's five (three forward, two gradients) and the synthesis layers' epilogue and input
// modulation (forward and gradient each) in both layouts, the CPU kernels against the reference
// ops, and no column for the CUDA kernels' specialised variants.
TEST(OpsBenchmark, TimesEveryNetworkShapeInBothLayoutsAndTheEpilogueFused) {
  train::TrainConfig c = test::tiny_config();
  c.run.device = train::DeviceChoice::Cpu;
  c.G.conv_clamp = 256;
  c.D.conv_clamp = 128;
  OpsBenchOptions options;
  options.batch = 2;
  options.resolution = 16;
  options.repeats = 1;
  const OpsBenchResult result = run_ops_benchmark(c, options, "as set");
  const std::string& text = result.text;
  std::istringstream table(text);
  std::vector<std::string> rows;
  for (std::string line; std::getline(table, line);) {
    if (line.rfind("| G:", 0) == 0 || line.rfind("| D:", 0) == 0) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 32u) << text;
  const std::string g = std::to_string(c.G.channels_at(16)), d = std::to_string(c.D.channels_at(16));
  // upfirdn2d: no lanes or tiled kernel on the CPU, then the per-element column.
  EXPECT_NE(text.find("| op | x | layout | lanes ms | tiled ms | per-element ms | reference ms |"), std::string::npos)
      << text;
  EXPECT_NE(rows[0].find("| 2x" + g + "x17x17 | NCHW | - | - | "), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("| NHWC | - | - | "), std::string::npos) << rows[1];
  EXPECT_EQ(rows[1].find("| NHWC | - | - | - |"), std::string::npos) << rows[1];
  EXPECT_NE(rows[13].find("D: 2x downsampling (skip), gradient | 2x" + d + "x8x8"), std::string::npos) << rows[13];
  EXPECT_NE(text.find("## bias_act (clamp: G 256, D 128)"), std::string::npos) << text;
  EXPECT_NE(rows[14].find("G: conv output, lrelu | 2x" + g + "x16x16 | NCHW | - |"), std::string::npos) << rows[14];
  EXPECT_NE(rows[19].find("G: toRGB output, linear | 2x" + std::to_string(c.G.img_channels) + "x16x16 | NHWC | - |"),
            std::string::npos)
      << rows[19];
  EXPECT_NE(rows[23].find("D: conv output, lrelu, gradient | 2x" + d + "x16x16 | NHWC | - |"), std::string::npos)
      << rows[23];
  EXPECT_NE(text.find("## The synthesis layers' epilogue (clamp 256)"), std::string::npos) << text;
  // On the CPU (float32, NCHW) the fused kernels run: a number in the first column, not "-".
  EXPECT_EQ(rows[24].find("G: epilogue (demodulation, noise, bias, lrelu) | 2x" + g + "x16x16 | NCHW | - |"), std::string::npos)
      << rows[24];
  EXPECT_NE(rows[24].find("G: epilogue (demodulation, noise, bias, lrelu) | 2x" + g + "x16x16 | NCHW | "), std::string::npos)
      << rows[24];
  EXPECT_NE(rows[25].find("G: epilogue, gradient | 2x" + g + "x16x16 | NCHW |"), std::string::npos) << rows[25];
  EXPECT_NE(rows[26].find("G: input modulation | 2x" + g + "x16x16 | NCHW |"), std::string::npos) << rows[26];
  EXPECT_NE(rows[27].find("G: input modulation, gradient | 2x" + g + "x16x16 | NCHW |"), std::string::npos) << rows[27];
  EXPECT_EQ(rows[27].find("| NCHW | - |"), std::string::npos) << rows[27];
  // ... and in channels_last too.
  EXPECT_NE(rows[28].find("G: epilogue (demodulation, noise, bias, lrelu) | 2x" + g + "x16x16 | NHWC | "),
            std::string::npos)
      << rows[28];
  EXPECT_EQ(rows[28].find("| NHWC | - |"), std::string::npos) << rows[28];
  EXPECT_NE(rows[31].find("G: input modulation, gradient | 2x" + g + "x16x16 | NHWC |"), std::string::npos) << rows[31];
  EXPECT_EQ(rows[31].find("| NHWC | - |"), std::string::npos) << rows[31];
  // The float32 blocks' convolutions at 16x16 and 8x8, both layouts, each timed in IEEE float32, 3xTF32
  // and TF32: forward, input gradient, weight gradient and G's transposed upsampling convolution.
  EXPECT_NE(text.find("## Float32 convolutions"), std::string::npos) << text;
  std::vector<std::string> conv_rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| 3x3 conv", 0) == 0 || line.rfind("| 2x transposed", 0) == 0) conv_rows.push_back(line);
  }
  ASSERT_EQ(conv_rows.size(), 16u) << text;
  const std::string c16 = std::to_string(c.G.channels_at(16));
  EXPECT_NE(conv_rows[0].find("| 3x3 conv at 16x16 | 2x" + c16 + "x16x16 | " + c16 + "x" + c16 + "x3x3 | NCHW | "),
            std::string::npos)
      << conv_rows[0];
  EXPECT_NE(conv_rows[2].find("3x3 conv at 16x16, weight gradient"), std::string::npos) << conv_rows[2];
  EXPECT_NE(conv_rows[7].find("(G's upsampling) from 8x8 | 2x" + c16 + "x8x8 | "), std::string::npos) << conv_rows[7];
  EXPECT_NE(conv_rows[7].find("| NHWC |"), std::string::npos) << conv_rows[7];
  EXPECT_NE(conv_rows[15].find("from 4x4 | 2x" + std::to_string(c.G.channels_at(8)) + "x4x4 | "), std::string::npos)
      << conv_rows[15];
  // One JSON record a row, the same rows: the kernel tables' 32, then the 16 convolutions.
  ASSERT_EQ(result.records.size(), 48u);
  const nlohmann::json& first = result.records[0];
  EXPECT_EQ(first.at("kind"), "ops");
  EXPECT_EQ(first.at("table"), "upfirdn2d");
  EXPECT_EQ(first.at("op"), "G: filter after the 2x transposed conv");
  EXPECT_EQ(first.at("x"), nlohmann::json({2, c.G.channels_at(16), 17, 17}));
  EXPECT_EQ(first.at("layout"), "NCHW");
  EXPECT_EQ(first.at("dtype"), "float32");
  EXPECT_TRUE(first.at("seconds").at("lanes").is_null());  // no CUDA kernel on the CPU
  EXPECT_TRUE(first.at("seconds").at("tiled").is_null());
  EXPECT_GT(first.at("seconds").at("per-element").get<double>(), 0);
  EXPECT_GT(first.at("seconds").at("reference").get<double>(), 0);
  EXPECT_GT(first.at("floor_s").get<double>(), 0);
  EXPECT_EQ(result.records[14].at("table"), "bias_act");
  EXPECT_EQ(result.records[24].at("table"), "epilogue");
  EXPECT_GT(result.records[24].at("seconds").at("fused").get<double>(), 0);
  const nlohmann::json& conv = result.records[32];
  EXPECT_EQ(conv.at("table"), "float32_convolutions");
  EXPECT_EQ(conv.at("op"), "3x3 conv at 16x16");
  for (const char* arithmetic : {"ieee", "3xtf32", "tf32"}) {
    EXPECT_GT(conv.at("seconds").at(arithmetic).get<double>(), 0) << arithmetic;
    EXPECT_LT(conv.at("relative_error").at(arithmetic).get<double>(), 1e-3) << arithmetic;  // TF32: none on the CPU
  }
  options.dtype = "float8";
  EXPECT_THROW(run_ops_benchmark(c, options, "as set"), Error);
}

}  // namespace
}  // namespace sg2::bench
