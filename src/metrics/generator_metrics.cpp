#include "sg2/metrics/generator_metrics.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"
#include "sg2/nn/state_dict.h"

#include <algorithm>
#include <cmath>

namespace sg2::metrics {

namespace {

constexpr uint64_t kPathLatentStream = 0x70706c7a;  // keys of the path-length sampler's random streams
constexpr uint64_t kPathLabelStream = 0x70706c63;
constexpr uint64_t kPathNoiseStream = 0x70706c6e;

}  // namespace

std::pair<double, double> inception_score(const at::Tensor& probabilities, int64_t num_splits) {
  const at::Tensor p = probabilities.to(at::kCPU, at::kDouble);  // [N, K]
  const int64_t n = p.size(0);
  SG2_CHECK(num_splits >= 1 && n >= num_splits, "the Inception Score of {} images in {} splits", n, num_splits);
  std::vector<double> scores;
  for (int64_t i = 0; i < num_splits; ++i) {
    const at::Tensor part = p.narrow(0, i * n / num_splits, (i + 1) * n / num_splits - i * n / num_splits);
    const at::Tensor kl = part * (part.log() - part.mean(0, true).log());  // [n_i, K]
    scores.push_back(std::exp(kl.sum(1).mean().item<double>()));
  }
  double mean = 0, variance = 0;
  for (const double s : scores) mean += s / static_cast<double>(scores.size());
  for (const double s : scores) variance += (s - mean) * (s - mean) / static_cast<double>(scores.size());
  return {mean, std::sqrt(variance)};
}

at::Tensor slerp(const at::Tensor& a, const at::Tensor& b, const at::Tensor& t) {
  const at::Tensor an = a / a.norm(2, -1, true), bn = b / b.norm(2, -1, true);  // [N, D]
  const at::Tensor d = (an * bn).sum(-1, true);                                 // [N, 1]
  const at::Tensor angle = t * at::acos(d);
  at::Tensor c = bn - d * an;
  c = c / c.norm(2, -1, true);
  const at::Tensor out = an * at::cos(angle) + c * at::sin(angle);
  return out / out.norm(2, -1, true);
}

double path_length_mean(const at::Tensor& distances) {
  const at::Tensor d = std::get<0>(distances.to(at::kCPU, at::kDouble).flatten().sort());  // ascending
  const int64_t n = d.numel();
  SG2_CHECK(n >= 1, "perceptual path length of no samples");
  // numpy.percentile's index (n - 1) q / 100, rounded down for the low end and up for the high end.
  const double last = static_cast<double>(n - 1);
  const double lo = d[static_cast<int64_t>(std::floor(last * 0.01))].item<double>();
  const double hi = d[static_cast<int64_t>(std::ceil(last * 0.99))].item<double>();
  const at::Tensor kept = d.masked_select(d.ge(lo).logical_and(d.le(hi)));
  return kept.mean().item<double>();
}

PathLengthSampler::PathLengthSampler(const nn::Generator& G, FeatureDetector& lpips, PathLengthOptions options,
                                     uint64_t seed, at::Tensor label_table)
    : lpips_(lpips), options_(options), seed_(seed), label_table_(std::move(label_table)), device_(at::kCPU) {
  const auto parameters = G.parameters();
  if (!parameters.empty()) device_ = parameters.front().device();
  G_ = std::make_shared<nn::Generator>(G.options);
  G_->to(device_);
  nn::copy_state(G, *G_);
  G_->eval();
  SG2_CHECK(G.options.c_dim == 0 || (label_table_.defined() && label_table_.size(1) == G.options.c_dim),
            "perceptual path length of a network with {} classes needs the dataset's labels", G.options.c_dim);
}

at::Tensor PathLengthSampler::distances(int64_t start, int64_t count, uint64_t block) {
  const int64_t z_dim = G_->options.z_dim, c_dim = G_->options.c_dim;
  at::Generator rng = nn::make_rng(at::kCPU, mix_seed({seed_, kPathLatentStream, block}));
  const at::Tensor t = (at::rand({count}, rng) * (options_.full ? 1.0 : 0.0)).to(device_);  // [n]
  const at::Tensor z0 = at::randn({count, z_dim}, rng).to(device_), z1 = at::randn({count, z_dim}, rng).to(device_);
  at::Tensor c = at::zeros({count, c_dim});
  if (c_dim > 0) {
    at::Generator labels = nn::make_rng(at::kCPU, mix_seed({seed_, kPathLabelStream, block}));
    c = label_table_.index_select(0, at::randint(label_table_.size(0), {count}, labels, at::kLong));
  }
  return distances_of(z0, z1, t, c.to(device_), start);
}

at::Tensor PathLengthSampler::distances_of(const at::Tensor& z0, const at::Tensor& z1, const at::Tensor& t,
                                           const at::Tensor& c, int64_t first_sample) {
  const int64_t count = z0.size(0);
  at::NoGradGuard no_grad;
  const auto mapping = [&](const at::Tensor& z) { return G_->mapping->forward(z, at::cat({c, c}), {}); };
  at::Tensor wt0, wt1;  // [n, num_ws, w_dim]
  if (options_.w_space) {
    const auto w = mapping(at::cat({z0, z1})).chunk(2);
    const at::Tensor tw = t.view({-1, 1, 1});
    wt0 = w[0].lerp(w[1], tw);
    wt1 = w[0].lerp(w[1], tw + options_.epsilon);
  } else {
    const at::Tensor tz = t.view({-1, 1});
    const auto w = mapping(at::cat({slerp(z0, z1, tz), slerp(z0, z1, tz + options_.epsilon)})).chunk(2);
    wt0 = w[0], wt1 = w[1];
  }
  at::Tensor out = at::empty({count, 1}, at::TensorOptions(device_).dtype(at::kFloat));
  for (int64_t first = 0; first < count;) {  // the samples of one pair (2 * p, 2 * p + 1) share their noise
    const uint64_t pair = static_cast<uint64_t>((first_sample + first) / 2);
    const int64_t n = std::min<int64_t>(count - first, 2 - (first_sample + first) % 2);
    const at::Tensor img = images_of_pair(at::cat({wt0.narrow(0, first, n), wt1.narrow(0, first, n)}), pair);
    const auto features = lpips_.lpips_features(img).to(device_).chunk(2);  // [n, D] each
    out.narrow(0, first, n).copy_(((features[0] - features[1]).square().sum(1, true) /
                                   (options_.epsilon * options_.epsilon)));
    first += n;
  }
  return out;
}

at::Tensor PathLengthSampler::images_of_pair(const at::Tensor& ws, uint64_t pair) {
  at::Generator rng = nn::make_rng(at::kCPU, mix_seed({seed_, kPathNoiseStream, pair}));
  for (auto& [name, buffer] : nn::named_buffers(*G_)) {
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".noise_const") == 0) {
      buffer.copy_(at::randn(buffer.sizes(), rng));
    }
  }
  nn::SynthesisRun run;
  run.noise_mode = nn::NoiseMode::Const;
  run.force_fp32 = true;
  at::Tensor img = G_->synthesis->forward(ws, run);  // [2n, C, R, R] in [-1, 1]
  const int64_t resolution = G_->options.img_resolution;
  if (options_.crop) {
    const int64_t eighth = resolution / 8;
    img = img.narrow(2, 3 * eighth, 4 * eighth).narrow(3, 2 * eighth, 4 * eighth);
  }
  const int64_t factor = resolution / 256;
  if (factor > 1) {  // box filter down to (a crop of) 256x256
    img = img.reshape({img.size(0), img.size(1), img.size(2) / factor, factor, img.size(3) / factor, factor})
              .mean({3, 5});
  }
  img = (img + 1) * (255.0 / 2);
  return img.size(1) == 1 ? img.repeat({1, 3, 1, 1}) : img;
}

}  // namespace sg2::metrics
