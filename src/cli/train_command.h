// `tandem train`: the seed's program with every choice a flag. Builds
// Input(784) -> Dense(w, activation)... -> Dense(10, softmax), fits it, times predict on the
// test split, evaluates it, and optionally saves the model and a JSON report.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "cli/options.h"

namespace tandem::cli {

struct TrainOptions {
  DataOptions data;
  ModelShapeOptions shape;
  std::string optimizer = "rmsprop";    // sgd | rmsprop | adam
  std::optional<double> learning_rate;  // absent: the optimizer's Keras default
  std::string loss = "categorical_crossentropy";
  bool compile_given = false;  // --optimizer, --lr or --loss was on the command line
  int64_t batch_size = 128;
  int epochs = 5;
  std::optional<uint64_t> seed;
  std::optional<int> threads;  // absent: the library's default
  int devices = 1;
  std::string strategy = "mirrored";  // mirrored | host
  std::string reducer = "sharded";    // mirrored: sharded | allreduce
  int threads_per_device = 0;         // 0: the cores shared out
  bool deterministic = false;
  double bucket_mb = 4.0;
  double validation_split = 0.0;
  // Several MPI ranks (mpirun -np N tandem train ...):
  std::string grad_compression = "none";  // none | bf16
  double comm_timeout = 60;               // seconds before a silent rank ends the job
  // Checkpoints: "2" or "2epochs" (every 2 epochs), "500steps".
  std::string checkpoint_dir, checkpoint_every;
  int keep_checkpoints = 3;
  bool resume = false;
  bool overwrite_checkpoints = false;         // a fresh run may replace checkpoints found
  std::vector<std::string> resume_overrides;  // fields a resume may change
  bool continue_on_nan = false;  // default: a NaN/inf loss stops the run, exit 7, nothing saved
  bool keep_denormals = false;   // default: denormal floats flushed to zero, as TensorFlow does
  int verbose = 1;
  std::string save_path;          // empty: do not save
  std::string metrics_json_path;  // empty: no report
  std::string trace_path;         // --profile: a Chrome trace of the fit
  std::optional<int64_t> limit_train, limit_test;
};

// Registers the subcommand on `app`; its values land in `options`.
CLI::App* add_train_command(CLI::App& app, TrainOptions& options);
// Runs it; returns the exit code. Library errors propagate to main.
int run_train(const TrainOptions& options);

}  // namespace tandem::cli
