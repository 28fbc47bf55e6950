#include "sg2/core/error.h"
#include "sg2/nn/networks.h"

#include <fmt/format.h>

#include <cmath>

namespace sg2::nn {

namespace {

ConvOptions conv_options(const DiscriminatorOptions& d, ops::Activation act, int64_t down, bool bias, double clamp) {
  ConvOptions o;
  o.activation = act;
  o.down = down;
  o.bias = bias;
  o.conv_clamp = clamp;
  o.resample_filter = d.resample_filter;
  return o;
}

// [N, ...] and [N, ...] -> [2N, ...] laid out so that the minibatch standard deviation's
// reshape({groups, -1, ...}) groups a's samples k, k + N/groups, ... as it would in a pass of a
// alone, and b's likewise: each [groups, N/groups, ...], side by side along the second axis.
at::Tensor interleave_groups(const at::Tensor& a, const at::Tensor& b, int64_t groups) {
  std::vector<int64_t> grouped = a.sizes().vec();
  grouped[0] = a.size(0) / groups;
  grouped.insert(grouped.begin(), groups);                       // [groups, N/groups, ...]
  return at::cat({a.reshape(grouped), b.reshape(grouped)}, 1).flatten(0, 1);  // [2N, ...]
}

// The rows of the first (which = 0) or second batch of interleave_groups' pass: [2N, K] -> [N, K].
at::Tensor rows_of(const at::Tensor& both, int64_t groups, int64_t which) {
  const int64_t n = both.size(0) / 2;
  return both.reshape({groups, 2, n / groups, -1}).select(1, which).reshape({n, -1});
}

}  // namespace

DiscriminatorBlock::DiscriminatorBlock(int64_t in_channels_, int64_t tmp_channels, int64_t out_channels,
                                       int64_t resolution_, const DiscriminatorOptions& d)
    : in_channels(in_channels_),
      resolution(resolution_),
      architecture(d.architecture),
      compute_type(d.precision.block_type(resolution_, d.img_resolution)),
      precision(d.precision) {
  const auto lrelu = ops::Activation::LRelu;
  if (in_channels == 0 || architecture == Architecture::Skip) {
    fromrgb = register_module("fromrgb", std::make_shared<Conv2dLayer>(d.img_channels, tmp_channels, 1,
                                                                       conv_options(d, lrelu, 1, true, d.conv_clamp)));
  }
  conv0 = register_module("conv0", std::make_shared<Conv2dLayer>(tmp_channels, tmp_channels, 3,
                                                                 conv_options(d, lrelu, 1, true, d.conv_clamp)));
  conv1 = register_module("conv1", std::make_shared<Conv2dLayer>(tmp_channels, out_channels, 3,
                                                                 conv_options(d, lrelu, 2, true, d.conv_clamp)));
  if (architecture == Architecture::Resnet) {
    skip = register_module("skip", std::make_shared<Conv2dLayer>(
                                       tmp_channels, out_channels, 1,
                                       conv_options(d, ops::Activation::Linear, 2, /*bias=*/false, -1)));
  }
  resample_filter = register_buffer("resample_filter", ops::setup_filter(d.resample_filter));
}

std::pair<at::Tensor, at::Tensor> DiscriminatorBlock::forward(at::Tensor x, at::Tensor img, bool force_fp32) {
  const at::ScalarType type = force_fp32 ? at::kFloat : compute_type;
  const at::MemoryFormat format = precision.block_memory_format(type);
  if (x.defined()) x = x.to(type, /*non_blocking=*/false, /*copy=*/false, format);
  if (fromrgb) {
    img = img.to(type, /*non_blocking=*/false, /*copy=*/false, format);
    at::Tensor y = fromrgb->forward(img);
    x = x.defined() ? x + y : y;
    img = (architecture == Architecture::Skip) ? ops::downsample2d(img, resample_filter, 2, compute) : at::Tensor();
  }
  if (architecture == Architecture::Resnet) {
    at::Tensor y = skip->forward(x, std::sqrt(0.5));
    x = conv0->forward(x);
    x = conv1->forward(x, std::sqrt(0.5));
    x = y.add_(x);
  } else {
    x = conv0->forward(x);
    x = conv1->forward(x);
  }
  return {x, img};
}

DiscriminatorEpilogue::DiscriminatorEpilogue(int64_t in_channels, int64_t cmap_dim_, const DiscriminatorOptions& d)
    : cmap_dim(cmap_dim_),
      mbstd_group_size(d.mbstd_group_size),
      mbstd_num_channels(d.mbstd_num_channels),
      architecture(d.architecture) {
  const auto lrelu = ops::Activation::LRelu;
  if (architecture == Architecture::Skip) {
    fromrgb = register_module("fromrgb", std::make_shared<Conv2dLayer>(d.img_channels, in_channels, 1,
                                                                       conv_options(d, lrelu, 1, true, -1)));
  }
  conv = register_module("conv", std::make_shared<Conv2dLayer>(in_channels + mbstd_num_channels, in_channels, 3,
                                                               conv_options(d, lrelu, 1, true, d.conv_clamp)));
  FcOptions fc_options;
  fc_options.activation = lrelu;
  fc = register_module("fc", std::make_shared<FullyConnectedLayer>(in_channels * 16, in_channels, fc_options));
  out = register_module("out", std::make_shared<FullyConnectedLayer>(in_channels, cmap_dim == 0 ? 1 : cmap_dim));
}

at::Tensor DiscriminatorEpilogue::forward(const at::Tensor& x_in, const at::Tensor& img, const at::Tensor& cmap) {
  at::Tensor x = x_in.to(at::kFloat, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Contiguous);
  if (fromrgb) x = x + fromrgb->forward(img.to(at::kFloat, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Contiguous));
  if (mbstd_num_channels > 0) x = ops::minibatch_stddev(x, mbstd_group_size, mbstd_num_channels);
  x = conv->forward(x);             // [N, C, 4, 4]
  x = fc->forward(x.flatten(1));    // [N, C]
  x = out->forward(x);              // [N, max(1, cmap_dim)]
  if (cmap_dim > 0) {
    SG2_CHECK(cmap.defined() && cmap.size(1) == cmap_dim, "discriminator: cmap must be [N, {}]", cmap_dim);
    x = (x * cmap).sum(1, /*keepdim=*/true) * (1.0 / std::sqrt(static_cast<double>(cmap_dim)));
  }
  return x;
}

Discriminator::Discriminator(const DiscriminatorOptions& o) : options(o) {
  validate(o);
  for (int64_t res = o.img_resolution; res > 4; res /= 2) {
    const int64_t in_channels = res < o.img_resolution ? o.channels_at(res) : 0;
    auto block = std::make_shared<DiscriminatorBlock>(in_channels, o.channels_at(res), o.channels_at(res / 2), res, o);
    blocks.push_back(register_module(fmt::format("b{}", res), block));
  }
  const int64_t cmap_dim = (o.c_dim == 0) ? 0 : (o.cmap_dim < 0 ? o.channels_at(4) : o.cmap_dim);
  if (o.c_dim > 0) {
    MappingOptions m;
    m.z_dim = 0;
    m.c_dim = o.c_dim;
    m.w_dim = cmap_dim;
    m.num_ws = 0;
    m.num_layers = o.mapping_layers;
    m.lr_multiplier = o.mapping_lr_multiplier;
    m.w_avg_beta = -1;
    mapping = register_module("mapping", std::make_shared<MappingNetwork>(m));
  }
  epilogue = register_module("b4", std::make_shared<DiscriminatorEpilogue>(o.channels_at(4), cmap_dim, o));
}

at::Tensor Discriminator::forward(const at::Tensor& img_in, const at::Tensor& c, bool force_fp32) {
  const int64_t r = options.img_resolution;
  SG2_CHECK(img_in.dim() == 4 && img_in.size(1) == options.img_channels && img_in.size(2) == r && img_in.size(3) == r,
            "discriminator: images of shape {} are not [N, {}, {}, {}]", img_in.sizes(), options.img_channels, r, r);
  at::Tensor x, img = img_in;
  for (auto& block : blocks) std::tie(x, img) = block->forward(x, img, force_fp32);
  at::Tensor cmap;
  if (mapping) cmap = mapping->forward(at::Tensor(), c, MappingNetwork::Run{});
  return epilogue->forward(x, img, cmap);
}

std::optional<std::pair<at::Tensor, at::Tensor>> Discriminator::forward_pair(const at::Tensor& a, const at::Tensor& ca,
                                                                              const at::Tensor& b,
                                                                              const at::Tensor& cb) {
  if (a.dim() != 4 || a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type() || a.device() != b.device() ||
      ca.defined() != cb.defined() ||
      (ca.defined() && (ca.sizes() != cb.sizes() || ca.scalar_type() != cb.scalar_type()))) {
    return std::nullopt;
  }
  const int64_t n = a.size(0);
  int64_t groups = 1;  // without the standard deviation no op mixes samples
  if (epilogue->mbstd_num_channels > 0) {  // the epilogue's, which it runs with
    groups = epilogue->mbstd_group_size;    // a pass of N takes min(size, N), of 2N min(size, 2N)
    if (groups <= 0 || groups > n || n % groups != 0) return std::nullopt;
  }
  const at::Tensor c = ca.defined() ? interleave_groups(ca, cb, groups) : ca;
  const at::Tensor logits = forward(interleave_groups(a, b, groups), c);
  return std::make_pair(rows_of(logits, groups, 0), rows_of(logits, groups, 1));
}

}  // namespace sg2::nn
