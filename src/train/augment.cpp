// The augmentation pipeline (augment.h), op for op and draw for draw as the reference's AugmentPipe:
// the same random numbers give the same images (tests/unit/train/test_augment.cpp checks every op
// against the reference's outputs and gradients).
#include "sg2/train/augment.h"

#include "sg2/core/error.h"
#include "sg2/ops/grid_sample.h"
#include "sg2/ops/upfirdn2d.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>
#include <vector>

namespace sg2::train {

namespace {

// The low-pass filters of two wavelets: sym6 for the geometric transform, sym2 for the filter bank.
const std::vector<double> kSym6{0.015404109327027373, 0.0034907120842174702, -0.11799011114819057,
                                -0.048311742585633,   0.4910559419267466,    0.787641141030194,
                                0.3379294217276218,   -0.07263752278646252,  -0.021060292512300564,
                                0.04472490177066578,  0.0017677118642428036, -0.007800708325034148};
const std::vector<double> kSym2{-0.12940952255092145, 0.22414386804185735, 0.836516303737469, 0.48296291314469025};

// ---- matrices of per-image transforms ----------------------------------------------------------

// An entry of a batch of matrices: one value for every image, or a value per image ([N]).
using Entry = std::variant<double, at::Tensor>;

// [N, R, C] from R rows of C entries; like: an [N] tensor (the batch, device and type).
at::Tensor batch_matrix(const std::vector<std::vector<Entry>>& rows, const at::Tensor& like) {
  std::vector<at::Tensor> entries;
  for (const auto& row : rows) {
    for (const Entry& entry : row) {
      entries.push_back(std::holds_alternative<at::Tensor>(entry) ? std::get<at::Tensor>(entry).expand_as(like)
                                                                   : at::full_like(like, std::get<double>(entry)));
    }
  }
  const auto count = static_cast<int64_t>(rows.size());
  return at::stack(entries, -1).reshape({like.size(0), count, -1});
}

at::Tensor translate2d(const Entry& tx, const Entry& ty, const at::Tensor& like) {
  return batch_matrix({{1.0, 0.0, tx}, {0.0, 1.0, ty}, {0.0, 0.0, 1.0}}, like);
}
at::Tensor scale2d(const Entry& sx, const Entry& sy, const at::Tensor& like) {
  return batch_matrix({{sx, 0.0, 0.0}, {0.0, sy, 0.0}, {0.0, 0.0, 1.0}}, like);
}
at::Tensor rotate2d(const at::Tensor& theta) {
  return batch_matrix({{theta.cos(), (-theta).sin(), 0.0}, {theta.sin(), theta.cos(), 0.0}, {0.0, 0.0, 1.0}}, theta);
}
at::Tensor translate3d(const at::Tensor& t) {
  return batch_matrix({{1.0, 0.0, 0.0, t}, {0.0, 1.0, 0.0, t}, {0.0, 0.0, 1.0, t}, {0.0, 0.0, 0.0, 1.0}}, t);
}
at::Tensor scale3d(const at::Tensor& s) {
  return batch_matrix({{s, 0.0, 0.0, 0.0}, {0.0, s, 0.0, 0.0}, {0.0, 0.0, s, 0.0}, {0.0, 0.0, 0.0, 1.0}}, s);
}

// Rotation by theta [N] around the unit axis v [4] (x, y, z, 0).
at::Tensor rotate3d(const at::Tensor& v, const at::Tensor& theta) {
  const at::Tensor vx = v[0], vy = v[1], vz = v[2];
  const at::Tensor s = theta.sin(), c = theta.cos(), cc = 1 - c;
  return batch_matrix({{vx * vx * cc + c, vx * vy * cc - vz * s, vx * vz * cc + vy * s, 0.0},
                       {vy * vx * cc + vz * s, vy * vy * cc + c, vy * vz * cc - vx * s, 0.0},
                       {vz * vx * cc - vy * s, vz * vy * cc + vx * s, vz * vz * cc + c, 0.0},
                       {0.0, 0.0, 0.0, 1.0}},
                      theta);
}

// One matrix for all images, [1, R, C] (a constant of the transform).
at::Tensor constant_matrix(const std::vector<std::vector<double>>& rows, const at::TensorOptions& options) {
  std::vector<double> values;
  for (const auto& row : rows) values.insert(values.end(), row.begin(), row.end());
  return at::tensor(values, options.dtype(at::kDouble))
      .to(options.dtype())
      .reshape({1, static_cast<int64_t>(rows.size()), -1});
}

// ---- the random choice of each op --------------------------------------------------------------

// The reference's per-op probability, p [] times the op's multiplier, in float32 as it computes it.
at::Tensor probability(double multiplier, const at::Tensor& p) { return p * multiplier; }

// value where a uniform draw of `shape` falls below `probability` [], else `otherwise`.
at::Tensor with_probability(const at::Tensor& value, const at::Tensor& probability, double otherwise,
                            AugmentDraws& draws, at::IntArrayRef shape) {
  const at::Tensor chosen = draws.rand(shape, value.device()) < probability;
  return at::where(chosen, value, at::full_like(value, otherwise));
}

// ---- the filter bank ---------------------------------------------------------------------------

// Full 1-D convolution of a and b.
std::vector<double> convolve(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size() + b.size() - 1, 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < b.size(); ++j) out[i + j] += a[i] * b[j];
  }
  return out;
}

