#include "sg2/cli/local_launch.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/distributed/launcher.h"
#include "sg2/distributed/world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <cstdlib>

namespace sg2::cli {

std::vector<std::string> arguments_without_gpus(const std::vector<std::string>& arguments) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == "--gpus") {
      ++i;  // and its value
    } else if (arguments[i].rfind("--gpus=", 0) != 0) {
      kept.push_back(arguments[i]);
    }
  }
  return kept;
}

void check_gpu_count(int gpus, train::DeviceChoice device, int visible_gpus) {
  SG2_CHECK(gpus >= 1, "--gpus {}: must be at least 1", gpus);
  if (device == train::DeviceChoice::Cpu) return;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string which = visible != nullptr ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", visible) : "";
  SG2_CHECK(device != train::DeviceChoice::Cuda || visible_gpus > 0,
            "--gpus {} with run.device cuda, but LibTorch sees no CUDA device{}", gpus, which);
  SG2_CHECK(visible_gpus == 0 || gpus <= visible_gpus,
            "--gpus {}: this node has {} GPU{} visible{}; start at most {} ranks, or run.device cpu for CPU ranks",
            gpus, visible_gpus, visible_gpus == 1 ? "" : "s", which, visible_gpus);
}

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  SG2_CHECK(fd >= 0, "--gpus: cannot open a socket to find a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // the kernel picks one
  socklen_t length = sizeof(address);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  SG2_CHECK(bound, "--gpus: cannot find a free port on the loopback");
  return ntohs(address.sin_port);
}

int launch_local_ranks(int gpus, const train::TrainConfig& config) {
  const dist::Launcher launcher = dist::detect_launcher();
  SG2_CHECK(launcher == dist::Launcher::Single, "--gpus {} starts its own ranks, but this process is already one of "
            "a launch ({}): drop --gpus and give the count to the launcher (mpirun -np, srun -n, "
            "stylegan2_launch --nproc-per-node)", gpus, dist::to_string(launcher));
  const int visible = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  check_gpu_count(gpus, config.run.device, visible);
  dist::LaunchOptions options;
  options.nproc_per_node = gpus;
  options.master_port = free_local_port();
  options.command = arguments_without_gpus(own_command_line());
  SG2_CHECK(!options.command.empty(), "--gpus: cannot read this program's command line (/proc/self/cmdline)");
  const std::string program = own_executable();
  if (!program.empty()) options.command.front() = program;
  const bool on_gpus = visible > 0 && config.run.device != train::DeviceChoice::Cpu;
  spdlog::info("Starting {} ranks on this node, {} (the rendezvous on 127.0.0.1:{})", gpus,
               on_gpus ? "one GPU each" : "on the CPU", options.master_port);
  return dist::launch(options);
}

}  // namespace sg2::cli
