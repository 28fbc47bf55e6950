#include "sg2/core/error.h"
#include "sg2/nn/networks.h"

#include <fmt/format.h>

#include <cmath>

namespace sg2::nn {

namespace {

SynthesisLayerOptions layer_options(const GeneratorOptions& g, int64_t up) {
  SynthesisLayerOptions o;
  o.up = up;
  o.use_noise = g.use_noise;
  o.resample_filter = g.resample_filter;
  o.conv_clamp = g.conv_clamp;
  return o;
}

}  // namespace

SynthesisBlock::SynthesisBlock(int64_t in_channels_, int64_t out_channels, int64_t resolution_, bool is_last,
                               const GeneratorOptions& g)
    : in_channels(in_channels_),
      resolution(resolution_),
      architecture(g.architecture),
      compute_type(g.precision.block_type(resolution_, g.img_resolution)),
      precision(g.precision) {
  if (in_channels == 0) const_input = register_parameter("const", at::randn({out_channels, resolution, resolution}));
  if (in_channels != 0) {
    conv0 = register_module("conv0", std::make_shared<SynthesisLayer>(in_channels, out_channels, g.w_dim, resolution,
                                                                      layer_options(g, 2)));
    ++num_conv;
  }
  conv1 = register_module(
      "conv1", std::make_shared<SynthesisLayer>(out_channels, out_channels, g.w_dim, resolution, layer_options(g, 1)));
  ++num_conv;
  if (is_last || architecture == Architecture::Skip) {
    torgb = register_module("torgb", std::make_shared<ToRGBLayer>(out_channels, g.img_channels, g.w_dim, g.conv_clamp));
    ++num_torgb;
  }
  if (in_channels != 0 && architecture == Architecture::Resnet) {
    ConvOptions skip_options;
    skip_options.bias = false;
    skip_options.up = 2;
    skip_options.resample_filter = g.resample_filter;
    skip = register_module("skip", std::make_shared<Conv2dLayer>(in_channels, out_channels, 1, skip_options));
  }
  resample_filter = register_buffer("resample_filter", ops::setup_filter(g.resample_filter));
}

std::pair<at::Tensor, at::Tensor> SynthesisBlock::forward(at::Tensor x, at::Tensor img, at::TensorList ws,
                                                          const SynthesisRun& run) {
  SG2_CHECK(static_cast<int64_t>(ws.size()) == num_conv + num_torgb, "synthesis block {}: {} rows of ws, not {}",
            resolution, ws.size(), num_conv + num_torgb);
  size_t w_index = 0;
  auto next_w = [&] { return ws[w_index++]; };  // [N, w_dim]
  const int64_t batch = ws[0].size(0);
  const at::ScalarType type = run.force_fp32 ? at::kFloat : compute_type;
  const at::MemoryFormat format = precision.block_memory_format(type);
  // The reference fuses only in float32 or for a single sample; folding a batch into the channels
  // would also undo channels_last (a copy to NCHW and back in every block).
  SynthesisRun block_run = run;
  const bool nchw_float32 = type == at::kFloat && format == at::MemoryFormat::Contiguous;
  block_run.fused_modconv = run.fused_modconv && (nchw_float32 || batch == 1);

  if (in_channels == 0) {
    x = const_input.to(type).unsqueeze(0).repeat({batch, 1, 1, 1}).contiguous(format);  // [N, C, 4, 4]
    x = conv1->forward(x, next_w(), block_run);
  } else if (architecture == Architecture::Resnet) {
    x = x.to(type, /*non_blocking=*/false, /*copy=*/false, format);
    at::Tensor y = skip->forward(x, std::sqrt(0.5));
    x = conv0->forward(x, next_w(), block_run);
    x = conv1->forward(x, next_w(), block_run, std::sqrt(0.5));
    x = y.add_(x);
  } else {
    x = x.to(type, /*non_blocking=*/false, /*copy=*/false, format);
    x = conv0->forward(x, next_w(), block_run);
    x = conv1->forward(x, next_w(), block_run);
  }

  if (img.defined()) img = ops::upsample2d(img, resample_filter, 2, compute);
  if (torgb) {
    // Images stay float32 and contiguous.
    at::Tensor y = torgb->forward(x, next_w(), block_run.fused_modconv)
                       .to(at::kFloat, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Contiguous);
    img = img.defined() ? img.add_(y) : y;
  }
  return {x, img};
}

SynthesisNetwork::SynthesisNetwork(const GeneratorOptions& g) : w_dim(g.w_dim) {
  for (int64_t res = 4; res <= g.img_resolution; res *= 2) {
    const int64_t in_channels = res > 4 ? g.channels_at(res / 2) : 0;
    const bool is_last = (res == g.img_resolution);
    auto block = std::make_shared<SynthesisBlock>(in_channels, g.channels_at(res), res, is_last, g);
    num_ws += block->num_conv + (is_last ? block->num_torgb : 0);
    blocks.push_back(register_module(fmt::format("b{}", res), block));
  }
}

at::Tensor SynthesisNetwork::forward(const at::Tensor& ws_in, const SynthesisRun& run) {
  SG2_CHECK(ws_in.dim() == 3 && ws_in.size(1) == num_ws && ws_in.size(2) == w_dim,
            "synthesis: ws of shape {} is not [N, {}, {}]", ws_in.sizes(), num_ws, w_dim);
  // ws's rows, each [N, w_dim], in one op: its backward stacks their gradients in one op too, where
  // a narrow per block and a select per layer each fill a zero [N, num_ws, w_dim] or [N, 3, w_dim]
  // tensor to copy a row's gradient into, and autograd then sums those.
  const std::vector<at::Tensor> rows = ws_in.to(at::kFloat).unbind(1);
  at::Tensor x, img;
  size_t w_index = 0;
  for (auto& block : blocks) {
    // A block's toRGB shares its row with the next block's first convolution.
    const auto block_rows = at::TensorList(rows).slice(w_index, block->num_conv + block->num_torgb);
    w_index += block->num_conv;
    std::tie(x, img) = block->forward(x, img, block_rows, run);
  }
  return img;
}

Generator::Generator(const GeneratorOptions& o) : options(o) {
  validate(o);
  synthesis = register_module("synthesis", std::make_shared<SynthesisNetwork>(o));
  MappingOptions m;
  m.z_dim = o.z_dim;
  m.c_dim = o.c_dim;
  m.w_dim = o.w_dim;
  m.num_ws = synthesis->num_ws;
  m.num_layers = o.mapping_layers;
  m.lr_multiplier = o.mapping_lr_multiplier;
  m.w_avg_beta = o.w_avg_beta;
  mapping = register_module("mapping", std::make_shared<MappingNetwork>(m));
}

at::Tensor Generator::forward(const at::Tensor& z, const at::Tensor& c, const MappingNetwork::Run& mapping_run,
                              const SynthesisRun& synthesis_run) {
  return synthesis->forward(mapping->forward(z, c, mapping_run), synthesis_run);
}

}  // namespace sg2::nn
