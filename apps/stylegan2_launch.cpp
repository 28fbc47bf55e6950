// stylegan2_launch: starts the ranks of one node with torchrun's environment and supervises them.
//   stylegan2_launch --nproc-per-node 2 -- stylegan2_train --config run.yaml
//   stylegan2_launch --nproc-per-node 8 --nnodes 2 --node-rank 1 --master-addr node0 -- stylegan2_train ...
#include "sg2/core/cli_parse.h"
#include "sg2/distributed/launcher.h"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Starts N copies of a program with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, "
               "MASTER_ADDR and MASTER_PORT set; when one fails, stops the others."};
  app.footer("Everything after -- is the program and its arguments. Examples:\n"
             "  stylegan2_launch --nproc-per-node 8 -- stylegan2_train --config configs/config-f.yaml --data /data/ffhq.zip\n"
             "  stylegan2_launch --nproc-per-node 8 --nnodes 2 --node-rank 1 --master-addr node0 -- stylegan2_train ...\n"
             "  stylegan2_launch --nproc-per-node 2 --log-dir logs -- stylegan2_metrics --network snap.pt --metrics fid50k_full");
  sg2::dist::LaunchOptions options;
  app.add_option("--nproc-per-node", options.nproc_per_node, "Processes (ranks) on this node")->required();
  app.add_option("--nnodes", options.nnodes, "Nodes in the job")->capture_default_str();
  app.add_option("--node-rank", options.node_rank, "This node's index, 0 to nnodes-1")->capture_default_str();
  app.add_option("--master-addr", options.master_addr, "Address of node 0, where rank 0 listens")
      ->capture_default_str();
  app.add_option("--master-port", options.master_port, "Port of rank 0")->capture_default_str();
  app.add_option("--grace-seconds", options.grace_seconds, "Wait between SIGTERM and SIGKILL when stopping ranks")
      ->capture_default_str();
  app.add_option("--log-dir", options.log_dir, "Write each rank's stdout and stderr to DIR/rank_<RANK>.log");
  app.add_option("command", options.command, "Program and arguments");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);

  auto logger = spdlog::stderr_logger_mt("stylegan2_launch");
  logger->set_pattern("[stylegan2_launch] %v");
  spdlog::set_default_logger(logger);
  try {
    return sg2::dist::launch(options);
  } catch (const std::exception& e) {
    std::cerr << "stylegan2_launch: error: " << e.what() << std::endl;
    return 1;
  }
}
