#include "sg2/train/training_loop.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/device/cuda_device.h"
#include "sg2/train/run_dir.h"
#include "sg2/train/snapshot.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace sg2::train {

namespace {

// G_ema's images of the sample grid, a round's batch at a time.
at::Tensor render_fakes(Trainer& trainer, const SampleGrid& grid) {
  const TrainConfig& c = trainer.config();
  return render_grid(trainer.G_ema(), grid, batch_per_round(c, trainer.world_size()),
                     fused_modconv_in_inference(c));
}

std::string mean_of(const std::map<std::string, StatValue>& stats, const std::string& name) {
  auto it = stats.find(name);
  return (it == stats.end() || it->second.count == 0) ? std::string("-") : fmt::format("{:.4f}", it->second.mean);
}

// Fails, on every rank alike (the statistics are reduced over the ranks), when a loss of the tick
// is not finite: from there the networks train on NaN, and every later snapshot would hold it.
void check_losses_are_finite(const std::map<std::string, StatValue>& stats, int64_t tick, double kimg) {
  for (const char* name : {"Loss/G/loss", "Loss/D/loss", "Loss/r1_penalty", "Loss/pl_penalty"}) {
    const auto it = stats.find(name);
    if (it == stats.end() || it->second.count == 0 || std::isfinite(it->second.mean)) continue;
    SG2_FAIL("{} is {} in tick {} ({:.1f} kimg): the networks no longer train. The snapshots before this tick "
             "hold the last finite networks; lower optim.G_lr / optim.D_lr or the loss weights, or check the "
             "networks' options (G.mapping_lr_multiplier, G.resample_filter, ...), then resume from one of them",
             name, it->second.mean, tick, kimg);
  }
}

}  // namespace

TrainingLoop::TrainingLoop(Trainer& trainer, std::string run_dir, bool resumed)
    : trainer_(trainer), run_dir_(std::move(run_dir)), resumed_(resumed) {
  const TrainConfig& c = trainer_.config();
  if (is_rank0()) {
    grid_ = setup_sample_grid(trainer_.dataset(), c.run.grid_w, c.run.grid_h, c.G.z_dim,
                              static_cast<uint64_t>(c.train.seed), trainer_.device());
    if (resumed_) forget_ticks_past_the_snapshot();
    stats_jsonl_.open(run_dir_ + "/stats.jsonl", std::ios::app);
    SG2_CHECK(stats_jsonl_.good(), "cannot open '{}/stats.jsonl'", run_dir_);
    events_ = std::make_unique<EventWriter>(run_dir_);
    if (resumed_) events_->add_session_start(trainer_.progress().cur_nimg + 1);
  }
  if (!c.metrics.empty())
    metrics_ = std::make_unique<TrainingMetrics>(c, trainer_.shared_dataset(), trainer_.comm(), trainer_.device(),
                                                 /*stop_on_signal=*/true);
}

// A run killed after its last snapshot logged ticks that the resumed run repeats: stats.jsonl loses
// them here, TensorBoard at the session start that the event file records (steps past the snapshot).
void TrainingLoop::forget_ticks_past_the_snapshot() {
  const int dropped = trim_stats_after(run_dir_ + "/stats.jsonl", trainer_.progress().cur_nimg);
  if (dropped > 0) spdlog::info("Dropped {} line(s) of stats.jsonl written past the snapshot", dropped);
}

void TrainingLoop::write_initial_images() {
  if (!is_rank0() || resumed_) return;
  save_grid_png(grid_.reals, grid_, run_dir_ + "/reals.png");
  save_grid_png(render_fakes(trainer_, grid_), grid_, run_dir_ + "/fakes_init.png");
}

int64_t images_of_kimg(double kimg) { return static_cast<int64_t>(std::ceil(kimg * 1000 - 1e-6)); }

int64_t steps_to_next_stop_vote(double seconds_per_step) {
  if (!(seconds_per_step > 0)) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(kStopVoteSeconds / seconds_per_step), 1, kStopVoteSteps);
}

