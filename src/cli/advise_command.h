// `tandem advise`: the cost model's prediction of a training step on N devices of a
// hardware profile, phase by phase, for the host (multi_gpu_model) and mirrored
// strategies, with what limits it and the smallest change that makes N devices pay.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tandem::cli {

struct AdviseOptions {
  std::string layers = "4096,2048,512,64";  // hidden widths
  int64_t input = 784, classes = 10;
  std::string model;  // a built-in name or a saved model (instead of --layers)
  int64_t batch_size = 128;
  int64_t per_device_batch = 0;  // > 0: the batch grows with the devices
  std::string hardware;          // profile name or JSON path
  std::string devices = "1,2,4";
  std::string strategy = "both";  // host | mirrored | both
  int epochs = 5;
  int64_t samples = 60000;
  double bucket_mb = 4;
  std::string grad_compression = "none";
  std::string allreduce = "ring";
  std::string reducer = "sharded";  // mirrored: sharded | allreduce
  bool deterministic = false;
  int ranks = 1;  // MPI processes, each with the --devices counts
  bool no_overlap = false;
  std::string optimizer = "rmsprop";
  std::string json_path;
  std::string svg_path;               // speedup chart
  std::vector<std::string> measured;  // "4=0.5": a measured speedup to plot beside
  bool list = false;
};

CLI::App* add_advise_command(CLI::App& app, AdviseOptions& options);
int run_advise(const AdviseOptions& options);

}  // namespace tandem::cli
