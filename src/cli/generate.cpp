#include "sg2/cli/generate.h"

#include "sg2/core/cli_parse.h"
#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/progress.h"
#include "sg2/core/rng.h"
#include "sg2/core/system.h"
#include "sg2/data/image_io.h"
#include "sg2/data/npy.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>

namespace sg2::cli {

using namespace train;  // the command layer drives the training library

at::Tensor latents_for_seeds(const std::vector<int64_t>& seeds, int64_t z_dim) {
  at::Tensor z = at::empty({static_cast<int64_t>(seeds.size()), z_dim}, at::kDouble);
  double* out = z.data_ptr<double>();
  for (size_t i = 0; i < seeds.size(); ++i) {
    SG2_CHECK(seeds[i] >= 0 && seeds[i] <= 0xffffffffLL, "seed {} is outside [0, 2^32 - 1]", seeds[i]);
    NumpyRandomState random(static_cast<uint32_t>(seeds[i]));
    for (int64_t j = 0; j < z_dim; ++j) out[static_cast<int64_t>(i) * z_dim + j] = random.standard_normal();
  }
  return z.to(at::kFloat);
}

namespace {

at::Tensor labels_for(const nn::Generator& G, int64_t class_index, int64_t count) {
  const int64_t c_dim = G.options.c_dim;
  if (c_dim == 0) {
    SG2_CHECK(class_index < 0, "--class {} given, but the network is unconditional", class_index);
    return at::zeros({count, 0});
  }
  SG2_CHECK(class_index >= 0 && class_index < c_dim, "the network is conditional: pass --class 0..{}", c_dim - 1);
  at::Tensor c = at::zeros({count, c_dim});
  c.select(1, class_index).fill_(1.0);
  return c;
}

at::Tensor latents_from_file(const std::string& path, int64_t z_dim) {
  const data::FloatMatrix m = data::read_npy_float32(path, "latents [N, z_dim]");
  SG2_CHECK(m.cols == z_dim && m.rows > 0, "'{}' holds latents [{}, {}], the network needs [N, {}]", path, m.rows,
            m.cols, z_dim);
  const auto bad = std::find_if(m.values.begin(), m.values.end(), [](float v) { return !std::isfinite(v); });
  SG2_CHECK(bad == m.values.end(), "'{}': latent {} holds {} (every value must be a finite number)", path,
            (bad - m.values.begin()) / m.cols, *bad);
  return at::tensor(m.values).view({m.rows, m.cols}).clone();
}

// The network of a snapshot on its device, in inference mode, with the options' truncation and noise.
class Renderer {
 public:
  explicit Renderer(const GenerateOptions& o) : options_(o), device_(resolve_device(o.device)) {
    const Snapshot snapshot = load_snapshot(o.network);
    G_ = load_generator(snapshot, snapshot_precision(snapshot, device_), o.which);
    G_->to(device_);
    G_->eval();
    mapping_.truncation_psi = o.truncation_psi;
    mapping_.truncation_cutoff = o.truncation_cutoff;
    synthesis_.noise_mode = o.noise_mode;
    synthesis_.fused_modconv = true;
  }

  const nn::Generator& G() const { return *G_; }

  at::Tensor ws_of(const at::Tensor& z) {  // [N, z_dim] -> [N, num_ws, w_dim]
    at::NoGradGuard no_grad;
    return G_->mapping->forward(z.to(device_), labels_for(*G_, options_.class_index, z.size(0)).to(device_), mapping_);
  }

  // [N, num_ws, w_dim] -> uint8 [N, C, R, R] on the CPU, options.batch at a time; the reference's
  // conversion (generate.py: x * 127.5 + 128, clamped, truncated to uint8).
  at::Tensor images_of(const at::Tensor& ws) {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> images;
    for (int64_t start = 0; start < ws.size(0); start += options_.batch) {
      const at::Tensor x = G_->synthesis->forward(ws.narrow(0, start, std::min(options_.batch, ws.size(0) - start)),
                                                  synthesis_);
      images.push_back((x.to(at::kFloat) * 127.5 + 128).clamp(0, 255).to(at::kByte).cpu());
    }
    return at::cat(images);
  }

  int64_t batch() const { return options_.batch; }