// The reference's four band-pass filters of the image filter, [4, 43]: band 0 the low-pass of three
// octaves down, band i the high-pass of octave i, each built up by upsampling and low-passing.
at::Tensor image_filter_bank() {
  std::vector<double> lo = kSym2, hi = kSym2, lo_reversed(kSym2.rbegin(), kSym2.rend());
  for (size_t i = 0; i < hi.size(); ++i) hi[i] *= (i % 2 == 0) ? 1.0 : -1.0;
  const std::vector<double> hi_reversed(hi.rbegin(), hi.rend());
  std::vector<double> lo2 = convolve(lo, lo_reversed), hi2 = convolve(hi, hi_reversed);
  for (double& v : lo2) v /= 2;
  for (double& v : hi2) v /= 2;
  std::vector<std::vector<double>> bank{{1.0}, {0.0}, {0.0}, {0.0}};
  for (size_t band = 1; band < bank.size(); ++band) {
    for (auto& row : bank) {
      std::vector<double> upsampled(row.size() * 2 - 1, 0.0);  // zeros between the taps
      for (size_t k = 0; k < row.size(); ++k) upsampled[2 * k] = row[k];
      row = convolve(upsampled, lo2);
    }
    std::vector<double>& row = bank[band];
    const size_t start = (row.size() - hi2.size()) / 2;
    for (size_t k = 0; k < hi2.size(); ++k) row[start + k] += hi2[k];
  }
  std::vector<double> flat;
  for (const auto& row : bank) flat.insert(flat.end(), row.begin(), row.end());
  return at::tensor(flat, at::kDouble).to(at::kFloat).reshape({4, -1});
}

// ---- the geometric transform -------------------------------------------------------------------

// The reflect padding (x0, x1, y0, y1) that keeps every corner of the transformed image, with the
// geometric filter's reach, inside real pixels (at most the image less one pixel each way).
std::array<int64_t, 4> geometric_padding(const at::Tensor& G_inv, int64_t height, int64_t width, int64_t filter_pad) {
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  const at::TensorOptions options = G_inv.options();
  const at::Tensor corners = constant_matrix({{-cx, -cy, 1}, {cx, -cy, 1}, {cx, cy, 1}, {-cx, cy, 1}}, options)[0];
  const at::Tensor cp = at::matmul(G_inv, corners.t());  // [N, xyz, corner]
  at::Tensor margin = cp.narrow(1, 0, 2).permute({1, 0, 2}).flatten(1);  // [xy, N * corner]
  margin = std::get<0>(at::cat({-margin, margin}).max(1));               // [x0, y0, x1, y1]
  const auto constant = [&](double x, double y) {  // [x, y, x, y] in G_inv's type
    return at::tensor(std::vector<double>{x, y, x, y}, options.dtype(at::kDouble)).to(options.dtype());
  };
  margin = margin + constant(filter_pad * 2 - cx, filter_pad * 2 - cy);
  margin = at::maximum(margin, constant(0, 0));
  margin = at::minimum(margin, constant(width - 1, height - 1));
  const at::Tensor whole = margin.ceil().to(at::kInt).cpu();  // the host decides the padded size
  const int32_t* m = whole.data_ptr<int32_t>();
  return {m[0], m[2], m[1], m[3]};
}

}  // namespace