// A signal may reach the ranks at different steps, or one rank only. The ranks vote (a host round
// trip that waits for the device) at steps they agree on: each proposes when to vote next from its
// own step time, and the earliest proposal wins, so a vote comes about every kStopVoteSeconds.
void TrainingLoop::vote_on_stopping() {
  dist::Communicator& comm = trainer_.comm();
  const int64_t step = trainer_.progress().batch_idx;
  const double now = run_clock_.seconds();
  stop_signal_ = static_cast<int>(comm.max_over_ranks(sg2::stop_signal()));
  const double seconds_per_step = step > last_vote_step_ ? (now - last_vote_time_) / double(step - last_vote_step_) : 0;
  next_vote_step_ = step - comm.max_over_ranks(-steps_to_next_stop_vote(seconds_per_step));  // the earliest
  last_vote_step_ = step;
  last_vote_time_ = now;
}

bool TrainingLoop::run() {
  const TrainConfig& c = trainer_.config();
  Progress& p = trainer_.progress();
  const int64_t total_nimg = images_of_kimg(c.train.total_kimg);
  run_clock_.reset();
  write_initial_images();
  spdlog::info("Training for {} kimg{}...", c.train.total_kimg,
               resumed_ ? fmt::format(" (resuming at {:.1f} kimg, tick {})", p.cur_nimg / 1e3, p.cur_tick) : "");
  if (p.cur_nimg >= total_nimg) {
    spdlog::info("Already trained for {:.1f} kimg; raise train.total_kimg to continue.", p.cur_nimg / 1e3);
    return true;
  }
  p.tick_start_nimg = resumed_ ? p.tick_start_nimg : p.cur_nimg;
  tick_start_time_ = run_clock_.seconds();
  maintenance_seconds_ = tick_start_time_;
  last_vote_step_ = p.batch_idx;
  last_vote_time_ = tick_start_time_;
  next_vote_step_ = p.batch_idx + 1;
  reset_device_peak_memory(trainer_.device());
  const int64_t tick_nimg = images_of_kimg(c.train.kimg_per_tick);
  for (;;) {
    trainer_.step();
    const bool done = p.cur_nimg >= total_nimg;
    const bool tick_ends = p.cur_tick == 0 || p.cur_nimg >= p.tick_start_nimg + tick_nimg;
    // The ranks vote on stopping at tick ends and at the steps their last vote agreed on, so they
    // stop together, all naming the signal.
    if (done || tick_ends || p.batch_idx >= next_vote_step_) vote_on_stopping();
    if (!done && stop_signal_ == 0 && !tick_ends) continue;
    end_tick(done);
    if (done || stop_signal_ != 0) return done;  // also where a signal came during the tick's metrics
  }
}

// The end of a tick, as llm.c's main loop: each block says when it is due and does one thing.
void TrainingLoop::end_tick(bool done) {
  const TrainConfig& c = trainer_.config();
  Progress& p = trainer_.progress();
  const double tick_end = run_clock_.seconds();
  const int64_t tick = p.cur_tick;
  const bool stopping = stop_signal_ != 0;  // the vote's, before the metrics
  const bool last = done || stopping;
  previous_tick_nimg_ = tick == 0 ? -1 : p.tick_start_nimg;  // names this tick's files
  report_tick(tick_end);
  if (c.run.image_snapshot_ticks > 0 && (last || tick % c.run.image_snapshot_ticks == 0)) write_sample_grid();
  const bool periodic_snapshot = c.run.network_snapshot_ticks > 0 && tick % c.run.network_snapshot_ticks == 0;
  // Not when stopping on a signal: a scheduler's time limit leaves no time for 50,000 fakes.
  const bool metrics_due =
      metrics_ && !stopping && (done || (c.metric.ticks > 0 ? tick % c.metric.ticks == 0 : periodic_snapshot));
  p.cur_tick += 1;  // the snapshot resumes with the next tick
  p.tick_start_nimg = p.cur_nimg;
  const std::string snapshot = last || periodic_snapshot ? write_snapshot() : "";
  if (metrics_due) evaluate_metrics(snapshot);
  if (is_rank0()) events_->flush();
  if (stop_signal_ != 0 && !done && is_rank0()) {
    spdlog::warn("Stopped by signal {} at {:.1f} kimg; resume with --resume {}", stop_signal_, p.cur_nimg / 1e3,
                 run_dir_);
  }
  tick_start_time_ = run_clock_.seconds();
  maintenance_seconds_ = tick_start_time_ - tick_end;
}