 private:
  GenerateOptions options_;
  at::Device device_;
  std::shared_ptr<nn::Generator> G_;
  nn::MappingNetwork::Run mapping_;
  nn::SynthesisRun synthesis_;
};

// Writes `images` [N, C, H, W] uint8 as a grid of `columns` (blank cells past N).
std::string write_grid(const at::Tensor& images, int64_t columns, const std::string& path) {
  const int64_t count = images.size(0), rows = (count + columns - 1) / columns;
  at::Tensor padded = at::zeros({columns * rows, images.size(1), images.size(2), images.size(3)}, at::kByte);
  padded.narrow(0, 0, count).copy_(images);
  data::write_png(path, data::tile_grid(padded, columns, rows));
  return path;
}

std::vector<std::string> write_each(const at::Tensor& images, const std::vector<std::string>& paths) {
  for (size_t i = 0; i < paths.size(); ++i)
    data::write_png(paths[i], data::tile_grid(images.narrow(0, static_cast<int64_t>(i), 1), 1, 1));
  return paths;
}

// The grid of every image is drawn up to this many bytes of images (the reference writes none).
constexpr int64_t kMaxGridBytes = int64_t(1) << 28;

// Renders the ws that ws_for(start, count) gives, options.batch at a time, writing each image to
// path_of(index) as soon as its batch is done; returns the images where `keep` (for a grid).
at::Tensor render_in_batches(Renderer& renderer, int64_t count,
                             const std::function<at::Tensor(int64_t, int64_t)>& ws_for,
                             const std::function<std::string(int64_t)>& path_of, std::vector<std::string>& paths,
                             bool keep) {
  std::vector<at::Tensor> kept;
  ProgressMeter progress("generate", count, "img");
  for (int64_t start = 0; start < count; start += renderer.batch()) {
    const int64_t n = std::min(renderer.batch(), count - start);
    const at::Tensor images = renderer.images_of(ws_for(start, n));  // [n, C, R, R]
    std::vector<std::string> batch_paths;
    for (int64_t i = start; i < start + n; ++i) batch_paths.push_back(path_of(i));
    write_each(images, batch_paths);
    paths.insert(paths.end(), batch_paths.begin(), batch_paths.end());
    if (keep) kept.push_back(images);
    progress.update(start + n);
  }
  progress.finish();
  return keep ? at::cat(kept) : at::Tensor();
}

// Whether the images of render_images also go into grid.png.
bool writes_grid(const nn::GeneratorOptions& g, int64_t count) {
  return count * g.img_channels * g.img_resolution * g.img_resolution <= kMaxGridBytes;
}

// z: [N, z_dim], the --latents file's or the seeds'; names: the files, the grid's last when drawn.
std::vector<std::string> render_images(Renderer& renderer, const at::Tensor& z, const std::vector<std::string>& names) {
  const int64_t count = z.size(0);
  const bool grid = writes_grid(renderer.G().options, count);
  std::vector<std::string> paths;
  const at::Tensor images = render_in_batches(
      renderer, count, [&](int64_t start, int64_t n) { return renderer.ws_of(z.narrow(0, start, n)); },
      [&](int64_t i) { return names[static_cast<size_t>(i)]; }, paths, grid);
  if (grid) {
    const auto columns = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(count))));
    paths.push_back(write_grid(images, columns, names.back()));
  }
  return paths;
}

std::string render_style_mixing(Renderer& renderer, const GenerateOptions& o, const std::string& name) {
  const int64_t z_dim = renderer.G().options.z_dim;
  const at::Tensor row_ws = renderer.ws_of(latents_for_seeds(o.seeds, z_dim));        // [R, num_ws, w]
  const at::Tensor col_ws = renderer.ws_of(latents_for_seeds(o.mix_columns, z_dim));  // [C, num_ws, w]
  const int64_t rows = row_ws.size(0), cols = col_ws.size(0), num_ws = row_ws.size(1);
  std::vector<int64_t> styles = o.mix_styles.empty() ? std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6} : o.mix_styles;
  if (o.mix_styles.empty()) {  // the default 0-6, on a network of fewer ws: those it has
    styles.erase(std::remove_if(styles.begin(), styles.end(), [&](int64_t s) { return s >= num_ws; }), styles.end());
  }
  const at::Tensor style_index = at::tensor(styles, at::kLong).to(row_ws.device());
  at::Tensor mixed = row_ws.unsqueeze(1).repeat({1, cols, 1, 1});  // [R, C, num_ws, w]
  mixed.index_copy_(2, style_index, col_ws.index_select(1, style_index).unsqueeze(0).expand({rows, -1, -1, -1}));
  const at::Tensor row_images = renderer.images_of(row_ws), col_images = renderer.images_of(col_ws);
  const at::Tensor mixed_images = renderer.images_of(mixed.flatten(0, 1));  // [R * C, ...]
  std::vector<at::Tensor> tiles{at::zeros_like(col_images[0]).unsqueeze(0), col_images};
  for (int64_t r = 0; r < rows; ++r) {
    tiles.push_back(row_images.narrow(0, r, 1));
    tiles.push_back(mixed_images.narrow(0, r * cols, cols));
  }
  return write_grid(at::cat(tiles), cols + 1, name);
}