AugmentOptions augment_pipeline(const std::string& name) {
  // Each pipeline is a run of groups: b(lit), g(eometric), c(olor), f(ilter), n(oise), (cuto)x.
  const std::map<std::string, std::string> pipelines{
      {"blit", "b"}, {"geom", "g"}, {"color", "c"}, {"filter", "f"}, {"noise", "n"}, {"cutout", "x"},
      {"bg", "bg"},  {"bgc", "bgc"}, {"bgcf", "bgcf"}, {"bgcfn", "bgcfn"}, {"bgcfnc", "bgcfnx"}};
  const auto found = pipelines.find(name);
  SG2_CHECK(found != pipelines.end(), "unknown augmentation pipeline '{}' (expected blit, geom, color, filter, "
            "noise, cutout, bg, bgc, bgcf, bgcfn or bgcfnc)", name);
  AugmentOptions o;
  for (const char group : found->second) {
    if (group == 'b') o.xflip = o.rotate90 = o.xint = 1;
    if (group == 'g') o.scale = o.rotate = o.aniso = o.xfrac = 1;
    if (group == 'c') o.brightness = o.contrast = o.lumaflip = o.hue = o.saturation = 1;
    if (group == 'f') o.imgfilter = 1;
    if (group == 'n') o.noise = 1;
    if (group == 'x') o.cutout = 1;
  }
  return o;
}

at::Tensor GeneratorDraws::rand(at::IntArrayRef shape, const at::Device& device) {
  return at::rand(shape, generator_, at::TensorOptions().device(device));
}

at::Tensor GeneratorDraws::randn(at::IntArrayRef shape, const at::Device& device) {
  return at::randn(shape, generator_, at::TensorOptions().device(device));
}

AugmentPipe::AugmentPipe(const AugmentOptions& options) : options_(options) {
  // The reference's buffer names.
  geometric_filter_ = register_buffer("Hz_geom", ops::setup_filter(std::vector<float>(kSym6.begin(), kSym6.end())));
  filter_bank_ = register_buffer("Hz_fbank", image_filter_bank());
}

at::Tensor AugmentPipe::operator()(const at::Tensor& images, double p, AugmentDraws& draws) const {
  // The reference's p is a float32 buffer.
  return (*this)(images, at::full({}, p, images.options().dtype(at::kFloat)), draws);
}

