// `tandem evaluate` and `tandem predict`: a saved model (Model::save) on a dataset's test
// split. evaluate reports loss and accuracy; predict writes each sample's class and
// probabilities as CSV (index,class,p0..p9) or JSON, chosen by the output's extension.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "cli/options.h"

namespace tandem::cli {

struct SavedModelRunOptions {
  std::string model_path;
  DataOptions data;
  int64_t batch_size = 128;
  std::optional<int64_t> limit;  // first N test samples
  std::string output_path;       // evaluate: --json (optional); predict: --output
};

CLI::App* add_evaluate_command(CLI::App& app, SavedModelRunOptions& options);
CLI::App* add_predict_command(CLI::App& app, SavedModelRunOptions& options);
int run_evaluate(const SavedModelRunOptions& options);
int run_predict(const SavedModelRunOptions& options);

}  // namespace tandem::cli
