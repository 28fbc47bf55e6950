// From a resolved config to a ready trainer (run_setup.h).
#include "sg2/cli/run_setup.h"

#include "sg2/core/error.h"
#include "sg2/train/batch_probe.h"
#include "sg2/train/snapshot.h"

namespace sg2::cli {

namespace {

// A snapshot's G must fit the dataset the config names: resolution, channels, labels.
void check_snapshot_fits(const train::Snapshot& snapshot, const std::string& path, const data::Dataset& dataset,
                         const TrainConfig& config) {
  const nn::GeneratorOptions g = nn::generator_options_from_json(snapshot.networks.at("G"));
  train::check_network_fits_dataset(g, path, dataset, config.data.path);
  SG2_CHECK(g.c_dim > 0 || dataset.label_dim() == 0, "'{}' is unconditional, but data.use_labels gives it {} "
            "label values: resume with --data.use_labels false", path, dataset.label_dim());
}

}  // namespace

ReadyRun set_up_run(const TrainConfig& requested, dist::Communicator& comm, const dist::World& world,
                    const train::Snapshot* snapshot, const std::string& snapshot_path) {
  ReadyRun run;
  const TrainConfig config = snapshot != nullptr && snapshot->imported()
                                 ? train::fine_tuning_config(requested, &run.fine_tuning)
                                 : requested;
  train::validate(config, comm.size());
  run.compute = apply_libtorch_settings(config, world);
  run.compute_warning = compute_settings_warning(config, comm.device());
  run.dataset = train::open_configured_dataset(config);
  if (snapshot != nullptr) check_snapshot_fits(*snapshot, snapshot_path, *run.dataset, config);
  run.config = train::with_probed_batch_gpu(config, run.dataset, comm.device(), comm, &run.batch_report);
  run.trainer = std::make_unique<train::Trainer>(run.config, run.dataset, comm.device(), &comm);
  if (snapshot != nullptr) {
    train::restore_trainer(*run.trainer, *snapshot);
    run.trainer->broadcast_from_rank0();
  }
  return run;
}

}  // namespace sg2::cli
