// `tandem bench scaling`: measures the training step of the seed's model (or --layers) on
// 1 device and on N devices with each strategy, interleaved, median of repetitions; puts
// the cost model's prediction beside each measurement; prints the table and writes the
// scaling report (--report out.html: self-contained HTML with SVG charts, plus training
// curves from --history files).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/options.h"

namespace tandem::cli {

struct BenchOptions {
  ModelShapeOptions shape;
  int64_t batch_size = 128;
  std::string devices = "1,2";
  std::string strategy = "both";  // mirrored | host | both
  int steps = 3, repeats = 5;
  std::string hardware = "this-machine-cpu";  // profile for the predictions; "none": none
  std::vector<std::string> history;           // --metrics-json reports or CSVLogger files
  std::string report_path, json_path;
};

CLI::App* add_bench_command(CLI::App& app, BenchOptions& options);
int run_bench(const BenchOptions& options);

}  // namespace tandem::cli
