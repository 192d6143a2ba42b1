#include "cli/validate_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/validation.h"
#include "cli/atomic_write.h"
#include "cli/options.h"
#include "cli/validate_measure.h"
#include "cli/validate_plan.h"
#include "cli/validate_recompute.h"
#include "parallel/world.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

// The predictions from the profile as the run left it, beside the measurements: the table,
// the advice checked, the run's JSON; the exit code (1 on a miss).
int report_validation(const ValidationPlan& plan, const ValidationMeasurements& measured_runs,
                      const detail::HardwareProfile& hw, const ValidateOptions& o) {
  const auto& all = measured_runs.all;
  const auto& kinds = plan.kinds;
  const auto& models = plan.models;
  const int n = plan.n;
  const auto& calibrations = measured_runs.calibrations;
  const auto &memory_shares = measured_runs.memory_shares,
             &compute_shares = measured_runs.compute_shares;
  // Each model's repetitions as one probe's window, where they had windows.
  nlohmann::json measured_windows = nlohmann::json::array();
  for (size_t m = 0; m < measured_runs.measured_windows.size(); ++m) {
    measured_windows.push_back(
        {{"model", fmt::format("{}", fmt::join(plan.models[m], "-"))},
         {"window", detail::probe_window_json(measured_runs.measured_windows[m])}});
  }
  // Each row's speedup against its model and batch's 1-device run (kinds[0]).
  std::vector<detail::ValidationRow> rows;
  nlohmann::json measured = nlohmann::json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    const MeasuredConfig& m = all[i];
    const ValidationKind& kind = kinds[m.kind];
    const auto& widths = models[m.model];
    const std::string model_name = fmt::format("{}", fmt::join(widths, "-"));
    const double base = all[i - m.kind].seconds;
    const detail::Prediction p =
        detail::predict_config(hw, {widths, m.batch, kind.devices, kind.strategy, kind.reducer,
                                    kind.deterministic, kind.ranks, kind.bf16, kind.bucket_mb});
    detail::ValidationRow row;
    row.model = model_name;
    row.config = plan.config_name(kind);
    row.batch = m.batch;
    row.devices = kind.devices * kind.ranks;  // over all ranks
    row.predicted_seconds = p.step_seconds;
    row.measured_seconds = m.seconds;
    row.predicted_speedup = p.speedup;
    row.predicted_phases = p.phases;
    row.algorithm = p.algorithm;
    row.measured_speedup = base / row.measured_seconds;
    row.measured_repetitions = m.per_repetition;
    rows.push_back(row);
    measured.push_back({{"model", model_name},
                        {"batch", m.batch},
                        {"config", row.config},
                        {"devices", kind.devices},
                        {"strategy", detail::name_of(kind.strategy)},
                        {"reducer", detail::name_of(kind.reducer)},
                        {"deterministic", kind.deterministic},
                        {"ranks", kind.ranks},
                        {"bf16", kind.bf16},
                        {"bucket_mb", kind.bucket_mb},
                        {"measured_seconds", row.measured_seconds},
                        {"per_repetition", m.per_repetition},
                        {"handoff_per_repetition", m.handoff_per_repetition},
                        {"steal_per_repetition", m.steal_per_repetition},
                        {"cache_per_repetition", m.cache_per_repetition},
                        {"redone", m.redone},
                        {"measured_phases", m.phases},
                        {"algorithm", p.algorithm},
                        {"predicted_phases", p.phases},
                        {"predicted_seconds", row.predicted_seconds},
                        {"measured_speedup", row.measured_speedup},
                        {"predicted_speedup", row.predicted_speedup}});
  }
  std::cout << detail::validation_table(rows, {o.speedup_tolerance, o.step_tolerance});
  std::cout << detail::advice_check_table(detail::check_advice(rows));
  std::cout.flush();
  const detail::Tolerances tolerances{o.speedup_tolerance, o.step_tolerance};
  const auto misses = detail::validation_misses(rows, tolerances);
  if (!o.json_path.empty()) {
    nlohmann::json out = {
        {"profile", hw.document},
        {"calibrations", calibrations},
        {"concurrency_probes",
         {{"memory_share", memory_shares},
          {"compute_share", compute_shares},
          {"best_handoff", measured_runs.best_handoff},
          {"best_cache", measured_runs.best_cache}}},
        {"measured_windows", measured_windows},
        {"threads_per_device", hw.device.threads},
        {"devices", n},
        {"steps", o.steps},
        {"repeats", o.repeats},
        {"tolerances", {{"speedup", o.speedup_tolerance}, {"step", o.step_tolerance}}},
        {"rows", measured},
        {"misses", misses}};
    write_text_atomically(o.json_path, out.dump(1) + "\n");
    fmt::print("wrote {}\n", o.json_path);
  }
  return report_misses(rows, tolerances);
}

}  // namespace

