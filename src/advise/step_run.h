// One model trained by a strategy on synthetic data (uniform inputs, one-hot labels), its
// steps timed: what `tandem calibrate` (one device) and `tandem bench validate` (one and N
// devices) measure. Repetitions of several StepRuns are meant to be interleaved, and their
// medians compared.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "parallel/strategy.h"
#include "profile/phase_timer.h"
#include "tandem/model.h"

namespace tandem::detail {

// Input(widths[0]) -> Dense(w, relu)... -> Dense(widths.back(), softmax), seeded (seed 1)
// so that every run of one shape starts from the same weights.
Model dense_stack(const std::vector<int64_t>& widths);

double median_of(std::vector<double> values);
// The mean over devices timed at once (a step's phases are their mean); 0 for none.
double mean_of(const std::vector<double>& values);

class StepRun {
 public:
  // Compiles `model` with `optimizer` (a Keras name) and builds the strategy for batches of
  // `rows`, then runs one warm-up step (oneDNN primitives, buffers) outside the timings.
  StepRun(Model model, int64_t rows, const StrategyOptions& options,
          const std::string& optimizer = "rmsprop");

  // Times `steps` steps; appends their mean to seconds().
  void time(int steps, uint64_t& seed);
  // Takes the last time() call's repetition out of seconds(), phase_per_step_each() and
  // phase_seconds() (a repetition timed again in a quiet window replaces it); throws where
  // nothing is timed.
  void forget_last();
  // One step outside every timing: after other runs used the machine, the first step pays
  // for the switch (cold caches, device threads and ranks woken), which a training loop's
  // consecutive steps do not. Interleaved measurements settle each run before timing it.
  void settle(uint64_t& seed);
  const std::vector<double>& seconds() const { return seconds_; }
  double median_seconds() const { return median_of(seconds_); }
  // One phase per step (optimizer: the update; data: the batch's rows gathered) in each call
  // of time(), as seconds() holds the steps: one hiccup in a phase stays in its repetition,
  // which a median then leaves out.
  std::vector<double> phase_per_step_each(Phase phase) const;
  // Each phase per step over everything timed (the strategy's mean over its devices).
  std::map<std::string, double> phase_seconds() const;
  int64_t rows() const { return rows_; }
  const Model& model() const { return model_; }

 private:
  int64_t rows_;
  Model model_;
  std::unique_ptr<Strategy> run_;
  Tensor x_, y_;
  std::vector<int64_t> order_;
  std::vector<double> seconds_;
  std::vector<PhaseTimes> timed_each_;  // each time() call's phases per step, and its steps
  // The phases of the settle() steps and of forgotten repetitions, left out of phase_seconds().
  PhaseTimes left_out_;
  PhaseTimes timed_phases() const;
};

}  // namespace tandem::detail
