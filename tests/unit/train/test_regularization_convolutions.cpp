// What conv2d_gradfix is for, checked on the networks' real regularization phases: with it, no
// convolution of a training cycle (R1's and path length's second-order gradients included) takes a
// feature map as its kernel, the shapes cuDNN has no fast kernels for; without it, LibTorch's double
// backward does. Training turns it on for CUDA only (as the reference): on a GPU these tests run
// there as training does (the kit's gpu_tests step); on the CPU the gradfix is turned on for every
// device, so the CPU runs the ops a GPU would. Every convolution the ops dispatch is recorded with
// its weight's shape.
#include "sg2/ops/conv_gradfix.h"
#include "sg2/ops/tf32_split.h"
#include "sg2/train/loss.h"
#include "sg2/train/training_loop.h"
#include "recorded_ops.h"
#include "test_support.h"
#include "tiny_config.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sg2::train {
namespace {

const std::vector<std::string> kConvolutionOps{"aten::_convolution", "aten::convolution_backward",
                                               "aten::_convolution_double_backward"};

// One dispatched convolution: its op, its weight's sizes ([O, I, kh, kw]) and, for
// convolution_backward, whether it computed a weight gradient.
struct ConvolutionCall {
  std::string op;
  std::vector<int64_t> weight_sizes;
  bool weight_gradient = false;
};

// The weight's position among an op's inputs, for the ops every convolution goes through
// (conv2d and conv_transpose2d reach _convolution; weight gradients run convolution_backward).
size_t weight_input_index(const std::string& op) {
  if (op == "aten::_convolution") return 1;
  if (op == "aten::convolution_backward") return 2;
  return 4;  // _convolution_double_backward: ggI, ggW, ggb, gO, weight
}

std::vector<ConvolutionCall> convolutions_in(const std::vector<test::OpCall>& calls) {
  std::vector<ConvolutionCall> convolutions;
  for (const test::OpCall& call : calls) {
    ConvolutionCall convolution{call.op, {}};
    const size_t weight = weight_input_index(call.op);
    if (weight < call.inputs.size() && call.inputs[weight].isTensor()) {
      convolution.weight_sizes = call.inputs[weight].toTensor().sizes().vec();
    }
    const size_t output_mask = 10;  // grad_output, input, weight, bias_sizes, stride, ..., groups, output_mask
    if (call.op == "aten::convolution_backward" && call.inputs.size() > output_mask) {
      convolution.weight_gradient = call.inputs[output_mask].toBoolList().get(1);
    }
    convolutions.push_back(convolution);
  }
  return convolutions;
}

// On a GPU where there is one, with the gradfix as training sets it (CUDA only); else on the CPU,
// with it turned on there too.
at::Device test_device() { return torch::cuda::is_available() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU); }

// The devices where a test turns conv2d_gradfix (or the TF32 split) on.
ops::DeviceSet on_test_device() { return test_device().is_cuda() ? ops::DeviceSet::Cuda : ops::DeviceSet::All; }

// The run's compute settings with conv2d_gradfix on `devices`.
ops::ComputeSettings with_gradfix(ops::DeviceSet devices) {
  ops::ComputeSettings compute;
  compute.conv2d_gradfix = devices;
  return compute;
}

ops::ComputeSettings gradfix_on() { return with_gradfix(on_test_device());
}

// Reduced16Bit is the GPU benches' setting: the highest resolutions in float16, their activations
// channels_last (on a GPU only: see below); Float16ChannelsLast the same with every block's
// activations channels_last.
enum class Layout { Float32Nchw, Float32ChannelsLast, Reduced16Bit, Float16ChannelsLast };

TrainConfig tiny_config_in(Layout layout) {
  TrainConfig c = test::tiny_config();
  c.data.workers = 0;
  c.run.mixed_precision = ReducedType::Off;
  if (layout == Layout::Float32ChannelsLast) c.run.channels_last = ChannelsLastBlocks::All;
  if (layout == Layout::Reduced16Bit || layout == Layout::Float16ChannelsLast) {
    c.run.mixed_precision = ReducedType::Float16;
    c.run.channels_last = layout == Layout::Reduced16Bit ? ChannelsLastBlocks::Reduced : ChannelsLastBlocks::All;
    c.G.precision.num_fp16_res = c.D.precision.num_fp16_res = 2;
    c.G.conv_clamp = c.D.conv_clamp = 256;
  }
  return c;
}

// The calls of `ops` in 6 training steps of the tiny configuration (Gmain and Dmain each step; Greg
// every 2nd, Dreg every 3rd) with conv2d_gradfix on `devices`.
std::vector<test::OpCall> calls_in_a_cycle(const std::vector<std::string>& ops, const ops::ComputeSettings& compute,
                                           Layout layout) {
  const TrainConfig c = tiny_config_in(layout);
  Trainer trainer(c, open_configured_dataset(c), test_device());
  trainer.set_compute(compute);
  test::RecordedOps recorded(ops);
  for (int step = 0; step < 6; ++step) trainer.step();
  return recorded.take();
}

