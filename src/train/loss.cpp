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
  return r1_penalty(D, real, real, c);
}

std::pair<at::Tensor, at::Tensor> r1_penalty(nn::Discriminator& D, const at::Tensor& real, const at::Tensor& seen,
                                             const at::Tensor& c) {
  at::Tensor logits = D.forward(seen, c);  // [N, 1]
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
    : pl_mean(at::zeros({}, at::TensorOptions().device(device))),
      options(o),
      G_(G),
      D_(D),
      deferred_(at::zeros({G.options.w_dim + 3}, at::TensorOptions().device(device))) {}

std::pair<at::Tensor, at::Tensor> StyleGAN2Loss::run_G(const at::Tensor& z, const at::Tensor& c,
                                                       at::Generator& rng) {
  nn::MappingNetwork::Run tracked;
  tracked.update_w_avg = !defer_running_means;
  at::Tensor ws = G_.mapping->forward(z, c, tracked);  // [N, num_ws, w_dim]
  if (defer_running_means && G_.mapping->w_avg.defined()) add_deferred(0, ws.select(1, 0).detach());
  if (options.style_mixing_prob > 0) {
    // Layers from a random cutoff on take ws of a second latent; no host sync.
    const int64_t num_ws = ws.size(1);
    const auto opts = at::TensorOptions().device(ws.device()).dtype(at::kLong);
    at::Tensor cutoff = at::randint(1, num_ws, {}, rng, opts);
    at::Tensor mix = at::rand({}, rng, ws.options()) < options.style_mixing_prob;
    cutoff = at::where(mix, cutoff, at::full({}, num_ws, opts));
    at::Tensor mixed = G_.mapping->forward(at::randn(z.sizes(), rng, z.options()), c, {});
    at::Tensor take_mixed = (at::arange(num_ws, opts) >= cutoff).view({1, num_ws, 1});
    ws = at::where(take_mixed, mixed, ws);
  }
  nn::SynthesisRun run;
  run.noise_mode = nn::NoiseMode::Random;
  run.fused_modconv = fused_modconv;
  run.rng = rng;
  return {G_.synthesis->forward(ws, run), ws};
}

at::Tensor StyleGAN2Loss::generator_main(const RoundInputs& in, at::Generator& rng, StatsCollector& stats) {
  at::Tensor img = run_G(in.gen_z, in.gen_c, rng).first;
  at::Tensor logits = D_.forward(seen_by_D(img, rng), in.gen_c);
  stats.report("Loss/scores/fake", logits);
  stats.report("Loss/signs/fake", logits.sign());
  at::Tensor loss = softplus_neg(logits);  // -log(sigmoid(logits))
  stats.report("Loss/G/loss", loss);
  return loss.mean();
}

at::Tensor StyleGAN2Loss::generator_path_length(const RoundInputs& in, at::Generator& rng, StatsCollector& stats) {
  const int64_t batch = std::max<int64_t>(in.gen_z.size(0) / options.pl_batch_shrink, 1);
  auto [img, ws] = run_G(in.gen_z.narrow(0, 0, batch), in.gen_c.narrow(0, 0, batch), rng);
  at::Tensor pl_noise =
      at::randn(img.sizes(), rng, img.options()) / std::sqrt(static_cast<double>(img.size(2) * img.size(3)));
  at::Tensor lengths = path_lengths(img, ws, pl_noise);
  at::Tensor penalty;
  if (defer_running_means) {
    penalty = (lengths - pl_mean).square();
    add_deferred(G_.options.w_dim + 1, lengths.detach().unsqueeze(1));
  } else {
    at::Tensor new_mean;
    std::tie(penalty, new_mean) = path_length_penalty(lengths, pl_mean, options.pl_decay);
    pl_mean.copy_(new_mean);
  }
  stats.report("Loss/pl_penalty", penalty);
  at::Tensor loss = penalty * options.pl_weight;
  stats.report("Loss/G/reg", loss);
  // img * 0 keeps every G parameter in the graph (zero gradients), as the reference does.
  return (img.select(1, 0).select(1, 0).select(1, 0) * 0 + loss).mean();
}

at::Tensor StyleGAN2Loss::generated_images(const RoundInputs& in, at::Generator& rng) {
  at::NoGradGuard no_grad;  // G is not trained in D's phases
  return run_G(in.gen_z, in.gen_c, rng).first;
}

at::Tensor StyleGAN2Loss::seen_by_D(const at::Tensor& images, at::Generator& rng) {
  return augment != nullptr && augment->enabled() ? (*augment)(images, rng) : images;
}

at::Tensor StyleGAN2Loss::discriminator_fake(const at::Tensor& logits, StatsCollector& stats) {
  stats.report("Loss/scores/fake", logits);
  stats.report("Loss/signs/fake", logits.sign());
  return at::softplus(logits);  // [N, 1] -log(1 - sigmoid(logits))
}

at::Tensor StyleGAN2Loss::discriminator_real(const RoundInputs& in, bool main, bool r1, const at::Tensor& loss_fake,
                                             at::Tensor logits, at::Generator& rng, StatsCollector& stats) {
  at::Tensor penalty;
  if (r1) {
    at::Tensor real = in.real_img.detach().requires_grad_(true);
    std::tie(logits, penalty) = r1_penalty(D_, real, seen_by_D(real, rng), in.real_c);
  }
  const at::Tensor signs = logits.sign();
  if (augment != nullptr) augment->add_real_signs(signs);
  stats.report("Loss/scores/real", logits);
  stats.report("Loss/signs/real", signs);
  at::Tensor total = logits * 0;  // keeps every D parameter in the graph
  if (main) {
    at::Tensor loss_real = softplus_neg(logits);
    stats.report("Loss/D/loss", loss_fake.defined() ? loss_fake.detach() + loss_real : loss_real);
    total = total + loss_real;
  }
  if (r1) {
    at::Tensor loss_r1 = penalty * (options.r1_gamma / 2);
    stats.report("Loss/r1_penalty", penalty);
    stats.report("Loss/D/reg", loss_r1);
    total = total + loss_r1.unsqueeze(1);
  }
  return total.mean();
}

void StyleGAN2Loss::accumulate_gradients(Phase phase, const RoundInputs& in, double gain, at::Generator& rng,
                                         StatsCollector& stats) {
  const bool g_main = (phase == Phase::Gmain || phase == Phase::Gboth);
  const bool g_pl = (phase == Phase::Greg || phase == Phase::Gboth) && options.pl_weight != 0;
  const bool d_main = (phase == Phase::Dmain || phase == Phase::Dboth);
  const bool d_r1 = (phase == Phase::Dreg || phase == Phase::Dboth) && options.r1_gamma != 0;
  std::vector<at::Tensor> terms;  // summed into one backward pass
  if (g_main) terms.push_back(generator_main(in, rng, stats));
  if (g_pl) terms.push_back(generator_path_length(in, rng, stats));
  at::Tensor loss_fake, real_logits;
  if (d_main) {
    const at::Tensor img = seen_by_D(generated_images(in, rng), rng);
    at::Tensor fake_logits;
    if (d_r1) {
      fake_logits = D_.forward(img, in.gen_c);  // the reals' pass needs a graph of its own for R1
    } else {
      // The fakes' augmentation draws before the reals', as in the reference's two passes; both in
      // one pass of D where that keeps its minibatch groups.
      const at::Tensor real = seen_by_D(in.real_img.detach(), rng);
      if (const auto pair = D_.forward_pair(img, in.gen_c, real, in.real_c)) {
        std::tie(fake_logits, real_logits) = *pair;
      } else {
        fake_logits = D_.forward(img, in.gen_c);
        real_logits = D_.forward(real, in.real_c);
      }
    }
    loss_fake = discriminator_fake(fake_logits, stats);
    terms.push_back(loss_fake.mean());
  }
  if (d_main || d_r1) terms.push_back(discriminator_real(in, d_main, d_r1, loss_fake, real_logits, rng, stats));
  if (terms.empty()) return;
  at::stack(terms).sum().mul(gain).backward();
}

void StyleGAN2Loss::add_deferred(int64_t offset, const at::Tensor& rows) {
  deferred_.narrow(0, offset, rows.size(1)).add_(rows.sum(0));
  deferred_[offset + rows.size(1)].add_(rows.size(0));
}

at::Tensor StyleGAN2Loss::take_deferred_sums() {
  at::Tensor out = deferred_.clone();
  deferred_.zero_();
  return out;
}

void StyleGAN2Loss::apply_deferred_sums(const at::Tensor& summed) {
  const int64_t w_dim = G_.options.w_dim;
  at::Tensor w_count = summed[w_dim], pl_count = summed[w_dim + 2];
  at::Tensor& w_avg = G_.mapping->w_avg;
  if (w_avg.defined()) {
    at::Tensor w_mean = summed.narrow(0, 0, w_dim) / w_count.clamp_min(1);
    w_avg.copy_(at::where(w_count > 0, w_mean.lerp(w_avg, G_.options.w_avg_beta), w_avg));
  }
  at::Tensor pl_batch_mean = summed[w_dim + 1] / pl_count.clamp_min(1);
  pl_mean.copy_(at::where(pl_count > 0, pl_mean.lerp(pl_batch_mean, options.pl_decay), pl_mean));
}

}  // namespace sg2::train
