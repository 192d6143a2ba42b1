// The dense rate curves of `tandem calibrate` and `tandem bench validate`: one dense model's
// 1-device steps at several row counts, the rate line and the points the cost model follows,
// and the model's weight-gradient GEMMs timed as its shards run them (weight_grad_probes.h).
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
#include <utility>
#include <vector>

#include "advise/calibrate.h"
#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/step_run.h"
#include "parallel/strategy.h"

namespace tandem::detail {

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

// One dense model's 1-device steps at each of the plan's row counts (interleaved, medians),
// less their measured update and batch gathering, and the rate line through them.
struct DenseCurve {
  ModelCost cost;
  DenseRate rate;
  std::vector<double> steps, updates;
  nlohmann::json steps_json = nlohmann::json::array();
  // The compute and update seconds at each row count, ascending in rows (one row count
  // measured twice: their mean): the curve the cost model follows (dense_rates[].points).
  std::vector<DenseRowsSeconds> points;
  // Its weight-gradient GEMMs at the same rows, whole and as one device computes its shards,
  // for each device count (shard_device_counts; empty for one device).
  std::vector<WeightGradShards> weight_grad_gemms;
};

// One dense model's curve: its 1-device steps at plan.rows (plan.repeats repetitions of
// plan.steps steps, interleaved over the rows; a line of each to `log`), and its
// weight-gradient GEMMs for shard_device_counts(plan.max_devices).
DenseCurve measure_dense(const std::vector<int64_t>& widths, const CalibrationPlan& plan,
                         const StrategyOptions& one_device, uint64_t& seed, std::ostream& log);

// The dense_rates entry of a measured curve, and the source of its weight-gradient GEMMs.
nlohmann::json dense_rate_entry(const std::vector<int64_t>& widths, double sustained,
                                double half_rows, const DenseCurve& curve);
std::string weight_grad_gemms_source(const CalibrationPlan& plan);

// The values times `scale`, two decimals and `unit` each, comma-separated.
std::string format_list(const std::vector<double>& values, double scale, const char* unit);

// Fits the dense rate curve of the model `widths` from its 1-device runs at several row
// counts, as calibrate_machine does, and puts it into `hardware` (device.dense_rates and the
// profile's document, replacing a curve for the same model). Returns the fit and its
// measurements as JSON; Error when the steps did not grow with the rows. `together`, when not
// empty: the same row counts on rank 0 while each of `ranks` ranks ran its own at once, kept as
// the curve's ranks_points. The profile's weight-gradient GEMMs for the model are kept, those
// in `weight_grad_gemms` (weight_grad_probes.h, weight_grad_gemm_seconds) replacing the same device
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
