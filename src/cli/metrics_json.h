// The JSON report of `tandem train --metrics-json`: what ran (config), how fast (seconds,
// steps and samples per second, time per phase and per epoch) and how well (per-epoch and
// test metrics).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/train_command.h"
#include "tandem/model.h"

namespace tandem::cli {

struct TrainReport {
  History history;
  std::vector<double> epoch_seconds;  // one per epoch run
  double train_seconds = 0, predict_seconds = 0;
  int64_t train_steps = 0;
  std::map<std::string, double> phase_seconds;  // Model::run_times() of the fit
  std::map<std::string, double> test_scores;    // loss, accuracy
  int64_t train_samples = 0, validation_samples = 0, test_samples = 0;
  int64_t parameters = 0;
  double learning_rate = 0;
  int threads = 0;
  int ranks = 1;  // MPI processes
};

// Keys: train_seconds, predict_seconds, test_loss, test_accuracy, train_steps,
// steps_per_second, samples_per_second, train/validation/test_samples, parameters,
// epochs [{epoch (1-based), loss, accuracy, val_loss?, val_accuracy?, seconds}],
// phase_seconds {data, forward, ...}, config {every option, resolved}.
nlohmann::json train_report_json(const TrainOptions& options, const TrainReport& report);

}  // namespace tandem::cli