// The tick's timing and resource scalars, then every statistic reduced over the ranks (moments add
// up; means are over all ranks): the status line, stats.jsonl and TensorBoard on rank 0.
void TrainingLoop::report_tick(double tick_end) {
  const Progress& p = trainer_.progress();
  StatsCollector& stats = trainer_.stats();
  const double tick_seconds = tick_end - tick_start_time_;
  const auto tick_images = static_cast<double>(p.cur_nimg - p.tick_start_nimg);
  stats.report_scalar("Progress/tick", static_cast<double>(p.cur_tick));
  stats.report_scalar("Progress/kimg", p.cur_nimg / 1e3);
  stats.report_scalar("Timing/total_sec", tick_end);
  stats.report_scalar("Timing/sec_per_tick", tick_seconds);
  stats.report_scalar("Timing/sec_per_kimg", tick_seconds / std::max(tick_images, 1.0) * 1e3);
  stats.report_scalar("Timing/img_per_sec", tick_images / std::max(tick_seconds, 1e-9));
  stats.report_scalar("Timing/maintenance_sec", maintenance_seconds_);
  stats.report_scalar("Progress/augment", trainer_.augment().p.item<double>());  // 0 without augmentation
  stats.report_scalar("Resources/cpu_mem_gb", current_rss_gib());
  stats.report_scalar("Resources/peak_gpu_mem_gb", device_peak_memory_gib(trainer_.device()));
  reset_device_peak_memory(trainer_.device());
  const dist::ReducerTimes comm_times = trainer_.take_reducer_times();
  if (trainer_.comm().host_waits_for_collectives()) {  // else not measured: no zeros that read as no cost
    stats.report_scalar("Timing/allreduce_busy_sec", comm_times.busy_seconds);
    stats.report_scalar("Timing/allreduce_exposed_sec", comm_times.exposed_seconds);
  }
  const auto values = stats.finish(trainer_.comm().sum_over_ranks(stats.packed_moments()).cpu());
  if (is_rank0()) {
    spdlog::info(status_line(values, tick_seconds));
    write_stats_line(values);
    for (const auto& [name, value] : values)
      if (value.count > 0) events_->add_scalar(name, value.mean, p.cur_nimg);
  }
  check_losses_are_finite(values, p.cur_tick, p.cur_nimg / 1e3);
}

void TrainingLoop::write_sample_grid() {
  if (!is_rank0()) return;
  const Progress& p = trainer_.progress();
  const std::string path = fmt::format("{}/fakes{}.png", run_dir_, kimg_label(p.cur_nimg, previous_tick_nimg_));
  const data::Image grid = save_grid_png(render_fakes(trainer_, grid_), grid_, path);
  events_->add_png("fakes", data::encode_png(grid), grid.height, grid.width, grid.channels, p.cur_nimg);
}

// Every rank checks its replica and hands in its step generator's state; rank 0 writes the file.
// Returns the snapshot's name.
std::string TrainingLoop::write_snapshot() {
  const Progress& p = trainer_.progress();
  trainer_.check_replicas(fmt::format("before the snapshot at {:.1f} kimg", p.cur_nimg / 1e3));
  trainer_.sum_rank_sums_on_rank0();
  const std::vector<at::Tensor> rank_states = trainer_.gather_step_rng_states();
  const std::string name = snapshot_name(p.cur_nimg, previous_tick_nimg_);
  if (is_rank0()) {
    save_snapshot(run_dir_ + "/" + name, trainer_, rank_states);
    spdlog::info("Wrote {}", run_dir_ + "/" + name);
  }
  return name;
}

