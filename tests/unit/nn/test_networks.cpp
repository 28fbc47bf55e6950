// Layers and networks: equalized learning rate, reference key lists, architectures, state dicts.
#include "sg2/core/error.h"
#include "sg2/ops/kernels.h"
#include "sg2/nn/networks.h"
#include "sg2/nn/state_dict.h"
#include "cuda/kernels_cuda.h"
#include "recorded_ops.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>

namespace sg2::nn {
namespace {

TEST(StateDict, HasPrefixFindsAKeyThatStartsWithIt) {
  const TensorMap tensors{{"D.b4.fc.weight", at::zeros({1})}, {"G.mapping.fc0.weight", at::zeros({1})},
                          {"G_ema.mapping.w_avg", at::zeros({1})}};
  EXPECT_TRUE(has_prefix(tensors, "G."));
  EXPECT_TRUE(has_prefix(tensors, "G_ema."));
  EXPECT_TRUE(has_prefix(tensors, "D."));
  EXPECT_FALSE(has_prefix(tensors, "G_em."));  // the first key not below it, G_ema.mapping.w_avg, does not start so
  EXPECT_FALSE(has_prefix(tensors, "H."));
  EXPECT_FALSE(has_prefix(TensorMap{}, "G."));
}

TEST(EqualizedLr, FullyConnectedScalesAtRunTime) {
  FcOptions o;
  o.lr_multiplier = 0.01;
  FullyConnectedLayer layer(4, 1, o);
  EXPECT_NEAR(layer.weight_gain, 0.01 / 2.0, 1e-12);  // lr_multiplier / sqrt(fan_in)
  {
    at::NoGradGuard no_grad;
    layer.weight.fill_(2.0);  // effective weight 2 * 0.005 = 0.01
    layer.bias.fill_(3.0);    // effective bias 3 * 0.01
  }
  const at::Tensor y = layer.forward(at::tensor({1.f, 2.f, 3.f, 4.f}).reshape({1, 4}));
  EXPECT_NEAR(y.item<float>(), 10 * 0.01 + 0.03, 1e-6);
}

TEST(EqualizedLr, InitialisationIsUnitGaussianOverLrMultiplier) {
  at::manual_seed(0);
  FcOptions o;
  o.lr_multiplier = 0.01;
  FullyConnectedLayer fc(256, 256, o);
  EXPECT_NEAR(fc.weight.std().item<double>(), 100.0, 2.0);  // randn / lr_multiplier
  Conv2dLayer conv(64, 32, 3);
  EXPECT_NEAR(conv.weight_gain, 1.0 / std::sqrt(64.0 * 9.0), 1e-12);
  EXPECT_NEAR(conv.weight.std().item<double>(), 1.0, 0.02);
  EXPECT_EQ(conv.bias.abs().sum().item<double>(), 0.0);
}

// rms(a - b) / rms(b), in double precision.
double relative_rms(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor bd = b.to(at::kDouble);
  return (a.to(at::kDouble) - bd).square().mean().sqrt().item<double>() / bd.square().mean().sqrt().item<double>();
}

TEST(MixedPrecision, TheHighestResolutionsComputeInTheReducedTypeAsTheReference) {
  MixedPrecision p;
  p.num_fp16_res = 4;  // the reference at 256: blocks from max(2^(8 + 1 - 4), 8) = 32 up
  EXPECT_EQ(p.block_type(16, 256), at::kFloat);
  EXPECT_EQ(p.block_type(32, 256), at::kHalf);
  EXPECT_EQ(p.block_type(256, 256), at::kHalf);
  p.num_fp16_res = 9;  // never below 8x8
  EXPECT_EQ(p.block_type(4, 32), at::kFloat);
  EXPECT_EQ(p.block_type(8, 32), at::kHalf);
  p.num_fp16_res = 0;
  EXPECT_EQ(p.block_type(256, 256), at::kFloat);
}

TEST(MixedPrecision, Float16WithoutAClampIsWarnedAbout) {
  MixedPrecision p{4, at::kHalf};
  const std::string warning = p.overflow_warning("G", 256, -1);
  EXPECT_NE(warning.find("G.num_fp16_res = 4 runs float16 from 32x32 up without G.conv_clamp"), std::string::npos)
      << warning;
  EXPECT_EQ(p.overflow_warning("G", 256, 256), "");                              // clamped
  EXPECT_EQ((MixedPrecision{4, at::kBFloat16}.overflow_warning("D", 256, -1)), "");  // float32's range
  EXPECT_EQ((MixedPrecision{0, at::kHalf}.overflow_warning("D", 256, -1)), "");      // all float32
}

// A skip generator and a resnet discriminator of 32x32 with few channels.
std::pair<GeneratorOptions, DiscriminatorOptions> small_networks() {
  GeneratorOptions g;
  g.z_dim = g.w_dim = 32;
  g.img_resolution = 32;
  g.img_channels = 1;
  g.mapping_layers = 2;
  g.channel_base = 512;
  g.channel_max = 32;
  g.conv_clamp = 256;
  DiscriminatorOptions d;
  d.img_resolution = 32;
  d.img_channels = 1;
  d.channel_base = 512;
  d.channel_max = 32;
  d.conv_clamp = 256;
  return {g, d};
}

// bfloat16 (the reduced type LibTorch's CPU convolutions have) in the two highest resolutions of
// both networks: float32 images and logits close to the float32 networks', float32 gradients, and
// force_fp32 giving the float32 networks' outputs exactly.
TEST(MixedPrecision, NetworksKeepFloat32InterfacesAndStayCloseToFloat32) {
  auto [g, d] = small_networks();
  at::manual_seed(7);
  Generator G(g);
  Discriminator D(d);
  g.precision = d.precision = MixedPrecision{2, at::kBFloat16};
  Generator G_mixed(g);
  Discriminator D_mixed(d);
  copy_state(G, G_mixed);
  copy_state(D, D_mixed);
  EXPECT_EQ(G_mixed.synthesis->blocks.back()->compute_type, at::kBFloat16);  // b32
  EXPECT_EQ(G_mixed.synthesis->blocks[1]->compute_type, at::kFloat);        // b8
  EXPECT_EQ(D_mixed.blocks.front()->compute_type, at::kBFloat16);           // b32

  const at::Tensor z = at::randn({4, 32});
  SynthesisRun run;
  run.noise_mode = NoiseMode::Const;
  const at::Tensor img = G.forward(z, at::Tensor(), {}, run);
  const at::Tensor img_mixed = G_mixed.forward(z, at::Tensor(), {}, run);
  EXPECT_EQ(img_mixed.scalar_type(), at::kFloat);
  EXPECT_LT(relative_rms(img_mixed, img), 5e-2);
  const at::Tensor logits = D.forward(img, at::Tensor()), logits_mixed = D_mixed.forward(img, at::Tensor());
  EXPECT_EQ(logits_mixed.scalar_type(), at::kFloat);
  EXPECT_LT(relative_rms(logits_mixed, logits), 5e-2);

  SynthesisRun fp32_run = run;
  fp32_run.force_fp32 = true;
  EXPECT_TRUE(G_mixed.forward(z, at::Tensor(), {}, fp32_run).equal(img));
  EXPECT_TRUE(D_mixed.forward(img, at::Tensor(), /*force_fp32=*/true).equal(logits));

  D_mixed.forward(G_mixed.forward(z, at::Tensor(), {}, run), at::Tensor()).sum().backward();
  for (torch::nn::Module* module : {static_cast<torch::nn::Module*>(&G_mixed), static_cast<torch::nn::Module*>(&D_mixed)}) {
    for (const auto& param : module->parameters()) {
      if (!param.grad().defined()) continue;
      EXPECT_EQ(param.scalar_type(), at::kFloat);
      EXPECT_EQ(param.grad().scalar_type(), at::kFloat);
      EXPECT_TRUE(param.grad().isfinite().all().item<bool>());
    }
  }
}

// The layouts of the blocks' outputs, running the blocks one by one as the networks do.
std::vector<at::MemoryFormat> block_layouts(Generator& G, Discriminator& D, const at::Tensor& z, bool fused = false) {
  auto layout = [](const at::Tensor& x) {
    return x.is_contiguous(at::MemoryFormat::ChannelsLast) ? at::MemoryFormat::ChannelsLast
                                                           : at::MemoryFormat::Contiguous;
  };
  SynthesisRun run;
  run.noise_mode = NoiseMode::Const;
  run.fused_modconv = fused;
  const std::vector<at::Tensor> ws = G.mapping->forward(z, at::Tensor(), {}).unbind(1);
  std::vector<at::MemoryFormat> layouts;
  at::Tensor x, img;
  size_t w_index = 0;
  for (auto& block : G.synthesis->blocks) {
    std::tie(x, img) = block->forward(x, img, at::TensorList(ws).slice(w_index, block->num_conv + block->num_torgb),
                                      run);
    w_index += block->num_conv;
    layouts.push_back(layout(x));
    EXPECT_TRUE(img.is_contiguous()) << "images stay contiguous";
  }
  x = at::Tensor();
  for (auto& block : D.blocks) {
    std::tie(x, img) = block->forward(x, img);
    layouts.push_back(layout(x));
  }
  return layouts;
}

// R1 as training runs it: |d logits / d images|^2, back to D's parameters (the second derivatives
// of every kernel). Returns D's parameter gradients by name.
std::map<std::string, at::Tensor> r1_gradients(Discriminator& D, const at::Tensor& images) {
  for (auto& param : D.parameters()) param.mutable_grad() = at::Tensor();
  const at::Tensor reals = images.detach().requires_grad_(true);
  const at::Tensor slopes = torch::autograd::grad({D.forward(reals, at::Tensor()).sum()}, {reals}, {}, true, true)[0];
  slopes.square().sum().backward();
  std::map<std::string, at::Tensor> grads;
  for (const auto& param : D.named_parameters()) grads[param.key()] = param.value().grad();
  return grads;
}

// Every block kind: a skip G with a resnet D, and a resnet G with a skip D.
class ChannelsLastNetworks : public ::testing::TestWithParam<std::pair<Architecture, Architecture>> {};

// run.channels_last: every block (all) or those in the reduced type (reduced) keep their
// activations channels_last, fused modulated convolutions too, the images and logits stay
// contiguous, and the networks compute the same values and first and second gradients in either
// layout.
TEST_P(ChannelsLastNetworks, BlocksKeepTheirLayoutAndComputeTheSame) {
  auto [g, d] = small_networks();
  std::tie(g.architecture, d.architecture) = GetParam();
  at::manual_seed(8);
  Generator G(g);
  Discriminator D(d);
  g.precision.channels_last = d.precision.channels_last = ChannelsLast::All;
  Generator G_nhwc(g);
  Discriminator D_nhwc(d);
  copy_state(G, G_nhwc);
  copy_state(D, D_nhwc);
  const at::Tensor z = at::randn({4, 32});
  const auto nhwc = at::MemoryFormat::ChannelsLast, nchw = at::MemoryFormat::Contiguous;
  EXPECT_EQ(block_layouts(G_nhwc, D_nhwc, z), std::vector<at::MemoryFormat>(7, nhwc));  // G b4-b32, D b32-b8
  EXPECT_EQ(block_layouts(G_nhwc, D_nhwc, z, /*fused=*/true), std::vector<at::MemoryFormat>(7, nhwc));
  EXPECT_EQ(block_layouts(G, D, z), std::vector<at::MemoryFormat>(7, nchw));

  SynthesisRun run;
  run.noise_mode = NoiseMode::Const;
  const at::Tensor img = G.forward(z, at::Tensor(), {}, run), img_nhwc = G_nhwc.forward(z, at::Tensor(), {}, run);
  EXPECT_TRUE(img_nhwc.is_contiguous());
  EXPECT_LT(relative_rms(img_nhwc, img), 1e-5);
  D.forward(img, at::Tensor()).sum().backward();
  D_nhwc.forward(img_nhwc, at::Tensor()).sum().backward();
  // G's gradients sum over every pixel and sample, with cancellation, after D's input gradient:
  // oneDNN's AVX-512 convolutions round the two layouts differently enough to show (up to 5.7e-4 on
  // an AVX-512 Xeon with FP16, 2026-11-27; under 1e-4 on AVX2 machines). A layout mistake, a
  // transposed channel or a wrong stride, is off by the order of the values themselves.
  const auto expected = G.named_parameters(), actual = G_nhwc.named_parameters();
  for (const auto& param : expected) {
    if (!param.value().grad().defined()) continue;
    EXPECT_LT(relative_rms(actual[param.key()].grad(), param.value().grad()), 2e-3) << param.key();
  }
  auto r1 = r1_gradients(D, img), r1_nhwc = r1_gradients(D_nhwc, img);
  for (const auto& [name, grad] : r1) {
    if (!grad.defined()) continue;
    if (grad.abs().max().item<double>() == 0) {  // biases after minibatch_stddev: piecewise linear in them
      EXPECT_EQ(r1_nhwc[name].abs().max().item<double>(), 0) << "R1 gradient of " << name;
      continue;
    }
    EXPECT_LT(relative_rms(r1_nhwc[name], grad), 1e-4) << "R1 gradient of " << name;
  }

  g.precision = d.precision = MixedPrecision{2, at::kBFloat16, ChannelsLast::Reduced};  // b16 and b32
  Generator G_mixed(g);
  Discriminator D_mixed(d);
  EXPECT_EQ(block_layouts(G_mixed, D_mixed, z), std::vector<at::MemoryFormat>({nchw, nchw, nhwc, nhwc, nhwc, nhwc, nchw}));
  EXPECT_EQ(g.precision.describe(32), "bfloat16 from 16x16 up, float32 below, channels_last in bfloat16");
}

INSTANTIATE_TEST_SUITE_P(EveryBlockKind, ChannelsLastNetworks,
                         ::testing::Values(std::make_pair(Architecture::Skip, Architecture::Resnet),
                                           std::make_pair(Architecture::Resnet, Architecture::Skip)));

// The GPU kernel an upfirdn2d call takes (cuda/kernels_cuda.h's fir_auto_kernel: host arithmetic on
// the call's own tensor, its shape, strides, type and alignment; for a CPU tensor, the kernel the
// same tensor would take on a GPU), and the call described.
std::pair<ops::Kernel, std::string> gpu_kernel_of(const sg2::test::OpCall& call) {
  const at::Tensor x = call.inputs[0].toTensor(), f = call.inputs[1].toTensor();  // x, f, FirParams, gain
  const std::vector<int64_t> v = call.inputs[2].toIntVector();
  const ops::FirParams p{v[0], v[1], {v[2], v[3], v[4], v[5]}, v[6] != 0, call.inputs[3].toDouble()};
  const auto [out_h, out_w] = ops::kernels::upfirdn2d_output_size(x, f, p);
  const bool channels_last = ops::layout_of(x) == at::MemoryFormat::ChannelsLast;
  return {ops::kernels::gpu::fir_auto_kernel(x, f, p, out_h, out_w),
          c10::str(x.sizes(), " ", x.scalar_type(), channels_last ? " channels_last" : " NCHW", ", up ", p.up,
                   " down ", p.down)};
}

// With run.channels_last all, every FIR call on a feature map in a step (G's and D's forward, their
// gradients, R1's second order) gets a channels_last tensor of whole aligned 16-byte lanes, so the
// lanes kernel runs it: autograd's gradients keep the layout. On a GPU in float16 at the two highest
// resolutions (the benches' type), on the CPU in float32 (its kernels take no 16-bit types). The
// RGB images' filters (3 channels) take the other kernels.
TEST(ChannelsLastNetworks, EveryFeatureMapFilterOfAStepTakesTheLanesKernel) {
  const bool gpu = ops::kernels::cuda_kernels_built() && torch::cuda::is_available();
  auto [g, d] = small_networks();
  g.img_channels = d.img_channels = 3;
  g.precision.channels_last = d.precision.channels_last = ChannelsLast::All;
  if (gpu) g.precision = d.precision = MixedPrecision{2, at::kHalf, ChannelsLast::All};
  const at::Device device = gpu ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  at::manual_seed(9);
  Generator G(g);
  Discriminator D(d);
  G.to(device);
  D.to(device);
  sg2::test::RecordedOps recorded({"sg2::upfirdn2d"});
  const at::Tensor img = G.forward(at::randn({4, 32}, at::TensorOptions().device(device)), at::Tensor(), {}, {});
  D.forward(img, at::Tensor()).sum().backward();
  r1_gradients(D, img);
  int feature_maps = 0;
  for (const sg2::test::OpCall& call : recorded.take()) {
    if (call.inputs[0].toTensor().size(1) == 3) continue;  // an RGB image
    ++feature_maps;
    const auto [kernel, described] = gpu_kernel_of(call);
    EXPECT_EQ(kernel, ops::Kernel::ChannelLanes) << described;
  }
  EXPECT_GE(feature_maps, 40);  // 42 on the CPU
}

// The networks pass their compute settings to every op: with the reference's kernel choice, no call
// of a forward and backward (R1's second order included) reaches a kernel.
TEST(ComputeSettings, NetworksPassTheirsToEveryOp) {
  auto [g, d] = small_networks();
  at::manual_seed(10);
  Generator G(g);
  Discriminator D(d);
  const auto kernel_calls = [&] {
    sg2::test::RecordedOps recorded({"sg2::upfirdn2d", "sg2::bias_act", "sg2::conv_epilogue"});
    const at::Tensor img = G.forward(at::randn({4, 32}), at::Tensor(), {}, {});
    D.forward(img, at::Tensor()).sum().backward();
    r1_gradients(D, img);
    return recorded.take().size();
  };
  EXPECT_GT(kernel_calls(), 40u);
  set_compute(G, ops::Kernel::Reference);
  set_compute(D, ops::Kernel::Reference);
  EXPECT_EQ(kernel_calls(), 0u);
}

void expect_keys_match(const std::string& file) {
  const std::string shared = sg2::test::shared_dir();
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << "no shared/ folder at " << shared;
  std::ifstream in(shared + "/reference/" + file);
  ASSERT_TRUE(in.good()) << file;
  const auto expected = nlohmann::ordered_json::parse(in);  // keeps the file's key order
  GeneratorOptions g;
  // Resolution: the largest synthesis block named in the list.
  int64_t resolution = 4;
  for (const auto& item : expected.at("G").items()) {
    if (item.key().rfind("synthesis.b", 0) == 0) {
      resolution = std::max<int64_t>(resolution, std::stoll(item.key().substr(11, item.key().find('.', 11) - 11)));
    }
  }
  g.img_resolution = resolution;
  DiscriminatorOptions d;
  d.img_resolution = resolution;
  Generator G(g);
  Discriminator D(d);
  for (const auto& [net, module] : {std::pair<const char*, torch::nn::Module*>{"G", &G}, {"D", &D}}) {
    const auto ours = state_dict(*module);
    const auto& reference = expected.at(net);
    ASSERT_EQ(ours.size(), reference.size()) << net;
    size_t index = 0;
    for (const auto& item : reference.items()) {  // same keys, same order, same shapes
      EXPECT_EQ(ours[index].first, item.key()) << net << " key " << index;
      EXPECT_EQ(ours[index].second.sizes().vec(), item.value().get<std::vector<int64_t>>()) << item.key();
      ++index;
    }
  }
  EXPECT_EQ(count_parameters(G), expected.at("G_params").get<int64_t>());
  EXPECT_EQ(count_parameters(D), expected.at("D_params").get<int64_t>());
}

TEST(ReferenceKeys, ConfigF256) { expect_keys_match("keys_configf_256.json"); }
TEST(ReferenceKeys, ConfigF1024) { expect_keys_match("keys_configf_1024.json"); }

TEST(Networks, EveryArchitectureAndConditioningRuns) {
  at::manual_seed(1);
  for (auto arch : {Architecture::Orig, Architecture::Skip, Architecture::Resnet}) {
    GeneratorOptions g;
    g.z_dim = g.w_dim = 16;
    g.c_dim = 3;
    g.img_resolution = 16;
    g.img_channels = 3;
    g.channel_base = 128;
    g.channel_max = 16;
    g.mapping_layers = 2;
    g.architecture = arch;
    DiscriminatorOptions d;
    d.c_dim = 3;
    d.img_resolution = 16;
    d.channel_base = 128;
    d.channel_max = 16;
    d.architecture = arch;
    d.mbstd_group_size = 0;
    Generator G(g);
    Discriminator D(d);
    const at::Tensor z = at::randn({4, 16}), c = at::eye(3).index_select(0, at::tensor({0, 1, 2, 0}));
    MappingNetwork::Run truncated;
    truncated.truncation_psi = 0.5;
    truncated.truncation_cutoff = 2;
    const at::Tensor img = G.forward(z, c, truncated, SynthesisRun{});
    EXPECT_EQ(img.sizes(), at::IntArrayRef({4, 3, 16, 16})) << name_of(arch);
    EXPECT_EQ(D.forward(img, c).sizes(), at::IntArrayRef({4, 1})) << name_of(arch);
  }
}

// D's pass of two batches at once gives each the logits of its own pass: the minibatch standard
// deviation's groups stay within a batch. One pass of the plain concatenation would group fakes
// with reals, and change the logits.
TEST(Networks, DiscriminatorPairGivesEachBatchTheLogitsOfItsOwnPass) {
  DiscriminatorOptions d = small_networks().second;
  d.c_dim = 3;
  d.mbstd_group_size = 4;
  at::manual_seed(5);
  Discriminator D(d);
  const int64_t n = 8;
  const at::Tensor a = at::randn({n, 1, 32, 32}), b = at::randn({n, 1, 32, 32}) * 3 + 1;
  const at::Tensor ca = at::eye(3).index_select(0, at::arange(n) % 3), cb = ca.flip(0);
  const auto pair = D.forward_pair(a, ca, b, cb);
  ASSERT_TRUE(pair.has_value());
  const at::Tensor logits_a = D.forward(a, ca), logits_b = D.forward(b, cb);
  EXPECT_TRUE(at::allclose(pair->first, logits_a, 1e-5, 1e-6)) << pair->first - logits_a;
  EXPECT_TRUE(at::allclose(pair->second, logits_b, 1e-5, 1e-6)) << pair->second - logits_b;
  const at::Tensor concatenated = D.forward(at::cat({a, b}), at::cat({ca, cb}));
  EXPECT_FALSE(at::allclose(concatenated.narrow(0, 0, n), logits_a, 1e-3, 1e-4));

  // None where one pass of 2N would group otherwise than two of N, or the batches differ.
  const at::Tensor two = a.narrow(0, 0, 2), two_labels = ca.narrow(0, 0, 2);
  EXPECT_FALSE(D.forward_pair(two, two_labels, b.narrow(0, 0, 2), cb.narrow(0, 0, 2)));  // a group of 2, not 4
  EXPECT_FALSE(D.forward_pair(two, two_labels, b, cb));
  EXPECT_FALSE(D.forward_pair(a, ca, b.to(at::kDouble), cb));
  D.epilogue->mbstd_group_size = 0;  // the whole batch: N, and 2N in one pass
  EXPECT_FALSE(D.forward_pair(a, ca, b, cb));
}

// An 8x8 generator with 8 channels everywhere.
GeneratorOptions tiny_generator() {
  GeneratorOptions g;
  g.z_dim = g.w_dim = 8;
  g.img_resolution = 8;
  g.channel_base = 64;
  g.channel_max = 8;
  return g;
}

TEST(Networks, TruncationPullsTowardsTheAverage) {
  Generator G(tiny_generator());
  const at::Tensor z = at::randn({5, 8});
  MappingNetwork::Run update;
  update.update_w_avg = true;
  const at::Tensor ws = G.mapping->forward(z, at::Tensor(), update);
  MappingNetwork::Run half;
  half.truncation_psi = 0.5;
  const at::Tensor truncated = G.mapping->forward(z, at::Tensor(), half);
  const at::Tensor w_avg = G.mapping->w_avg;
  EXPECT_TRUE(at::allclose(truncated, w_avg + 0.5 * (ws - w_avg), 1e-5, 1e-6));
  EXPECT_GT(w_avg.abs().sum().item<double>(), 0.0);  // the update moved w_avg away from zero
}

// The synthesis network takes ws's rows in one op, so its backward gathers their gradients in one
// op too (UnbindBackward's stack): no zero-filled [N, num_ws, w_dim] per block, [N, 3, w_dim] per
// layer and sum of them all, as a narrow per block and a select per layer had. The gradient is
// that of each layer's own row, a block's toRGB and the next block's first convolution sharing one.
TEST(Networks, SynthesisGathersTheGradientOfWsInOneOp) {
  at::manual_seed(2);
  Generator G(tiny_generator());
  SynthesisRun run;
  run.noise_mode = NoiseMode::Const;
  const at::Tensor ws = at::randn({3, G.synthesis->num_ws, 8}).requires_grad_(true);
  sg2::test::RecordedOps recorded({"aten::select_backward", "aten::slice_backward", "aten::stack"});
  G.synthesis->forward(ws, run).square().sum().backward();
  int stacked_rows = 0, zero_filled = 0;  // the ops on ws's gradient: [N, w_dim] rows, [N, k, w_dim] parts
  for (const auto& call : recorded.take()) {
    const c10::IValue& first = call.inputs.at(0);
    if (call.op == "aten::stack") {
      stacked_rows += first.isTensorList() && at::Tensor(first.toTensorList().get(0)).dim() == 2;
    } else {
      zero_filled += first.isTensor() && first.toTensor().dim() <= 3;  // not the feature maps' [N, C, H, W]
    }
  }
  EXPECT_EQ(stacked_rows, 1);
  EXPECT_EQ(zero_filled, 0);

  // Each layer's row as the reference assigns them, written out for this 8x8 network: b4's conv1
  // row 0, its toRGB row 1; b8's conv0 row 1 (shared with b4's toRGB), conv1 row 2, toRGB row 3.
  ASSERT_EQ(G.synthesis->num_ws, 4);
  const std::vector<std::vector<int64_t>> rows_of_block{{0, 1}, {1, 2, 3}};
  const at::Tensor by_rows = ws.detach().clone().requires_grad_(true);
  at::Tensor x, img;
  for (size_t b = 0; b < G.synthesis->blocks.size(); ++b) {
    std::vector<at::Tensor> rows;
    for (const int64_t row : rows_of_block.at(b)) rows.push_back(by_rows.select(1, row));
    std::tie(x, img) = G.synthesis->blocks[b]->forward(x, img, rows, run);
  }
  img.square().sum().backward();
  EXPECT_TRUE(at::allclose(ws.grad(), by_rows.grad(), 1e-6, 1e-7));
}

TEST(StateDict, LoadReportsMissingMismatchedAndUnexpectedKeys) {
  Generator G(tiny_generator());
  TensorMap source;
  for (const auto& [name, tensor] : state_dict(G, "G.")) source[name] = tensor.clone();
  source.erase("G.mapping.fc0.bias");
  source["G.synthesis.b8.conv1.weight"] = at::zeros({1});
  source["G.synthesis.b8.extra"] = at::zeros({1});
  try {
    load_state_dict(G, source, "G.", "weights.pt");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("weights.pt"), std::string::npos) << m;
    EXPECT_NE(m.find("missing keys (1):\n    G.mapping.fc0.bias"), std::string::npos) << m;
    EXPECT_NE(m.find("G.synthesis.b8.conv1.weight (file [1], network [8, 8, 3, 3])"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected keys (1):\n    G.synthesis.b8.extra"), std::string::npos) << m;
  }
}

TEST(Options, JsonRoundTripAndValidation) {
  GeneratorOptions g;
  g.img_resolution = 64;
  g.architecture = Architecture::Resnet;
  const GeneratorOptions back = generator_options_from_json(to_json(g));
  EXPECT_EQ(back.img_resolution, 64);
  EXPECT_EQ(back.architecture, Architecture::Resnet);
  std::vector<std::string> unknown;
  nlohmann::json j = to_json(g);
  j["surprise"] = 1;
  generator_options_from_json(j, &unknown);
  EXPECT_EQ(unknown, std::vector<std::string>{"G.surprise"});
  j["img_resolution"] = 48;
  EXPECT_THROW(generator_options_from_json(j), Error);
}

TEST(Options, NoneIsNullAsInTheReference) {
  DiscriminatorOptions d;
  d.mbstd_group_size = 0;
  const nlohmann::json j = to_json(d);
  EXPECT_TRUE(j.at("conv_clamp").is_null()) << j.dump();
  EXPECT_TRUE(j.at("cmap_dim").is_null()) << j.dump();
  EXPECT_TRUE(j.at("mbstd_group_size").is_null()) << j.dump();
  nlohmann::json reference = j;
  reference["conv_clamp"] = 256;
  reference["num_fp16_res"] = 4;  // the reference's mixed precision: not a parameter, but how it computes
  std::vector<std::string> unknown;
  const DiscriminatorOptions back = discriminator_options_from_json(reference, &unknown);
  EXPECT_TRUE(unknown.empty());
  EXPECT_DOUBLE_EQ(back.conv_clamp, 256);
  EXPECT_EQ(back.mbstd_group_size, 0);
  EXPECT_EQ(back.precision.num_fp16_res, 4);
  reference["num_fp16_res"] = nullptr;
  EXPECT_EQ(discriminator_options_from_json(reference).precision.num_fp16_res, 0);
}

}  // namespace
}  // namespace sg2::nn
