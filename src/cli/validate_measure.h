// The measurements of `tandem bench validate`: every configuration of its plan for each model
// and batch, interleaved, and each model's 1-device curve measured again between them (with
// the probes of devices at once), which refit the profile the predictions are made from. On
// one process of several devices, a repetition whose window was disturbed (the devices' cores
// apart or their time taken: window_check.h) is timed again in a quiet window, as calibrate's
// probes of devices at once are; its cache reading is recorded only.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"
#include "cli/validate_plan.h"
#include "parallel/world.h"

namespace tandem::cli {

// One configuration of one model and batch: the median of its repetitions, each, and its
// phases per step.
struct MeasuredConfig {
  size_t model;  // in the plan's models
  int64_t batch;
  size_t kind;  // in the plan's kinds
  double seconds;
  std::vector<double> per_repetition;
  std::map<std::string, double> phases;
  // On one process of 2 or more devices, each kept repetition's window (window_check.h): the
  // slower hand-off between the devices' cores at its edges, seconds one way, the share of the
  // CPUs' time the hypervisor took (Window::counted_steal), and the slower cache reading
  // (seconds); empty otherwise. And the repetitions timed again because their window was
  // disturbed (each replaced by the next).
  std::vector<double> handoff_per_repetition, steal_per_repetition, cache_per_repetition;
  int redone = 0;
};

struct ValidationMeasurements {
  std::vector<MeasuredConfig> all;  // the reporter's: by model, batch and kind
  nlohmann::json calibrations = nlohmann::json::array();  // each model's refitted curve
  std::vector<double> memory_shares, compute_shares;      // the probe rounds
  double best_handoff = 0;  // the fastest hand-off the run measured (0: none)
  double best_cache = 0;    // the fastest cache reading the run measured (0: none)
  // On one process of 2 or more devices, each model's repetitions as one probe's window (its
  // polls waiting for quiet shared by all its batches), by model; empty otherwise.
  std::vector<detail::ProbeWindow> measured_windows;
};

// Measures the plan (every rank takes part in the multi-rank runs) and refits `hardware`'s
// dense curves, and on one process its shares of devices at once, from the runs between;
// other ranks than the reporter return no measurements.
ValidationMeasurements measure_validation(const ValidationPlan& plan,
                                          const ValidateOptions& options,
                                          detail::HardwareProfile& hardware, detail::World* world);

}  // namespace tandem::cli