std::vector<ConvolutionCall> convolutions_of_a_cycle(const ops::ComputeSettings& compute, Layout layout) {
  return convolutions_in(calls_in_a_cycle(kConvolutionOps, compute, layout));
}

// A kernel larger than StyleGAN2's 3x3 (and 1x1) is a feature map in the weight's place.
bool takes_a_feature_map_as_kernel(const ConvolutionCall& call) {
  const auto& w = call.weight_sizes;
  return w.size() != 4 || w[2] > 3 || w[3] > 3;
}

std::string describe(const ConvolutionCall& call) {
  return call.op + " weight " + c10::str(at::IntArrayRef(call.weight_sizes));
}

TEST(Conv2dGradfix, NoConvolutionOfARegularizedCycleTakesAFeatureMapAsItsKernel) {
  std::vector<std::pair<Layout, std::string>> layouts{{Layout::Float32Nchw, "float32 NCHW"},
                                                      {Layout::Float32ChannelsLast, "float32 channels_last"}};
  // 16-bit on a GPU only: the CPU's FIR kernel takes no 16-bit type, so there the filters run as
  // the reference's depthwise convolutions, whose double backward is LibTorch's (and LibTorch
  // 1.13's CPU conv_transpose2d fails in bfloat16 besides).
  if (test_device().is_cuda()) layouts.emplace_back(Layout::Reduced16Bit, "float16 channels_last");
  for (const auto& [layout, name] : layouts) {
    const auto calls = convolutions_of_a_cycle(gradfix_on(), layout);
    ASSERT_GT(calls.size(), 100u) << name;
    for (const ConvolutionCall& call : calls) {
      EXPECT_NE(call.op, "aten::_convolution_double_backward") << name;
      EXPECT_FALSE(takes_a_feature_map_as_kernel(call)) << describe(call) << ", " << name;
    }
  }
}

// The check above can fail: LibTorch's own double backward (the CPU's path in training) convolves
// with feature maps as kernels.
TEST(Conv2dGradfix, WithoutItTheRegularizersConvolveWithFeatureMapsAsKernels) {
  const auto calls = convolutions_of_a_cycle(with_gradfix(ops::DeviceSet::None), Layout::Float32Nchw);
  int double_backwards = 0, feature_map_kernels = 0;
  for (const ConvolutionCall& call : calls) {
    double_backwards += call.op == "aten::_convolution_double_backward";
    feature_map_kernels += takes_a_feature_map_as_kernel(call);
  }
  EXPECT_GT(double_backwards, 0);
  EXPECT_GT(feature_map_kernels, 0);
}

// run.float32_convolutions 3xtf32 (sg2/ops/tf32_split.h) reaches every convolution of a float32
// training cycle, each then in three passes: the forwards and the input and weight gradients to
// every order through the gradfix, and those that record no gradient (G's in the D phases).
TEST(Tf32Split, EveryConvolutionOfAFloat32TrainingCycleRunsInThreePasses) {
  const size_t ieee = convolutions_of_a_cycle(gradfix_on(), Layout::Float32Nchw).size();
  ops::ComputeSettings split = gradfix_on();
  split.tf32_split = on_test_device();
  ASSERT_GT(ieee, 100u);
  EXPECT_EQ(convolutions_of_a_cycle(split, Layout::Float32Nchw).size(), 3 * ieee);
}

// The first backward of each regularizer, d(penalty input)/d(images or ws) with create_graph, needs
// no weight gradient (the reference's conv2d_gradfix.no_weight_gradients()); autograd tells each
// convolution so, and the gradfix's backward asks it, so none is computed there: the weights'
// gradients come once, in the second backward.
TEST(Conv2dGradfix, TheRegularizersFirstBackwardComputesNoWeightGradient) {
  const TrainConfig c = tiny_config_in(Layout::Float32Nchw);
  const at::Device device = test_device();
  Trainer trainer(c, open_configured_dataset(c), device);
  for (auto& p : trainer.G().parameters()) p.requires_grad_(true);  // as in the Greg and Dreg phases
  for (auto& p : trainer.D().parameters()) p.requires_grad_(true);
  trainer.set_compute(gradfix_on());
  StyleGAN2Loss loss(trainer.G(), trainer.D(), c.loss, device);
  at::Generator rng = at::globalContext().defaultGenerator(device);
  const auto options = at::TensorOptions().device(device);
  const at::Tensor z = at::randn({4, c.G.z_dim}, options), labels = at::zeros({4, 0}, options);
  const auto [img, ws] = loss.run_G(z, labels, rng);
  const at::Tensor real = img.detach().requires_grad_(true);
  test::RecordedOps recorded(kConvolutionOps);
  const at::Tensor lengths = path_lengths(img, ws, at::randn(img.sizes(), options));
  const auto path_length_calls = convolutions_in(recorded.take());
  const at::Tensor r1 = r1_penalty(trainer.D(), real, labels).second;
  const auto r1_calls = convolutions_in(recorded.take());
  (lengths.sum() + r1.sum()).backward();
  const auto second_backward_calls = convolutions_in(recorded.take());

  const auto weight_gradients = [](const std::vector<ConvolutionCall>& calls) {
    return std::count_if(calls.begin(), calls.end(), [](const ConvolutionCall& call) { return call.weight_gradient; });
  };
  EXPECT_GT(path_length_calls.size(), 10u);  // the input gradients of G's convolutions
  EXPECT_EQ(weight_gradients(path_length_calls), 0);
  EXPECT_GT(r1_calls.size(), 10u);
  EXPECT_EQ(weight_gradients(r1_calls), 0);
  EXPECT_GT(weight_gradients(second_backward_calls), 10);  // and here they are
}

