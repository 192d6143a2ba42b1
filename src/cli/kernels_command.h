// `tandem bench kernels --model M`: one device's training step of M beside the time its
// backend kernels (oneDNN's convolution, batch normalization and GEMM primitives, tandem's
// pooling and elementwise loops) take inside that same step, each kernel call timed. What
// is left is what the step spends outside the kernels: the loss, the update, dropout,
// concatenation copies, the batch gather, the executor. bench/conv_vs_peers.py reads its
// JSON for the "step <= 1.15x its kernels" criterion (docs/PERFORMANCE.md).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace tandem::cli {

struct KernelsOptions {
  std::string model;  // a built-in name or a saved model file
  int64_t batch_size = 64;
  int threads_per_device = 1;
  std::string optimizer = "sgd";
  int steps = 5, repeats = 5;
  std::string json_path;
};

// `bench` is the `tandem bench` command.
CLI::App* add_kernels_command(CLI::App& bench, KernelsOptions& options);
int run_kernels(const KernelsOptions& options);

}  // namespace tandem::cli
