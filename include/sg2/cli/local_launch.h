#pragma once
// stylegan2_train --gpus N: one node, N ranks started by the project's launcher (dist::launch, as
// stylegan2_launch --nproc-per-node N), one GPU each, CPU ranks where the node has no GPU; the way
// stylegan2-ada-pytorch's train.py --gpus N and torchrun --nproc-per-node users start a run.

#include "sg2/train/config.h"

#include <string>
#include <vector>

namespace sg2::cli {

// The ranks' command line: this program's arguments less --gpus N (or --gpus=N).
std::vector<std::string> arguments_without_gpus(const std::vector<std::string>& arguments);

// Fails, saying what there is, when N ranks cannot each have a GPU of their own for run.device:
// more ranks than visible GPUs, or run.device cuda on a node without one. visible_gpus: what
// LibTorch sees (CUDA_VISIBLE_DEVICES applied).
void check_gpu_count(int gpus, train::DeviceChoice device, int visible_gpus);

// A TCP port on the loopback that nothing listens on now (for the ranks' rendezvous).
int free_local_port();

// Starts N ranks of this program under the launcher and returns the job's exit code; fails when
// this process is itself a rank of a launch (mpirun, srun, stylegan2_launch), which starts its own.
int launch_local_ranks(int gpus, const train::TrainConfig& config);

}  // namespace sg2::cli