// The element-wise ops of autograd's and our gradients, which a channels_last network must give
// channels_last operands: LibTorch runs an op on a mix of layouts by its strided loop, on a GPU
// several times slower than its vectorised one (the regularizers' second order at 256x256 lost tens
// of milliseconds a Greg call to them), and converts what an op returns.
const std::vector<std::string> kElementwiseOps{"aten::mul", "aten::mul_", "aten::add", "aten::add_", "aten::sub",
                                               "aten::addcmul", "aten::div", "aten::where", "aten::copy_"};

// A dense feature map's layout, where its shape tells one: more channels than an image's 1 or 3
// (whose float32 NCHW is the networks' interface), more pixels than a 3x3 weight (the networks'
// smallest maps are 4x4).
std::optional<at::MemoryFormat> feature_map_layout(const at::Tensor& t) {
  if (t.dim() != 4 || t.size(1) <= 3 || t.size(2) * t.size(3) <= 9) return std::nullopt;
  if (t.is_contiguous()) return at::MemoryFormat::Contiguous;
  if (t.is_contiguous(at::MemoryFormat::ChannelsLast)) return at::MemoryFormat::ChannelsLast;
  return std::nullopt;  // a broadcast or a view
}

// Whether a call takes feature maps of one shape in both layouts; and whether it takes any.
std::pair<bool, bool> mixes_layouts(const test::OpCall& call) {
  std::set<at::MemoryFormat> layouts;
  bool feature_maps = false;
  std::vector<int64_t> shape;
  for (const c10::IValue& input : call.inputs) {
    if (!input.isTensor() || !input.toTensor().defined()) continue;
    const at::Tensor t = input.toTensor();
    const auto layout = feature_map_layout(t);
    if (!layout) continue;
    if (shape.empty()) shape = t.sizes().vec();
    if (t.sizes() != at::IntArrayRef(shape)) continue;
    feature_maps = true;
    layouts.insert(*layout);
  }
  return {layouts.size() > 1, feature_maps};
}

// The call's tensors, sizes and strides (NHWC strides: channels 1).
std::string describe_inputs(const test::OpCall& call) {
  std::string described;
  for (const c10::IValue& input : call.inputs) {
    if (input.isTensor() && input.toTensor().defined()) {
      described += c10::str(input.toTensor().sizes(), " strides ", input.toTensor().strides(), " ");
    }
  }
  return described;
}

// With run.channels_last all, every element-wise op of a training cycle on feature maps (the
// regularizers' second order included) takes them in one layout: the convolutions' gradients keep
// the network's (conv2d_gradfix.h's ConvGeometry::layout), also where ToRGB's NCHW image gradient
// or a 1-channel tensor would decide it. copy_ excepted: the CPU's convolutions convert NHWC to
// NCHW and back inside (cuDNN takes NHWC), so on the CPU conversions are no sign of ours; and on
// the GPU the 4x4 maps' copies, the two conversions the networks make by design and their
// gradients' (G's const input, an NCHW parameter, into the block's layout; D's epilogue, which
// takes float32 NCHW for the reference's flatten order): an H200 run found these and no other.
bool is_a_designed_conversion(const test::OpCall& call) {
  if (call.op != "aten::copy_") return false;
  if (!test_device().is_cuda()) return true;
  const c10::IValue& destination = call.inputs.front();
  return destination.isTensor() && destination.toTensor().dim() == 4 && destination.toTensor().size(2) == 4 &&
         destination.toTensor().size(3) == 4;
}

TEST(ChannelsLastRegularization, NoElementwiseOpOfACycleMixesLayouts) {
  std::vector<std::pair<Layout, std::string>> layouts{{Layout::Float32ChannelsLast, "float32"}};
  if (test_device().is_cuda()) layouts.emplace_back(Layout::Float16ChannelsLast, "float16");
  for (const auto& [layout, name] : layouts) {
    int feature_map_calls = 0;
    for (const test::OpCall& call : calls_in_a_cycle(kElementwiseOps, gradfix_on(), layout)) {
      if (is_a_designed_conversion(call)) continue;
      const auto [mixed, feature_maps] = mixes_layouts(call);
      feature_map_calls += feature_maps;
      EXPECT_FALSE(mixed) << call.op << " " << describe_inputs(call) << ", " << name;
    }
    EXPECT_GT(feature_map_calls, 200) << name;
  }
}

}  // namespace
}  // namespace sg2::train
