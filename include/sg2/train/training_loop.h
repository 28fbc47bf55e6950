#pragma once
// The tick loop around Trainer::step (reference: training_loop.py): a status line per tick of
// kimg_per_tick (tick, kimg, time, sec/tick, sec/kimg, maintenance, memory, losses), stats.jsonl and
// TensorBoard events (scalars at step = images shown, the fake grids),
// sample grids every image_snapshot_ticks, snapshots every network_snapshot_ticks and at the end,
// metrics (metric-<name>.jsonl) every metric.ticks or at each snapshot.
// SIGINT/SIGTERM to any rank stop every rank within about kStopVoteSeconds (at the same step, so
// never within a step: a step that takes longer ends first), write a snapshot and return; during
// the metrics, within a block of metric.batch images.

#include "sg2/core/timer.h"
#include "sg2/train/event_writer.h"
#include "sg2/train/sample_grid.h"
#include "sg2/train/trainer.h"
#include "sg2/train/training_metrics.h"

#include <fstream>
#include <memory>
#include <string>

namespace sg2::train {

// The images in `kimg` thousand: kimg * 1000 rounded up, where a product within 1e-6 of an integer
// is that integer (1.001 * 1000 = 1000.9999999999999 is 1001 images, 2.007 * 1000 =
// 2007.0000000000002 is 2007), not truncated as a cast does.
int64_t images_of_kimg(double kimg);

// How often the ranks vote on stopping: about every kStopVoteSeconds, in whole steps (each vote
// waits for the device: not every step where steps are short), at most kStopVoteSteps apart.
constexpr double kStopVoteSeconds = 2.0;
constexpr int64_t kStopVoteSteps = 16;

// The steps until the next vote, given the seconds a step took since the last: every step where
// steps take kStopVoteSeconds or more.
int64_t steps_to_next_stop_vote(double seconds_per_step);

class TrainingLoop {
 public:
  TrainingLoop(Trainer& trainer, std::string run_dir, bool resumed);

  // Trains until total_kimg (or a stop signal). Returns true if training completed.
  bool run();

  const std::string& run_dir() const { return run_dir_; }
  // The stop signal any rank received (the same on every rank), 0 if none.
  int stop_signal() const { return stop_signal_; }

 private:
  void forget_ticks_past_the_snapshot();
  void write_initial_images();
  void end_tick(bool done);
  void report_tick(double tick_end);
  void write_sample_grid();
  std::string write_snapshot();
  std::string status_line(const std::map<std::string, StatValue>& stats, double tick_seconds) const;
  void write_stats_line(const std::map<std::string, StatValue>& stats);
  void evaluate_metrics(std::string snapshot);  // "": the tick wrote none
  void log_metric(const metrics::MetricResult& result, const std::string& snapshot);  // rank 0
  bool is_rank0() const { return trainer_.rank() == 0; }

  Trainer& trainer_;
  std::string run_dir_;
  bool resumed_;
  SampleGrid grid_;
  std::unique_ptr<TrainingMetrics> metrics_;  // when the config names metrics
  std::unique_ptr<EventWriter> events_;       // TensorBoard, rank 0
  std::ofstream stats_jsonl_;
  Stopwatch run_clock_;  // since run() started; the times below are its seconds
  double tick_start_time_ = 0;
  double maintenance_seconds_ = 0;
  int stop_signal_ = 0;
  int64_t previous_tick_nimg_ = -1;  // where the tick before the ending one ended (-1: none)
  int64_t next_vote_step_ = 1;     // the batch index of the next stop vote (the same on every rank)
  int64_t last_vote_step_ = 0;
  double last_vote_time_ = 0;
  void vote_on_stopping();
};

}  // namespace sg2::train