int64_t interpolation_frame_count(const GenerateOptions& o) {
  return (static_cast<int64_t>(o.seeds.size()) - 1) * o.interpolation_frames + 1;
}

// Frame i lies between keys i / F and i / F + 1 (F frames per step), the last frame on the last key.
std::vector<std::string> render_interpolation(Renderer& renderer, const GenerateOptions& o,
                                              const std::vector<std::string>& names) {
  const at::Tensor keys = renderer.ws_of(latents_for_seeds(o.seeds, renderer.G().options.z_dim));  // [K, num_ws, w]
  const int64_t steps = o.interpolation_frames, count = interpolation_frame_count(o);
  const auto frame_ws = [&](int64_t start, int64_t n) {
    std::vector<at::Tensor> frames;
    for (int64_t i = start; i < start + n; ++i) {
      const int64_t k = std::min(i / steps, keys.size(0) - 1);
      const double t = static_cast<double>(i - k * steps) / static_cast<double>(steps);
      frames.push_back(k + 1 < keys.size(0) ? at::lerp(keys[k], keys[k + 1], t).unsqueeze(0) : keys[k].unsqueeze(0));
    }
    return at::cat(frames);
  };
  std::vector<std::string> paths;
  render_in_batches(
      renderer, count, frame_ws, [&](int64_t i) { return names[static_cast<size_t>(i)]; }, paths, false);
  return paths;
}

// The files a run of `o` writes, in order; image_count: the latents' count in images mode.
std::vector<std::string> output_paths(const GenerateOptions& o, const nn::GeneratorOptions& g, int64_t image_count) {
  const auto in_outdir = [&](const std::string& name) { return (std::filesystem::path(o.outdir) / name).string(); };
  if (!o.mix_columns.empty()) return {in_outdir("stylemix.png")};
  std::vector<std::string> paths;
  if (o.interpolation_frames > 0) {
    for (int64_t i = 0; i < interpolation_frame_count(o); ++i) paths.push_back(in_outdir(fmt::format("frame{:05d}.png", i)));
    return paths;
  }
  for (int64_t i = 0; i < image_count; ++i) {
    paths.push_back(in_outdir(o.latents_file.empty() ? fmt::format("seed{:04d}.png", o.seeds[static_cast<size_t>(i)])
                                                     : fmt::format("latent{:04d}.png", i)));
  }
  if (writes_grid(g, image_count)) paths.push_back(in_outdir("grid.png"));
  return paths;
}

// Earlier images are not replaced unless asked for; an input never.
void check_outputs_are_new(const std::vector<std::string>& paths, const GenerateOptions& o) {
  for (const std::string& input : {o.network, o.latents_file}) {
    std::error_code error;
    const auto same = [&](const std::string& p) { return !input.empty() && std::filesystem::equivalent(p, input, error); };
    const auto clash = std::find_if(paths.begin(), paths.end(), same);
    SG2_CHECK(clash == paths.end(), "'{}' would be written over the input '{}'; choose another --outdir",
              clash == paths.end() ? "" : *clash, input);
  }
  if (o.overwrite) return;
  std::vector<std::string> existing;
  std::copy_if(paths.begin(), paths.end(), std::back_inserter(existing),
               [](const std::string& p) { return std::filesystem::exists(p); });
  SG2_CHECK(existing.empty(), "{} of the {} file{} to write exist{} already (first '{}'); pass --overwrite to replace "
            "them, or choose another --outdir", existing.size(), paths.size(), paths.size() == 1 ? "" : "s",
            existing.size() == 1 ? "s" : "", existing.empty() ? "" : existing.front());
}

}  // namespace