// Each result is logged as it comes. A stop signal cuts the evaluation short (a scheduler's grace
// time is too short for 50,000 fakes); the stop then has its snapshot, written here where the tick
// wrote none, and the metrics left can be evaluated on it later.
void TrainingLoop::evaluate_metrics(std::string snapshot) {
  std::vector<std::string> unfinished = trainer_.config().metrics;
  try {
    metrics_->evaluate(trainer_.G_ema(), [&](const metrics::MetricResult& result) {
      unfinished.erase(unfinished.begin());
      if (is_rank0()) log_metric(result, snapshot);
    });
  } catch (const metrics::EvaluationStopped& stopped) {
    stop_signal_ = stopped.signal();  // on every rank: each caught the same exception
    if (snapshot.empty()) snapshot = write_snapshot();
    if (!is_rank0()) return;
    spdlog::warn("The metrics {} were cut short ({}); evaluate them with stylegan2_metrics --network {}/{} "
                 "--metrics {}",
                 fmt::join(unfinished, ", "), stopped.what(), run_dir_, snapshot, fmt::join(unfinished, ","));
  }
}

void TrainingLoop::log_metric(const metrics::MetricResult& result, const std::string& snapshot) {
  const Progress& p = trainer_.progress();
  std::vector<std::string> values;
  for (const auto& [name, value] : result.values) {
    values.push_back(fmt::format("{} {:.4f}", name, value));
    events_->add_scalar("Metrics/" + name, value, p.cur_nimg);
  }
  spdlog::info("{} at {:.1f} kimg ({} fakes, {})", fmt::join(values, ", "), p.cur_nimg / 1e3, result.num_fakes,
               format_duration(result.seconds));
  append_metric_line(run_dir_, result, trainer_.world_size(), snapshot, p.cur_nimg / 1e3);
}

std::string TrainingLoop::status_line(const std::map<std::string, StatValue>& stats, double tick_seconds) const {
  const Progress& p = trainer_.progress();
  const double total_seconds = run_clock_.seconds();
  const double sec_per_kimg = stats.at("Timing/sec_per_kimg").mean;
  const double remaining_kimg = std::max(0.0, trainer_.config().train.total_kimg - p.cur_nimg / 1e3);
  return fmt::format(
      "tick {:<5d} kimg {:<8.1f} time {:<12s} sec/tick {:<7.1f} sec/kimg {:<7.2f} maintenance {:<6.1f} "
      "cpumem {:<6.2f} gpumem {:<6.2f} augment {:.3f} G {} D {} r1 {} pl {} eta {}",
      p.cur_tick, p.cur_nimg / 1e3, format_duration(total_seconds), tick_seconds, sec_per_kimg, maintenance_seconds_,
      current_rss_gib(), stats.at("Resources/peak_gpu_mem_gb").mean, stats.at("Progress/augment").mean,
      mean_of(stats, "Loss/G/loss"),
      mean_of(stats, "Loss/D/loss"), mean_of(stats, "Loss/r1_penalty"), mean_of(stats, "Loss/pl_penalty"),
      format_duration(remaining_kimg * sec_per_kimg));
}

void TrainingLoop::write_stats_line(const std::map<std::string, StatValue>& stats) {
  nlohmann::json line;
  for (const auto& [name, value] : stats) line[name] = {{"num", value.count}, {"mean", value.mean}, {"std", value.std}};
  line["timestamp"] = unix_time();
  stats_jsonl_ << line.dump() << "\n";
  stats_jsonl_.flush();
}

}  // namespace sg2::train
