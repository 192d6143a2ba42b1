#include "cli/validate_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/step_run.h"
#include "advise/validation.h"
#include "cli/atomic_write.h"
#include "cli/options.h"
#include "parallel/strategy.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

// The configurations measured for each model and batch: one device, then N devices under
// each strategy and reducer.
struct Kind {
  const char* name;
  int devices;  // 1, or the --devices count
  detail::StrategyKind strategy;
  detail::ReducerKind reducer;
  bool deterministic;
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t next = text.find(separator, at);
    out.push_back(text.substr(at, next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

}  // namespace

CLI::App* add_validate_command(CLI::App& bench, ValidateOptions& o) {
  CLI::App* cmd = bench.add_subcommand(
      "validate",
      "Check the cost model's predictions against runs it was not calibrated on: each model "
      "and batch on 1 and N devices under every strategy and reducer; exits 1 on a miss");
  cmd->add_option("--hardware", o.hardware,
                  "A CPU profile from tandem calibrate (used as it is, not recalibrated)")
      ->required();
  cmd->add_option("--models", o.models,
                  "Dense models: hidden widths, ';' between models (Input(784), Dense(10) "
                  "output)")
      ->capture_default_str();
  cmd->add_option("--batches", o.batches, "Global batch sizes")->capture_default_str();
  cmd->add_option("--devices", o.devices, "Devices of the multi-device runs")
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  add_timing_options(*cmd, o.steps, o.repeats);
  cmd->add_option("--speedup-tolerance", o.speedup_tolerance,
                  "Largest |predicted / measured speedup - 1| that passes")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--step-tolerance", o.step_tolerance,
                  "Largest |predicted / measured step time - 1| that passes")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--json", o.json_path,
                  "Write the profile, measurements and predictions as JSON to PATH")
      ->type_name("PATH");
  return cmd;
}

int run_validate(const ValidateOptions& o) {
  const detail::HardwareProfile hw = detail::load_hardware_profile(o.hardware);
  if (hw.device.threads < 1) {
    throw ConfigError("bench validate: --hardware " + o.hardware +
                      " has no device.threads: validation measures CPU devices, so it needs "
                      "a profile from tandem calibrate");
  }
  if (o.devices > hw.max_devices) {
    throw ConfigError(fmt::format("bench validate: --devices {} is more than {}'s max_devices {}",
                                  o.devices, hw.name, hw.max_devices));
  }
  std::vector<std::vector<int64_t>> models;
  for (const std::string& m : split(o.models, ';')) {
    try {
      std::vector<int64_t> widths = {kImageSize};
      for (int64_t w : parse_layer_widths(m)) widths.push_back(w);
      widths.push_back(kClasses);
      models.push_back(widths);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--models: ") + e.what());
    }
  }
  std::vector<int64_t> batches;
  try {
    batches = parse_layer_widths(o.batches);  // whole numbers > 0, comma-separated
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--batches: ") + e.what());
  }
  for (int64_t b : batches) {
    if (b < o.devices) {
      throw ConfigError(
          fmt::format("--batches: batch {} is smaller than {} devices", b, o.devices));
    }
  }
  if (!o.json_path.empty()) check_writable(o.json_path);
  const int n = o.devices;
  const std::vector<Kind> kinds = {
      {"1 device", 1, detail::StrategyKind::mirrored, detail::ReducerKind::sharded, false},
      {"mirrored (sharded)", n, detail::StrategyKind::mirrored, detail::ReducerKind::sharded,
       false},
      {"mirrored (allreduce)", n, detail::StrategyKind::mirrored, detail::ReducerKind::allreduce,
       false},
      {"mirrored deterministic", n, detail::StrategyKind::mirrored, detail::ReducerKind::sharded,
       true},
      {"host", n, detail::StrategyKind::host, detail::ReducerKind::sharded, false}};

  std::vector<detail::ValidationRow> rows;
  nlohmann::json measured = nlohmann::json::array();
  for (const auto& widths : models) {
    const std::string model_name = fmt::format("{}", fmt::join(widths, "-"));
    for (int64_t batch : batches) {
      std::vector<std::unique_ptr<detail::StepRun>> runs;
      for (const Kind& k : kinds) {
        detail::StrategyOptions so;
        so.devices = k.devices;
        so.threads_per_device = hw.device.threads;
        so.kind = k.strategy;
        so.reducer = k.reducer;
        so.deterministic = k.deterministic;
        runs.push_back(std::make_unique<detail::StepRun>(detail::dense_stack(widths), batch, so));
      }
      uint64_t seed = 100;
      for (int rep = 0; rep < o.repeats; ++rep) {
        for (auto& r : runs) r->time(o.steps, seed);
      }
      detail::Scenario scenario;
      scenario.model = detail::ModelCost::dense(widths);
      scenario.batch = batch;
      const double base = runs.front()->median_seconds();
      for (size_t i = 0; i < runs.size(); ++i) {
        const Kind& kind = kinds[i];
        const detail::StepRun& r = *runs[i];
        scenario.strategy = kind.strategy;
        const detail::Prediction p = detail::predict_all(hw, scenario, {kind.devices}).front();
        detail::ValidationRow row;
        row.model = model_name;
        row.config = kind.devices == 1 ? kind.name : fmt::format("{} devices {}", n, kind.name);
        row.batch = batch;
        row.devices = kind.devices;
        row.predicted_seconds = p.step_seconds;
        row.measured_seconds = r.median_seconds();
        row.predicted_speedup = p.speedup;
        row.measured_speedup = base / row.measured_seconds;
        rows.push_back(row);
        measured.push_back({{"model", model_name},
                            {"batch", batch},
                            {"config", row.config},
                            {"devices", row.devices},
                            {"strategy", detail::name_of(kind.strategy)},
                            {"reducer", detail::name_of(kind.reducer)},
                            {"deterministic", kind.deterministic},
                            {"measured_seconds", row.measured_seconds},
                            {"per_repetition", r.seconds()},
                            {"predicted_seconds", row.predicted_seconds},
                            {"measured_speedup", row.measured_speedup},
                            {"predicted_speedup", row.predicted_speedup}});
      }
      std::cout << detail::validation_table(
          std::vector<detail::ValidationRow>(rows.end() - static_cast<long>(runs.size()),
                                             rows.end()),
          {o.speedup_tolerance, o.step_tolerance});
      std::cout.flush();
    }
  }
  const detail::Tolerances tolerances{o.speedup_tolerance, o.step_tolerance};
  const auto misses = detail::validation_misses(rows, tolerances);
  if (!o.json_path.empty()) {
    nlohmann::json out = {
        {"profile", hw.document},
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
  if (misses.empty()) {
    fmt::print("all {} configurations within tolerance\n", rows.size());
    return 0;
  }
  const auto missed = std::count_if(rows.begin(), rows.end(), [&](const auto& r) {
    return detail::validation_missed(r, tolerances);
  });
  fmt::print(stderr, "tandem: validation failed: {} of {} configurations out of tolerance:\n",
             missed, rows.size());
  for (const auto& m : misses) fmt::print(stderr, "  {}\n", m);
  return 1;
}

}  // namespace tandem::cli
