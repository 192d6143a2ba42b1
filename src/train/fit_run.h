// One Model::fit while it runs: its checked options, its data after validation_split, the
// ranks it runs on, where it started (from scratch or a checkpoint), its strategy and its
// checkpoints. Everything before the first step happens in the constructor, so that
// Model::fit (fit.cpp) reads as the training loop alone. Internal.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "model/model_state.h"
#include "parallel/kinds.h"
#include "parallel/strategy.h"
#include "profile/trace.h"
#include "train/checkpoint.h"
#include "train/progress.h"

namespace tandem::detail {

// The fit's fixed choices, parsed once from FitOptions' names.
struct FitChoices {
  StrategyKind strategy;
  ReducerKind reducer;
  GradCompression compression;
  CheckpointUnit checkpoint_unit;
};
// ConfigError naming the option when one is out of range or two contradict each other.
FitChoices check_fit_options(const FitOptions& o);

class FitRun {
 public:
  // Checks the options and data, splits off validation (Keras takes the last fraction,
  // before any shuffling), compares the job across ranks, loads the start state (rank 0's,
  // or its checkpoint when resuming, on every rank) and builds the strategy.
  FitRun(ModelState& s, const Samples& x, const Samples& y, const FitOptions& o);
  FitRun(const FitRun&) = delete;
  FitRun& operator=(const FitRun&) = delete;

  const FitOptions& options() const { return o_; }
  const Compiled& compiled() const { return *s_.compiled; }
  Strategy& strategy() { return *strategy_; }
  const Samples& x() const { return x_; }
  const Samples& y() const { return y_; }
  const std::optional<std::pair<Samples, Samples>>& validation() const { return validation_; }
  int64_t steps_per_epoch() const { return (x_.count() + o_.batch_size - 1) / o_.batch_size; }
  bool tracing() const { return tracer_.has_value(); }

  // Where the fit is; at construction, where it starts.
  FitProgress progress;

  // The epoch's progress output ("Epoch 3/5" first), silent on ranks other than 0.
  Progress progress_bar(int epoch) const;
  // Row order of an epoch: shuffled with the fit's seed when asked, the same on any device
  // or rank count.
  void epoch_rows(int epoch, std::vector<int64_t>& rows) const;
  // The dropout stream of the next step.
  uint64_t step_seed() const;

  // Checkpoints when one is due: after global step `progress.global_step` (unit step), or
  // after epoch `epoch` finished (unit epoch); `total` and `history` are the partial
  // epoch's sums and the finished epochs.
  void after_step(int epoch, int64_t step, const BatchStats& total, const History& history);
  void after_epoch(int epoch, const History& history);

  // After the last step: the timeline written (by rank 0, every rank's events), the run's
  // times in ModelState::run_times.
  void finish();

 private:
  void start_state();  // progress and weights: scratch or checkpoint, rank 0's everywhere
  void save_checkpoint();

  ModelState& s_;
  const FitOptions& o_;
  FitChoices choices_;
  Clock::time_point start_time_;  // after the data checks: what fit_seconds counts from
  Samples x_, y_;
  std::optional<std::pair<Samples, Samples>> validation_;
  World* world_ = nullptr;  // null: one process
  bool writer_ = true;      // prints and writes files (rank 0)
  int verbose_ = 0;
  nlohmann::json identity_;                   // what checkpoints are of; null when none are taken
  std::optional<CheckpointDir> checkpoints_;  // on the writer, with a checkpoint_dir
  bool from_checkpoint_ = false;              // resumed from a file (rank 0)
  bool saved_once_ = false;
  std::optional<Tracer> tracer_;
  std::unique_ptr<Strategy> strategy_;
  bool terminal_ = false;
};

}  // namespace tandem::detail