std::vector<std::string> generate_images(const GenerateOptions& o) {
  SG2_CHECK(!o.seeds.empty() || !o.latents_file.empty(), "no seeds or latents to render");
  SG2_CHECK(o.latents_file.empty() || (o.mix_columns.empty() && o.interpolation_frames == 0),
            "--latents renders images only (not style mixing or interpolation)");
  SG2_CHECK(o.mix_columns.empty() || o.interpolation_frames == 0, "choose style mixing or interpolation, not both");
  SG2_CHECK(o.mix_styles.empty() || !o.mix_columns.empty(), "--styles selects the ws of --mix-columns: give those too");
  SG2_CHECK(std::isfinite(o.truncation_psi), "--trunc {}: the truncation psi must be a finite number (1: none, 0.7: "
            "the usual)", o.truncation_psi);
  SG2_CHECK(o.interpolation_frames >= 0 && o.interpolation_frames <= 100000, "--interpolate {}: must be 0-100000",
            o.interpolation_frames);
  SG2_CHECK(o.batch >= 1, "--batch {}: must be >= 1", o.batch);
  SG2_CHECK(o.interpolation_frames == 0 || o.seeds.size() >= 2, "interpolation needs at least two seeds, got {}",
            o.seeds.size());
  Renderer renderer(o);
  // Everything a user gave that only the network can check, before anything is written.
  const int64_t num_ws = renderer.G().synthesis->num_ws;
  for (int64_t s : o.mix_styles) {
    SG2_CHECK(s >= 0 && s < num_ws, "--styles {}: the network has {} ws, 0 to {}", s, num_ws, num_ws - 1);
  }
  const int64_t z_dim = renderer.G().options.z_dim;
  const at::Tensor file_latents = o.latents_file.empty() ? at::Tensor() : latents_from_file(o.latents_file, z_dim);
  const at::Tensor z = file_latents.defined() ? file_latents : latents_for_seeds(o.seeds, z_dim);
  const std::vector<std::string> outputs = output_paths(o, renderer.G().options, z.size(0));
  check_outputs_are_new(outputs, o);
  create_output_directory(o.outdir, "--outdir");
  if (!o.mix_columns.empty()) return {render_style_mixing(renderer, o, outputs.front())};
  if (o.interpolation_frames > 0) return render_interpolation(renderer, o, outputs);
  return render_images(renderer, z, outputs);
}

void GenerateCommand::add_to(CLI::App& app) {
  app.add_option("--network", options_.network, "Snapshot file (network-snapshot-*.pt)")
      ->required()
      ->check(CLI::ExistingFile);
  auto* seeds_option = app.add_option("--seeds", seeds_, "Seeds, e.g. 0-63 or 1,5,9 (style mixing: the rows)");
  seeds_option->capture_default_str();
  app.add_option("--latents", options_.latents_file, "float32 .npy [N, z_dim] of latents to render instead of seeds")
      ->check(CLI::ExistingFile)
      ->excludes(seeds_option);
  app.add_option("--mix-columns", columns_, "Style mixing: column seeds whose styles replace the rows'");
  app.add_option("--styles", styles_, "Style mixing: ws indices taken from the columns (default 0-6)");
  app.add_option("--interpolate", options_.interpolation_frames, "Frames between consecutive seeds (linear in W)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--trunc", options_.truncation_psi, "Truncation psi")->capture_default_str();
  app.add_option("--trunc-cutoff", options_.truncation_cutoff, "Truncate only the first N ws (-1: all)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 20));
  app.add_option("--noise-mode", noise_mode_, "Noise: const, random or none")->capture_default_str();
  app.add_option("--class", options_.class_index, "Class index for conditional networks");
  app.add_option("--which", options_.which, "Network in the snapshot: G_ema or G")->capture_default_str();
  app.add_option("--outdir", options_.outdir, "Output directory")->capture_default_str();
  app.add_flag("--overwrite", options_.overwrite, "Replace images an earlier run wrote to --outdir");
  app.add_option("--device", device_, "Device to render on")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--batch", options_.batch, "Images per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
}

int GenerateCommand::run() {
  if (options_.latents_file.empty()) options_.seeds = parse_index_list(seeds_, "--seeds");
  if (!columns_.empty()) options_.mix_columns = parse_index_list(columns_, "--mix-columns");
  if (!styles_.empty()) options_.mix_styles = parse_index_list(styles_, "--styles");
  options_.noise_mode = nn::parse_noise_mode(noise_mode_);
  options_.device = parse_enum(train::kDeviceChoiceNames, device_, "--device");
  limit_blas_threads();
  const std::vector<std::string> written = generate_images(options_);
  std::cout << "Wrote " << written.size() << (written.size() == 1 ? " file: " : " files: ") << written.front()
            << (written.size() > 1 ? " ... " + written.back() : std::string()) << "\n";
  return 0;
}

}  // namespace sg2::cli