at::Tensor AugmentPipe::operator()(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const {
  SG2_CHECK(images.dim() == 4 && (images.size(1) == 1 || images.size(1) == 3),
            "augmentation: expected images [N, 1 or 3, H, W], got {}", images.sizes());
  SG2_CHECK(images.device() == geometric_filter_.device(), "augmentation: images on {}, the pipeline's filters on "
            "{}: move the pipeline with to()", images.device().str(), geometric_filter_.device().str());
  SG2_CHECK(p.dim() == 0 && p.scalar_type() == at::kFloat && p.device() == images.device(),
            "augmentation: p must be a float32 scalar on the images' device");
  at::Tensor x = geometric(images, p, draws);
  x = color(x, p, draws);
  x = image_filter(x, p, draws);
  return corruptions(x, p, draws);
}

at::Tensor AugmentPipe::geometric(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const {
  const AugmentOptions& o = options_;
  const int64_t batch = images.size(0), channels = images.size(1), height = images.size(2), width = images.size(3);
  const at::Device device = images.device();
  const at::Tensor ones = at::ones({batch}, images.options().dtype(at::kFloat));
  at::Tensor G_inv = at::eye(3, ones.options()).unsqueeze(0);  // G_inv @ pixel_out = pixel_in
  bool any = false;
  const auto then = [&](const at::Tensor& m) {
    G_inv = at::matmul(G_inv, m);
    any = true;
  };
  if (o.xflip > 0) {
    const at::Tensor i = with_probability(at::floor(draws.rand({batch}, device) * 2), probability(o.xflip, p), 0,
                                          draws, {batch});
    then(scale2d(1 / (1 - 2 * i), 1.0, ones));
  }
  if (o.rotate90 > 0) {
    const at::Tensor i = with_probability(at::floor(draws.rand({batch}, device) * 4), probability(o.rotate90, p), 0,
                                          draws, {batch});
    then(rotate2d(-(-M_PI / 2 * i)));
  }
  if (o.xint > 0) {
    const at::Tensor t = with_probability((draws.rand({batch, 2}, device) * 2 - 1) * o.xint_max,
                                          probability(o.xint, p), 0, draws, {batch, 1});
    then(translate2d(-at::round(t.select(1, 0) * width), -at::round(t.select(1, 1) * height), ones));
  }
  if (o.scale > 0) {
    const at::Tensor s = with_probability(at::exp2(draws.randn({batch}, device) * o.scale_std),
                                          probability(o.scale, p), 1, draws, {batch});
    then(scale2d(1 / s, 1 / s, ones));
  }
  const at::Tensor p_rot = 1 - (1 - probability(o.rotate, p)).clamp(0, 1).sqrt();  // P(pre or post) = p
  const auto rotation = [&]() {
    return with_probability((draws.rand({batch}, device) * 2 - 1) * M_PI * o.rotate_max, p_rot, 0, draws, {batch});
  };
  if (o.rotate > 0) then(rotate2d(rotation()));  // before the anisotropic scaling (rotate2d_inv(-theta))
  if (o.aniso > 0) {
    const at::Tensor s = with_probability(at::exp2(draws.randn({batch}, device) * o.aniso_std),
                                          probability(o.aniso, p), 1, draws, {batch});
    then(scale2d(1 / s, s, ones));
  }
  if (o.rotate > 0) then(rotate2d(rotation()));  // after it
  if (o.xfrac > 0) {
    const at::Tensor t = with_probability(draws.randn({batch, 2}, device) * o.xfrac_std, probability(o.xfrac, p), 0,
                                          draws, {batch, 1});
    then(translate2d(-(t.select(1, 0) * width), -(t.select(1, 1) * height), ones));
  }
  if (!any) return images;

  // Pad by reflection, upsample 2x through the sym6 low-pass, sample, low-pass and downsample.
  const int64_t filter_pad = geometric_filter_.size(0) / 4;
  const auto [mx0, mx1, my0, my1] = geometric_padding(G_inv, height, width, filter_pad);
  at::Tensor x = at::reflection_pad2d(images, {mx0, mx1, my0, my1});
  G_inv = at::matmul(translate2d((mx0 - mx1) / 2.0, (my0 - my1) / 2.0, ones), G_inv);
  const at::Tensor& f = geometric_filter_;
  x = ops::upsample2d(x, f, 2);
  G_inv = at::matmul(at::matmul(scale2d(2.0, 2.0, ones), G_inv), scale2d(0.5, 0.5, ones));
  G_inv = at::matmul(at::matmul(translate2d(-0.5, -0.5, ones), G_inv), translate2d(0.5, 0.5, ones));
  const std::vector<int64_t> shape{batch, channels, (height + filter_pad * 2) * 2, (width + filter_pad * 2) * 2};
  G_inv = at::matmul(at::matmul(scale2d(2.0 / x.size(3), 2.0 / x.size(2), ones), G_inv),
                     scale2d(1 / (2.0 / shape[3]), 1 / (2.0 / shape[2]), ones));
  const at::Tensor grid = at::affine_grid_generator(G_inv.narrow(1, 0, 2), shape, /*align_corners=*/false);
  x = ops::grid_sample(x, grid);
  // The reference's downsample2d by 2 with its padding less the filter's reach, the filter flipped.
  ops::FirParams down;
  down.down = 2;
  const int64_t k = f.size(0), crop = filter_pad * 2;
  const int64_t before = (k - down.down + 1) / 2 - crop, after = (k - down.down) / 2 - crop;
  down.padding = {before, after, before, after};
  down.flip_filter = true;
  return ops::upfirdn2d(x, f, down);
}

at::Tensor AugmentPipe::color(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const {
  const AugmentOptions& o = options_;
  const int64_t batch = images.size(0), channels = images.size(1);
  const at::Device device = images.device();
  const at::TensorOptions floats = images.options().dtype(at::kFloat);
  const at::Tensor I_4 = at::eye(4, floats);
  at::Tensor C = I_4.unsqueeze(0);  // C @ color_in = color_out
  bool any = false;
  const auto then = [&](const at::Tensor& m) {
    C = at::matmul(m, C);
    any = true;
  };
  if (o.brightness > 0) {
    then(translate3d(with_probability(draws.randn({batch}, device) * o.brightness_std, probability(o.brightness, p),
                                      0, draws, {batch})));
  }
  if (o.contrast > 0) {
    then(scale3d(with_probability(at::exp2(draws.randn({batch}, device) * o.contrast_std),
                                  probability(o.contrast, p), 1, draws, {batch})));
  }
  const at::Tensor v = (at::tensor({1.0, 1.0, 1.0, 0.0}, at::kDouble) / std::sqrt(3.0)).to(floats);  // luma axis
  const at::Tensor vv = at::outer(v, v);
  if (o.lumaflip > 0) {
    const at::Tensor i = with_probability(at::floor(draws.rand({batch, 1, 1}, device) * 2),
                                          probability(o.lumaflip, p), 0, draws, {batch, 1, 1});
    then(I_4 - 2 * vv * i);  // Householder reflection
  }
  if (o.hue > 0 && channels > 1) {
    then(rotate3d(v, with_probability((draws.rand({batch}, device) * 2 - 1) * M_PI * o.hue_max, probability(o.hue, p),
                                      0, draws, {batch})));
  }
  if (o.saturation > 0 && channels > 1) {
    const at::Tensor s = with_probability(at::exp2(draws.randn({batch, 1, 1}, device) * o.saturation_std),
                                          probability(o.saturation, p), 1, draws, {batch, 1, 1});
    then(vv + (I_4 - vv) * s);
  }
  if (!any) return images;
  const at::Tensor x = images.reshape({batch, channels, -1});  // [N, C, H * W]
  if (channels == 3) {
    return (at::matmul(C.narrow(1, 0, 3).narrow(2, 0, 3), x) + C.narrow(1, 0, 3).narrow(2, 3, 1))
        .reshape(images.sizes());
  }
  const at::Tensor gray = C.narrow(1, 0, 3).mean(1, /*keepdim=*/true);  // [N, 1, 4]
  return (x * gray.narrow(2, 0, 3).sum(2, /*keepdim=*/true) + gray.narrow(2, 3, 1)).reshape(images.sizes());
}

at::Tensor AugmentPipe::image_filter(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const {
  const AugmentOptions& o = options_;
  if (o.imgfilter <= 0) return images;
  const int64_t batch = images.size(0), channels = images.size(1), height = images.size(2), width = images.size(3);
  const at::Device device = images.device();
  const at::TensorOptions floats = images.options().dtype(at::kFloat);
  const int64_t bands = filter_bank_.size(0);
  const at::Tensor expected_power = (at::tensor({10.0, 1.0, 1.0, 1.0}, at::kDouble) / 13).to(floats);  // 1/f
  at::Tensor gain = at::ones({batch, bands}, floats);
  for (int64_t band = 0; band < bands; ++band) {
    const at::Tensor chance = probability(o.imgfilter, p) * o.imgfilter_bands[band];
    const at::Tensor t_i = with_probability(at::exp2(draws.randn({batch}, device) * o.imgfilter_std), chance, 1,
                                            draws, {batch});
    at::Tensor t = at::ones({batch, bands}, floats);
    t.select(1, band).copy_(t_i);
    t = t / (expected_power * t.square()).sum(-1, /*keepdim=*/true).sqrt();  // the power kept
    gain = gain * t;
  }
  const at::Tensor taps = at::matmul(gain, filter_bank_)  // [N, taps]
                              .unsqueeze(1)
                              .repeat({1, channels, 1})
                              .reshape({batch * channels, 1, -1});
  const int64_t pad = filter_bank_.size(1) / 2;
  at::Tensor x = at::reflection_pad2d(images.reshape({1, batch * channels, height, width}), {pad, pad, pad, pad});
  const std::array<int64_t, 2> ones{1, 1}, zeros{0, 0};
  x = at::conv2d(x, taps.unsqueeze(2), {}, ones, zeros, ones, batch * channels);  // along the rows
  x = at::conv2d(x, taps.unsqueeze(3), {}, ones, zeros, ones, batch * channels);  // along the columns
  return x.reshape(images.sizes());
}

at::Tensor AugmentPipe::corruptions(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const {
  const AugmentOptions& o = options_;
  const int64_t batch = images.size(0), channels = images.size(1), height = images.size(2), width = images.size(3);
  const at::Device device = images.device();
  at::Tensor x = images;
  if (o.noise > 0) {
    const at::Tensor sigma = with_probability(draws.randn({batch, 1, 1, 1}, device).abs() * o.noise_std,
                                              probability(o.noise, p), 0, draws, {batch, 1, 1, 1});
    x = x + draws.randn({batch, channels, height, width}, device) * sigma;
  }
  if (o.cutout > 0) {
    const at::Tensor size =
        with_probability(at::full({batch, 2, 1, 1, 1}, o.cutout_size, x.options().dtype(at::kFloat)),
                         probability(o.cutout, p), 0, draws, {batch, 1, 1, 1, 1});
    const at::Tensor center = draws.rand({batch, 2, 1, 1, 1}, device);
    const at::TensorOptions floats = x.options().dtype(at::kFloat);
    const at::Tensor coord_x = at::arange(width, floats).reshape({1, 1, 1, -1});
    const at::Tensor coord_y = at::arange(height, floats).reshape({1, 1, -1, 1});
    const at::Tensor mask_x = ((coord_x + 0.5) / width - center.select(1, 0)).abs() >= size.select(1, 0) / 2;
    const at::Tensor mask_y = ((coord_y + 0.5) / height - center.select(1, 1)).abs() >= size.select(1, 1) / 2;
    x = x * at::logical_or(mask_x, mask_y).to(at::kFloat);
  }
  return x;
}

}  // namespace sg2::train