CLI::App* add_validate_command(CLI::App& bench, ValidateOptions& o) {
  CLI::App* cmd = bench.add_subcommand(
      "validate",
      "Check the cost model's predictions against runs it was not calibrated on: each model "
      "and batch on 1 and N devices under every strategy and reducer; exits 1 on a miss");
  cmd->add_option("--hardware", o.hardware,
                  "A CPU profile from tandem calibrate (used as it is, not recalibrated)");
  cmd->add_option("--recompute", o.recompute,
                  "Measure nothing: compare the measurements of an earlier run (its --json) "
                  "with this build's predictions, from that run's profile or --hardware; "
                  "several runs of the same configurations: a configuration misses when it "
                  "misses in more than half of them")
      ->type_name("RUN.json ...");
  cmd->add_option("--models", o.models,
                  "Dense models: hidden widths, ';' between models (Input(784), Dense(10) "
                  "output)")
      ->capture_default_str();
  cmd->add_option("--batches", o.batches, "Global batch sizes")->capture_default_str();
  cmd->add_option("--devices", o.devices, "Devices of the multi-device runs")
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  add_timing_options(*cmd, o.steps, o.repeats);
  cmd->add_option("--calibration-rows", o.calibration_rows,
                  "Rows of the 1-device runs each model's dense rate curve is measured again "
                  "from (followed piecewise in rows; the default's are rows no configuration "
                  "runs), interleaved with its configurations, with the concurrency probes "
                  "(none: the profile as it is)")
      ->type_name("R,R,...|none")
      ->capture_default_str();
  cmd->add_option("--speedup-tolerance", o.speedup_tolerance,
                  "Largest |predicted / measured speedup - 1| that passes")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--step-tolerance", o.step_tolerance,
                  "Largest |predicted / measured step time - 1| that passes")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o.bucket_mb,
                  "Gradient bucket sizes (MB) measured besides the default where gradients are "
                  "reduced in buckets (the all-reduce reducer on N devices; R ranks under "
                  "mpirun), each against the default: the advice's bucket sizes checked")
      ->type_name("MB,MB,...|none")
      ->capture_default_str();
  cmd->add_option("--json", o.json_path,
                  "Write the profile, measurements and predictions as JSON to PATH")
      ->type_name("PATH");
  add_quiet_wait_option(*cmd, o.quiet_wait);
  add_apart_handoff_option(*cmd, o.apart_handoff);
  return cmd;
}

int run_validate(const ValidateOptions& o) {
  if (!o.recompute.empty()) return recompute_validation_runs(o);
  if (o.hardware.empty()) {
    throw ConfigError("bench validate: --hardware is required (or --recompute RUN.json)");
  }
  detail::HardwareProfile hw = detail::load_hardware_profile(o.hardware);
  if (hw.device.threads < 1) {
    throw ConfigError("bench validate: --hardware " + o.hardware +
                      " has no device.threads: validation measures CPU devices, so it needs "
                      "a profile from tandem calibrate");
  }
  detail::set_quiet_wait(o.quiet_wait);
  detail::set_apart_handoff(o.apart_handoff);
  detail::World* world = detail::current_world();
  const ValidationPlan plan = plan_validation(o, hw, world);
  const ValidationMeasurements measured = measure_validation(plan, o, hw, world);
  if (!plan.reporter) return 0;
  return report_validation(plan, measured, hw, o);
}

}  // namespace tandem::cli
