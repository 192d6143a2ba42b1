// The measurements behind `tandem calibrate`: a hardware profile of this machine's CPU
// devices from single-device, single-process facts only, each figure with its source
// (the measurement and its numbers). No multi-device run is measured, so a prediction made
// from the profile can be checked against one (tandem bench scaling) without having been
// fitted to it.
//
// The dense rate: the cost model runs a layer of r rows at sustained * r / (r + half_rows),
// so one device's compute time for a Dense stack of F FLOPs per sample is F (r + half) /
// sustained: a line in r. 1-device steps at several row counts, less their measured update
// and batch gathering, give that line by least squares: sustained = F / slope, half_rows =
// intercept / slope.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"
#include "advise/step_run.h"
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

// Measures (a line per measurement to `log`) and returns the profile as JSON, in
// profiles/*.json's form (parse_hardware_profile reads it), with "sources" for every figure
// and the raw numbers under "measurements". With a world of several ranks (under mpirun)
// every rank first takes part in the all-reduce sweep of the link between them
// (rank_rank); then rank 0 alone measures the rest and returns the profile, and the other
// ranks return null.
nlohmann::json calibrate_machine(const CalibrationPlan& plan, std::ostream& log,
                                 World* world = nullptr);

// The least-squares line through (x, y): {slope, intercept}.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y);

// What the cost model's dense layers invert to: compute(rows) = flops_per_sample x (rows +
// half_rows) / sustained_flops, fitted to 1-device compute times (steps less their update and
// gathering). slope <= 0 (compute did not grow with the rows) leaves both rates at 0.
struct DenseRate {
  double sustained_flops = 0, half_rows = 0;
  double slope = 0, intercept = 0;  // seconds per row, seconds
};
DenseRate dense_rate_from_steps(double flops_per_sample, const std::vector<double>& rows,
                                const std::vector<double>& compute_seconds);

// Fits the dense rate curve of the model `widths` from its 1-device runs at several row
// counts, as calibrate_machine does, and puts it into `hardware` (device.dense_rates and the
// profile's document, replacing a curve for the same model). Returns the fit and its
// measurements as JSON; Error when the steps did not grow with the rows. `together`, when not
// empty: the same row counts on rank 0 while each of `ranks` ranks ran its own at once, kept as
// the curve's ranks_points. The profile's weight-gradient GEMMs for the model are kept, those
// in `weight_grad_gemms` (probes.h, weight_grad_gemm_seconds) replacing the same device
// count's.
nlohmann::json refit_dense_rate(HardwareProfile& hardware, const std::vector<int64_t>& widths,
                                const std::vector<std::unique_ptr<StepRun>>& runs,
                                const std::vector<std::unique_ptr<StepRun>>& together = {},
                                int ranks = 0,
                                const std::vector<WeightGradShards>& weight_grad_gemms = {});

// What the shards of `timed` keep of the whole GEMMs at each row count, warm and with the
// caches emptied, in words (calibrate's and bench validate's output).
std::string weight_grad_shares(const WeightGradShards& timed);

// The device counts calibrate times weight-gradient shards for: 2, 4, 8, ... below
// max_devices, and max_devices itself; none for one device.
std::vector<int> shard_device_counts(int max_devices);

}  // namespace tandem::detail
