// The measurements behind `tandem calibrate`: a hardware profile of this machine's CPU
// devices from single-device, single-process facts only, each figure with its source
// (the measurement and its numbers). No multi-device run is measured, so a prediction made
// from the profile can be checked against one (tandem bench scaling) without having been
// fitted to it. The dense rate curves are calibrate_dense.h's, the probes of several devices
// calibrate_devices.h's and the convolution rate calibrate_conv.h's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "parallel/world.h"

namespace tandem::detail {

struct CalibrationPlan {
  std::string name = "this-machine";
  std::vector<int64_t> widths;  // the dense model: input, hidden..., output
  // More dense models, each measured the same way for its own rate curve (dense_rates).
  std::vector<std::vector<int64_t>> other_widths;
  // A built-in convnet (tandem/zoo.h) or a saved model file for the conv rate, or "".
  std::string conv_model;
  int64_t conv_batch = 64;
  int threads_per_device = 1;
  int max_devices = 1;
  std::vector<int64_t> rows;  // rows per device of the measured steps (2 or more)
  int steps = 3;              // steps per timed repetition
  int repeats = 5;            // repetitions, interleaved over the row counts; medians used
};

// ConfigError naming the option for a plan that cannot be measured.
void check_plan(const CalibrationPlan& plan);

// What calibrate does with `profile` (calibrate_machine's) where some of its probes of devices
// at once kept timings taken with the devices' cores apart or their time taken
// (disturbed_windows): an Error naming each, and that `out` was not written, unless `allow`;
// then a warning to `log`. Nothing where none was.
void check_windows(const nlohmann::json& profile, bool allow, const std::string& out,
                   std::ostream& log);

// Measures (a line per measurement to `log`) and returns the profile as JSON, in
// profiles/*.json's form (parse_hardware_profile reads it), with "sources" for every figure
// and the raw numbers under "measurements". With a world of several ranks (under mpirun)
// every rank first takes part in the all-reduce sweep of the link between them
// (rank_rank); then rank 0 alone measures the rest and returns the profile, and the other
// ranks return null.
nlohmann::json calibrate_machine(const CalibrationPlan& plan, std::ostream& log,
                                 World* world = nullptr);

}  // namespace tandem::detail
