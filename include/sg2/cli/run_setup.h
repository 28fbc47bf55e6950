#pragma once
// The one place a run is set up, from its resolved config (and the snapshot it continues, if any)
// to a trainer ready to step, on every rank alike: stylegan2_train and stylegan2_bench start their
// runs here. The trainer's constructor builds what a step needs (networks, loss, phases, optimizers,
// gradient reducers); the training loop adds what a run directory needs (docs/architecture.md).

#include "sg2/cli/command_line.h"
#include "sg2/train/trainer.h"

#include <memory>
#include <string>
#include <vector>

namespace sg2::cli {

struct ReadyRun {
  TrainConfig config;                       // as resolved, train.batch_gpu auto probed
  std::shared_ptr<data::Dataset> dataset;
  std::unique_ptr<train::Trainer> trainer;  // with the snapshot's state, broadcast from rank 0
  std::string compute;                      // LibTorch's settings and the run's compute settings, in words
  std::string compute_warning;              // what in them runs slower than the default here; empty: nothing
  std::string batch_report;                 // what the probe of train.batch_gpu auto found; empty: no probe
  std::vector<std::string> fine_tuning;     // what fine-tuning an imported network changed (fine_tuning_config)
};

// On every rank of `comm` (world: the launch's, whose processes per node share the cores): checks
// `requested` for the world size, sets LibTorch's process settings, opens the dataset, checks the
// snapshot's networks against it, probes train.batch_gpu auto, builds the trainer and restores the
// snapshot (loaded from snapshot_path, which errors name) into it. An imported snapshot's run is
// set up as train::fine_tuning_config says.
ReadyRun set_up_run(const TrainConfig& requested, dist::Communicator& comm, const dist::World& world,
                    const train::Snapshot* snapshot = nullptr, const std::string& snapshot_path = "");

}  // namespace sg2::cli
