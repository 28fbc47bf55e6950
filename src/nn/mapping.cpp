#include "sg2/core/error.h"
#include "sg2/nn/networks.h"

#include <fmt/format.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace sg2::nn {

MappingNetwork::MappingNetwork(const MappingOptions& o) : options(o) {
  const int64_t embed_features = (o.c_dim == 0) ? 0 : (o.embed_features < 0 ? o.w_dim : o.embed_features);
  const int64_t layer_features = o.layer_features < 0 ? o.w_dim : o.layer_features;
  if (o.c_dim > 0) embed = register_module("embed", std::make_shared<FullyConnectedLayer>(o.c_dim, embed_features));
  for (int64_t i = 0; i < o.num_layers; ++i) {
    const int64_t in_features = (i == 0) ? o.z_dim + embed_features : layer_features;
    const int64_t out_features = (i == o.num_layers - 1) ? o.w_dim : layer_features;
    FcOptions fc;
    fc.activation = o.activation;
    fc.lr_multiplier = o.lr_multiplier;
    layers.push_back(register_module(fmt::format("fc{}", i),
                                     std::make_shared<FullyConnectedLayer>(in_features, out_features, fc)));
  }
  if (o.num_ws > 0 && o.w_avg_beta >= 0) w_avg = register_buffer("w_avg", at::zeros({o.w_dim}));
}

at::Tensor MappingNetwork::forward(const at::Tensor& z, const at::Tensor& c, const Run& run) {
  at::Tensor x;
  if (options.z_dim > 0) {
    SG2_CHECK(z.dim() == 2 && z.size(1) == options.z_dim, "mapping: z of shape {} is not [N, {}]", z.sizes(),
              options.z_dim);
    x = ops::normalize_2nd_moment(z.to(at::kFloat));
  }
  if (options.c_dim > 0) {
    SG2_CHECK(c.dim() == 2 && c.size(1) == options.c_dim, "mapping: c of shape {} is not [N, {}]", c.sizes(),
              options.c_dim);
    at::Tensor y = ops::normalize_2nd_moment(embed->forward(c.to(at::kFloat)));
    x = x.defined() ? at::cat({x, y}, 1) : y;
  }
  for (auto& layer : layers) x = layer->forward(x);  // [N, w_dim]

  if (run.update_w_avg && w_avg.defined()) {
    at::NoGradGuard no_grad;
    w_avg.copy_(x.detach().mean(0).lerp(w_avg, options.w_avg_beta));
  }
  if (options.num_ws > 0) x = x.unsqueeze(1).repeat({1, options.num_ws, 1});  // [N, num_ws, w_dim]

  if (run.truncation_psi != 1.0) {
    SG2_CHECK(w_avg.defined(), "truncation needs a mapping network that tracks w_avg");
    if (options.num_ws == 0 || run.truncation_cutoff < 0 || run.truncation_cutoff >= options.num_ws) {
      x = w_avg.lerp(x, run.truncation_psi);
    } else {
      const int64_t cutoff = run.truncation_cutoff;
      x = at::cat({w_avg.lerp(x.narrow(1, 0, cutoff), run.truncation_psi), x.narrow(1, cutoff, options.num_ws - cutoff)},
                  1);
    }
  }
  return x;
}

}  // namespace sg2::nn
