#pragma once
// The StyleGAN2 losses (reference: training/loss.py). The loss terms are pure functions, shared by
// the trainer and the parity checker; StyleGAN2Loss composes them into the four phases with style
// mixing, random noise, lazy-regularization gains and statistics.

#include "sg2/nn/networks.h"
#include "sg2/train/adaptive_augment.h"
#include "sg2/train/loss_options.h"
#include "sg2/train/stats.h"

#include <ATen/ATen.h>

#include <string>

namespace sg2::train {

enum class Phase { Gmain, Greg, Gboth, Dmain, Dreg, Dboth };
std::string to_string(Phase phase);

// softplus(-logits): the non-saturating generator loss and the real-image discriminator loss.
at::Tensor softplus_neg(const at::Tensor& logits);

// Per-sample squared norm of dD(real)/dreal, with a graph for the double backward.
// real must require grad. Returns (logits [N, 1], penalty [N]).
std::pair<at::Tensor, at::Tensor> r1_penalty(nn::Discriminator& D, const at::Tensor& real, const at::Tensor& c);
// The same where D sees `seen`, an image of real's graph (its augmentation), and the gradient is
// still real's.
std::pair<at::Tensor, at::Tensor> r1_penalty(nn::Discriminator& D, const at::Tensor& real, const at::Tensor& seen,
                                             const at::Tensor& c);

// Path lengths |J^T y| for images img = synthesis(ws) and noise y (already / sqrt(H*W)).
// ws must be part of img's graph. Returns [N], differentiable (create_graph).
at::Tensor path_lengths(const at::Tensor& img, const at::Tensor& ws, const at::Tensor& pl_noise);

// Path-length penalty (len - pl_mean')^2 with pl_mean' = lerp(pl_mean, mean(len), decay) taken as a
// constant, as shared/fixtures' loss.Gpl gradients are (the reference's loss.py also lets the
// gradient flow through mean(len) in pl_mean', about decay = 1% of it; the fixture is the contract
// here). Returns (penalty [N], pl_mean').
std::pair<at::Tensor, at::Tensor> path_length_penalty(const at::Tensor& lengths, const at::Tensor& pl_mean,
                                                      double decay);

// Inputs of one accumulation round on one rank.
struct RoundInputs {
  at::Tensor real_img;  // [b, C, R, R] float in [-1, 1]
  at::Tensor real_c;    // [b, c_dim]
  at::Tensor gen_z;     // [b, z_dim]
  at::Tensor gen_c;     // [b, c_dim]
};

class StyleGAN2Loss {
 public:
  StyleGAN2Loss(nn::Generator& G, nn::Discriminator& D, const LossOptions& options, const at::Device& device);

  // Runs one phase on one round and accumulates gradients scaled by `gain` into the phase's
  // network, in one backward pass (the gradient reducer hooks into it). Random draws (mixing,
  // noise) come from `rng`; statistics go to `stats`.
  void accumulate_gradients(Phase phase, const RoundInputs& in, double gain, at::Generator& rng,
                            StatsCollector& stats);

  // Generator forward as in training: mapping with w_avg tracking and style mixing, random noise.
  // Returns (img [N, C, R, R], ws [N, num_ws, w_dim]).
  std::pair<at::Tensor, at::Tensor> run_G(const at::Tensor& z, const at::Tensor& c, at::Generator& rng);

  // Deferred running means (dist.rng = global): instead of updating w_avg and pl_mean in every
  // pass, the passes add their sums to one vector [w_dim + 3] = (sum of w, count, sum of path
  // lengths, count) that the trainer sums over ranks and applies once per phase. The path-length
  // penalty then uses pl_mean as it was when the phase began.
  bool defer_running_means = false;
  at::Tensor take_deferred_sums();
  void apply_deferred_sums(const at::Tensor& summed);

  at::Tensor pl_mean;  // [] running mean of path lengths
  LossOptions options;
  bool fused_modconv = false;
  // Where set and enabled, every image D sees (reals and fakes, in every phase) is augmented first,
  // and the reals' logit signs go to its adjustment.
  AdaptiveAugment* augment = nullptr;

 private:
  // Each returns its loss term (a scalar mean, before the gain).
  at::Tensor generator_main(const RoundInputs& in, at::Generator& rng, StatsCollector& stats);
  at::Tensor generator_path_length(const RoundInputs& in, at::Generator& rng, StatsCollector& stats);
  // logits: the reals' from the pass of D that Dmain ran; undefined with r1, which runs its own.
  at::Tensor discriminator_real(const RoundInputs& in, bool main, bool r1, const at::Tensor& loss_fake,
                                at::Tensor logits, at::Generator& rng, StatsCollector& stats);
  at::Tensor generated_images(const RoundInputs& in, at::Generator& rng);  // G's, without a graph
  at::Tensor seen_by_D(const at::Tensor& images, at::Generator& rng);     // augmented where enabled
  // The fakes' loss per sample [N, 1] from their logits [N, 1], with their statistics.
  at::Tensor discriminator_fake(const at::Tensor& logits, StatsCollector& stats);
  void add_deferred(int64_t offset, const at::Tensor& rows);  // rows [N, k] summed into deferred_[offset:]

  nn::Generator& G_;
  nn::Discriminator& D_;
  at::Tensor deferred_;  // [w_dim + 3]
};

}  // namespace sg2::train
