#include "sg2/train/loss.h"

#include "sg2/core/error.h"

#include <torch/csrc/autograd/autograd.h>

#include <cmath>

namespace sg2::train {

std::string to_string(Phase phase) {
  switch (phase) {
    case Phase::Gmain: return "Gmain";
    case Phase::Greg: return "Greg";
    case Phase::Gboth: return "Gboth";
    case Phase::Dmain: return "Dmain";
    case Phase::Dreg: return "Dreg";
    case Phase::Dboth: return "Dboth";
  }
  return "?";
}

at::Tensor softplus_neg(const at::Tensor& logits) { return at::softplus(-logits); }

std::pair<at::Tensor, at::Tensor> r1_penalty(nn::Discriminator& D, const at::Tensor& real, const at::Tensor& c) {
  at::Tensor logits = D.forward(real, c);  // [N, 1]
  at::Tensor grads = torch::autograd::grad({logits.sum()}, {real}, /*grad_outputs=*/{}, /*retain_graph=*/true,
                                           /*create_graph=*/true)[0];  // [N, C, R, R]
  return {logits, grads.square().sum({1, 2, 3})};
}

at::Tensor path_lengths(const at::Tensor& img, const at::Tensor& ws, const at::Tensor& pl_noise) {
  at::Tensor grads = torch::autograd::grad({(img * pl_noise).sum()}, {ws}, /*grad_outputs=*/{}, /*retain_graph=*/true,
                                           /*create_graph=*/true)[0];  // [N, num_ws, w_dim]
  return grads.square().sum(2).mean(1).sqrt();                        // [N]
}

std::pair<at::Tensor, at::Tensor> path_length_penalty(const at::Tensor& lengths, const at::Tensor& pl_mean,
                                                      double decay) {
  at::Tensor new_mean = pl_mean.lerp(lengths.mean(), decay);
  return {(lengths - new_mean.detach()).square(), new_mean.detach()};
}

StyleGAN2Loss::StyleGAN2Loss(nn::Generator& G, nn::Discriminator& D, const LossOptions& o, const at::Device& device)
    : pl_mean(at::zeros({}, at::TensorOptions().device(device))), options(o), G_(G), D_(D) {}

std::pair<at::Tensor, at::Tensor> StyleGAN2Loss::run_G(const at::Tensor& z, const at::Tensor& c,
                                                       at::Generator& generator) {
  nn::MappingNetwork::Run tracked;
  tracked.update_w_avg = true;
  at::Tensor ws = G_.mapping->forward(z, c, tracked);  // [N, num_ws, w_dim]
  if (options.style_mixing_prob > 0) {
    // Layers from a random cutoff on take ws of a second latent; no host sync.
    const int64_t num_ws = ws.size(1);
    const auto opts = at::TensorOptions().device(ws.device()).dtype(at::kLong);
    at::Tensor cutoff = at::randint(1, num_ws, {}, generator, opts);
    at::Tensor mix = at::rand({}, generator, ws.options()) < options.style_mixing_prob;
    cutoff = at::where(mix, cutoff, at::full({}, num_ws, opts));
    at::Tensor mixed = G_.mapping->forward(at::randn(z.sizes(), generator, z.options()), c, {});
    at::Tensor take_mixed = (at::arange(num_ws, opts) >= cutoff).view({1, num_ws, 1});
    ws = at::where(take_mixed, mixed, ws);
  }
  nn::SynthesisRun run;
  run.noise_mode = nn::NoiseMode::Random;
  run.fused_modconv = fused_modconv;
  run.generator = generator;
  return {G_.synthesis->forward(ws, run), ws};
}

void StyleGAN2Loss::generator_main(const RoundInputs& in, double gain, at::Generator& gen, StatsCollector& stats) {
  at::Tensor img = run_G(in.gen_z, in.gen_c, gen).first;
  at::Tensor logits = D_.forward(img, in.gen_c);
  stats.report("Loss/scores/fake", logits);
  stats.report("Loss/signs/fake", logits.sign());
  at::Tensor loss = softplus_neg(logits);  // -log(sigmoid(logits))
  stats.report("Loss/G/loss", loss);
  loss.mean().mul(gain).backward();
}

void StyleGAN2Loss::generator_path_length(const RoundInputs& in, double gain, at::Generator& gen,
                                          StatsCollector& stats) {
  const int64_t batch = std::max<int64_t>(in.gen_z.size(0) / options.pl_batch_shrink, 1);
  auto [img, ws] = run_G(in.gen_z.narrow(0, 0, batch), in.gen_c.narrow(0, 0, batch), gen);
  at::Tensor pl_noise =
      at::randn(img.sizes(), gen, img.options()) / std::sqrt(static_cast<double>(img.size(2) * img.size(3)));
  at::Tensor lengths = path_lengths(img, ws, pl_noise);
  auto [penalty, new_mean] = path_length_penalty(lengths, pl_mean, options.pl_decay);
  pl_mean.copy_(new_mean);
  stats.report("Loss/pl_penalty", penalty);
  at::Tensor loss = penalty * options.pl_weight;
  stats.report("Loss/G/reg", loss);
  // img * 0 keeps every G parameter in the graph (zero gradients), as the reference does.
  (img.select(1, 0).select(1, 0).select(1, 0) * 0 + loss).mean().mul(gain).backward();
}

at::Tensor StyleGAN2Loss::discriminator_fake(const RoundInputs& in, double gain, at::Generator& gen,
                                             StatsCollector& stats) {
  at::Tensor img;
  {
    at::NoGradGuard no_grad;  // G is not trained in this phase
    img = run_G(in.gen_z, in.gen_c, gen).first;
  }
  at::Tensor logits = D_.forward(img, in.gen_c);
  stats.report("Loss/scores/fake", logits);
  stats.report("Loss/signs/fake", logits.sign());
  at::Tensor loss = at::softplus(logits);  // -log(1 - sigmoid(logits))
  loss.mean().mul(gain).backward();
  return loss.detach();
}

void StyleGAN2Loss::discriminator_real(const RoundInputs& in, double gain, bool main, bool r1,
                                       const at::Tensor& loss_fake, StatsCollector& stats) {
  at::Tensor real = in.real_img.detach().requires_grad_(r1);
  at::Tensor logits, penalty;
  if (r1) {
    std::tie(logits, penalty) = r1_penalty(D_, real, in.real_c);
  } else {
    logits = D_.forward(real, in.real_c);
  }
  stats.report("Loss/scores/real", logits);
  stats.report("Loss/signs/real", logits.sign());
  at::Tensor total = logits * 0;  // keeps every D parameter in the graph
  if (main) {
    at::Tensor loss_real = softplus_neg(logits);
    stats.report("Loss/D/loss", loss_fake.defined() ? loss_fake + loss_real : loss_real);
    total = total + loss_real;
  }
  if (r1) {
    at::Tensor loss_r1 = penalty * (options.r1_gamma / 2);
    stats.report("Loss/r1_penalty", penalty);
    stats.report("Loss/D/reg", loss_r1);
    total = total + loss_r1.unsqueeze(1);
  }
  total.mean().mul(gain).backward();
}

void StyleGAN2Loss::accumulate_gradients(Phase phase, const RoundInputs& in, double gain, at::Generator& gen,
                                         StatsCollector& stats) {
  const bool g_main = (phase == Phase::Gmain || phase == Phase::Gboth);
  const bool g_pl = (phase == Phase::Greg || phase == Phase::Gboth) && options.pl_weight != 0;
  const bool d_main = (phase == Phase::Dmain || phase == Phase::Dboth);
  const bool d_r1 = (phase == Phase::Dreg || phase == Phase::Dboth) && options.r1_gamma != 0;
  if (g_main) generator_main(in, gain, gen, stats);
  if (g_pl) generator_path_length(in, gain, gen, stats);
  at::Tensor loss_fake;
  if (d_main) loss_fake = discriminator_fake(in, gain, gen, stats);
  if (d_main || d_r1) discriminator_real(in, gain, d_main, d_r1, loss_fake, stats);
}

}  // namespace sg2::train
