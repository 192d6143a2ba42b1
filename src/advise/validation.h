// Held-out validation of the cost model: predicted and measured step time and speedup side
// by side, and whether each is within its tolerance. The measurements come from `tandem
// bench validate` (configurations the profile was not calibrated on); this part has no
// timing in it, so a test can check that a miss is found.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advise/cost_model.h"

namespace tandem::detail {

struct ValidationRow {
  std::string model;                                   // "784-4096-2048-512-64-10"
  std::string config;                                  // "2 devices mirrored (allreduce)"
  int64_t batch = 0;                                   // global
  int devices = 1;                                     // over all ranks
  double predicted_seconds = 0, measured_seconds = 0;  // per step
  double predicted_speedup = 1, measured_speedup = 1;  // vs 1 device, same model and batch
  std::vector<double> measured_repetitions;            // each repetition's step seconds
  std::map<std::string, double> predicted_phases;      // seconds per step, Prediction::phases
  std::string algorithm;                               // the simulation that predicted it

  double step_error() const { return predicted_seconds / measured_seconds - 1; }
  double speedup_error() const { return predicted_speedup / measured_speedup - 1; }
};

// One configuration of a validation run: a Dense stack at a global batch on `devices`
// devices of the profile under a strategy, reducer and mode.
struct ValidationConfig {
  std::vector<int64_t> widths;  // input, hidden..., output
  int64_t batch = 0;
  int devices = 1;
  StrategyKind strategy = StrategyKind::mirrored;
  ReducerKind reducer = ReducerKind::sharded;
  bool deterministic = false;
  int ranks = 1;  // MPI processes of `devices` each
  bool bf16 = false;
  double bucket_mb = 0;  // gradient bucket size; 0: the default (StrategyOptions::bucket_bytes)
};

// The cost model's prediction for it (speedup against one device at the same batch), as
// `tandem bench validate` makes it and as the comparison with a committed run remakes it.
Prediction predict_config(const HardwareProfile& hardware, const ValidationConfig& config);

// The rows of a committed `tandem bench validate --json` run, with the predictions remade
// by this build's cost model from `hardware` (the run's own profile, or a changed one).
std::vector<ValidationRow> recompute_validation(const nlohmann::json& run,
                                                const HardwareProfile& hardware);

struct Tolerances {
  double speedup = 0.15;  // |predicted / measured speedup - 1|
  double step = 0.20;     // |predicted / measured step time - 1|
};

// Whether the row's step time, or its speedup (N devices only), is outside its tolerance.
bool validation_missed(const ValidationRow& row, const Tolerances& tolerances);

// One line per row outside a tolerance, naming the row and the error (the speedup of a
// 1-device row is 1 by definition and not checked); empty when all are within.
std::vector<std::string> validation_misses(const std::vector<ValidationRow>& rows,
                                           const Tolerances& tolerances);

// The table: model, batch, configuration, predicted and measured ms and speedup, errors, and
// "MISS" beside each row outside a tolerance.
std::string validation_table(const std::vector<ValidationRow>& rows, const Tolerances& tolerances);

// Several validation runs of the same configurations (each with its own profile and
// predictions), and the pass rule for them: a configuration misses only when it is outside a
// tolerance in more than half of the runs. One run on a machine that drifts passes or fails
// partly by the machine's state (docs/SCALING.md: the same speedup measured 20% apart run to
// run); a model error shows in most runs.
struct RepeatedRow {
  std::string model, config;
  int64_t batch = 0;
  int runs = 0, missed = 0;            // runs, and the runs it was out of tolerance in
  std::vector<double> step_errors;     // predicted / measured step - 1, per run
  std::vector<double> speedup_errors;  // the same for speedups (N devices only)
  bool majority_missed() const { return 2 * missed > runs; }
};

// The runs' rows matched by model, batch and configuration; a ConfigError names the run
// whose configurations differ from the first's.
std::vector<RepeatedRow> repeated_validation(const std::vector<std::vector<ValidationRow>>& runs,
                                             const std::vector<std::string>& names,
                                             const Tolerances& tolerances);

// One line per configuration: the runs it missed in, the errors' range, and "MISS" where
// it missed in more than half; then the count.
std::string repeated_validation_table(const std::vector<RepeatedRow>& rows);

// A choice `tandem advise` makes between two configurations of one model and batch, as a
// validation run measured both: bf16 gradients over float32 between MPI ranks, a replica
// per device (mirrored) over the host strategy, a bucket size other than the default (the
// all-reduce reducer on N devices, or R ranks). The model advises the first when it
// predicts its step shorter. The measured order counts only where the runs separate (every
// repetition of one below every repetition of the other); elsewhere the two are within the
// runs' own spread and the pair neither confirms nor contradicts the advice.
enum class AdvisedChoice { bf16_over_float32, mirrored_over_host, bucket_size_over_default };
const char* advised_choice_name(AdvisedChoice choice);

struct AdviceCheck {
  AdvisedChoice choice{};
  std::string model;
  int64_t batch = 0;
  std::string config;          // the advised configuration, "2 ranks 1 MB buckets"
  double predicted_ratio = 1;  // predicted step of the advised configuration / the other's
  double measured_ratio = 1;   // measured, the same
  // The two configurations' repetitions do not overlap, and they are further apart than the
  // run's pairs predicted equal (one configuration built twice) measured.
  bool separated = false;
  bool within_control = false;  // apart, but no further than one configuration built twice

  // The model predicts the two the same step (a bucket size that forms the same buckets as
  // the default, every layer being larger than both): no order to confirm or contradict.
  bool predicted_equal() const { return predicted_ratio == 1; }
  // The advice says the advised configuration is faster (predicted ratio < 1); a pair
  // contradicts it when the runs separate the other way.
  bool contradicted() const {
    return separated && !predicted_equal() && (predicted_ratio < 1) != (measured_ratio < 1);
  }
};

// Every pair of `rows` (one run's) that a choice compares: "N ranks bf16" with "N ranks",
// "N devices mirrored (sharded)" with "N devices host", "C K MB buckets" with "C", of one
// model and batch.
std::vector<AdviceCheck> check_advice(const std::vector<ValidationRow>& rows);

// Per choice: pairs, predicted faster, separated, contradicted; and each contradiction.
std::string advice_check_table(const std::vector<AdviceCheck>& checks);

}  // namespace tandem::detail
