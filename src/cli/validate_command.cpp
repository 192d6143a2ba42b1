#include "cli/validate_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "advise/calibrate.h"
#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/probes.h"
#include "advise/step_run.h"
#include "advise/validation.h"
#include "cli/atomic_write.h"
#include "cli/options.h"
#include "core/input_file.h"
#include "parallel/strategy.h"
#include "parallel/world.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

// The configurations measured for each model and batch: one device, then N devices under
// each strategy and reducer, or (under mpirun) R ranks of one device each.
struct Kind {
  const char* name;
  int devices;  // 1, or the --devices count
  detail::StrategyKind strategy;
  detail::ReducerKind reducer;
  bool deterministic;
  int ranks = 1;
  bool bf16 = false;
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
                  "A CPU profile from tandem calibrate (used as it is, not recalibrated)");
  cmd->add_option("--recompute", o.recompute,
                  "Measure nothing: compare the measurements of an earlier run (its --json) "
                  "with this build's predictions, from that run's profile or --hardware")
      ->type_name("RUN.json");
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
                  "from, interleaved with its configurations, with the concurrency probes "
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
  cmd->add_option("--json", o.json_path,
                  "Write the profile, measurements and predictions as JSON to PATH")
      ->type_name("PATH");
  return cmd;
}

namespace {

// Prints the misses and returns the exit code: 0 when every row is within its tolerances.
int report_misses(const std::vector<detail::ValidationRow>& rows,
                  const detail::Tolerances& tolerances) {
  const auto misses = detail::validation_misses(rows, tolerances);
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

int recompute(const ValidateOptions& o) {
  const std::string text =
      read_regular_file(o.recompute, 64 * kMiB, "validation run (JSON from bench validate)");
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(o.recompute, 0, std::string("not valid JSON: ") + e.what());
  }
  if (!run.is_object() || !run.contains("profile") || !run.contains("rows")) {
    throw ConfigError("--recompute " + o.recompute +
                      ": not a validation run (needs 'profile' and 'rows', as bench validate "
                      "--json writes)");
  }
  const detail::HardwareProfile hw =
      o.hardware.empty() ? detail::parse_hardware_profile(run.at("profile"), o.recompute)
                         : detail::load_hardware_profile(o.hardware);
  std::vector<detail::ValidationRow> rows;
  try {
    rows = detail::recompute_validation(run, hw);
  } catch (const ConfigError& e) {
    throw ConfigError("--recompute " + o.recompute + ": " + e.what());
  }
  const detail::Tolerances tolerances{o.speedup_tolerance, o.step_tolerance};
  std::cout << detail::validation_table(rows, tolerances);
  std::cout << detail::advice_check_table(detail::check_advice(rows));
  if (!o.json_path.empty()) {
    // The same measurements with this build's predictions (and misses), marked as such.
    check_writable(o.json_path);
    for (size_t i = 0; i < rows.size(); ++i) {
      run["rows"][i]["predicted_seconds"] = rows[i].predicted_seconds;
      run["rows"][i]["predicted_speedup"] = rows[i].predicted_speedup;
    }
    run["misses"] = detail::validation_misses(rows, tolerances);
    run["predictions_recomputed"] =
        "the predictions were remade from these measurements and profile by a later build "
        "(tandem bench validate --recompute); the measurements are unchanged";
    write_text_atomically(o.json_path, run.dump(1) + "\n");
    fmt::print("wrote {}\n", o.json_path);
  }
  return report_misses(rows, tolerances);
}

}  // namespace

int run_validate(const ValidateOptions& o) {
  if (!o.recompute.empty()) return recompute(o);
  if (o.hardware.empty()) {
    throw ConfigError("bench validate: --hardware is required (or --recompute RUN.json)");
  }
  detail::HardwareProfile hw = detail::load_hardware_profile(o.hardware);
  if (hw.device.threads < 1) {
    throw ConfigError("bench validate: --hardware " + o.hardware +
                      " has no device.threads: validation measures CPU devices, so it needs "
                      "a profile from tandem calibrate");
  }
  // Under mpirun: R ranks of one device each against one device; rank 0 measures the latter
  // alone and reports.
  detail::World* world = detail::current_world();
  const int ranks = world != nullptr ? world->size() : 1;
  const bool reporter = world == nullptr || world->rank() == 0;
  if (ranks > 1 && hw.rank_rank.bandwidth <= 0) {
    throw ConfigError("bench validate: --hardware " + o.hardware +
                      " has no rank_rank link: under mpirun it needs a profile from `mpirun "
                      "-np " +
                      std::to_string(ranks) + " tandem calibrate`");
  }
  if (ranks == 1 && o.devices > hw.max_devices) {
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
  const int n = ranks > 1 ? 1 : o.devices;  // devices of the multi-device configurations
  for (int64_t b : batches) {
    if (b < n * ranks) {
      throw ConfigError(
          fmt::format("--batches: batch {} is smaller than {} devices", b, n * ranks));
    }
  }
  if (reporter && !o.json_path.empty()) check_writable(o.json_path);
  constexpr auto mirrored = detail::StrategyKind::mirrored;
  constexpr auto sharded = detail::ReducerKind::sharded;
  const std::vector<Kind> kinds =
      ranks > 1 ? std::vector<Kind>{{"1 device", 1, mirrored, sharded, false},
                                    {"ranks", 1, mirrored, sharded, false, ranks},
                                    {"ranks bf16", 1, mirrored, sharded, false, ranks, true},
                                    {"ranks deterministic", 1, mirrored, sharded, true, ranks}}
                : std::vector<Kind>{
                      {"1 device", 1, mirrored, sharded, false},
                      {"mirrored (sharded)", n, mirrored, sharded, false},
                      {"mirrored (allreduce)", n, mirrored, detail::ReducerKind::allreduce, false},
                      {"mirrored deterministic", n, mirrored, sharded, true},
                      {"host", n, detail::StrategyKind::host, sharded, false}};
  const auto config_name = [&](const Kind& k) {
    if (k.ranks > 1) return fmt::format("{} {}", k.ranks, k.name);
    return k.devices == 1 ? std::string(k.name) : fmt::format("{} devices {}", n, k.name);
  };

  // One device only, at rows no configuration uses: the runs each model's rate curve is
  // measured again from, interleaved with its configurations so that the machine's drift
  // over minutes (the same 1-device step measured 20-25% apart a few minutes later) is
  // common to both.
  detail::StrategyOptions one_device;
  one_device.threads_per_device = hw.device.threads;
  std::vector<int64_t> calibration_rows;
  if (o.calibration_rows != "none") {
    try {
      calibration_rows = parse_layer_widths(o.calibration_rows);  // whole numbers > 0
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--calibration-rows: ") + e.what());
    }
    std::vector<int64_t> distinct = calibration_rows;
    std::sort(distinct.begin(), distinct.end());
    if (std::unique(distinct.begin(), distinct.end()) - distinct.begin() < 2) {
      throw ConfigError(
          "--calibration-rows needs at least two different row counts (a line is fitted "
          "through them), or none");
    }
  }

  struct Measured {
    size_t model;
    int64_t batch;
    size_t kind;
    double seconds;
    std::vector<double> per_repetition;
    std::map<std::string, double> phases;
  };
  std::vector<Measured> all;
  nlohmann::json calibrations = nlohmann::json::array();
  // How much of one device's speed each keeps when all compute or stream memory at once:
  // measured again through the run (a virtual machine's second core ran at 46-98% of the
  // first's from minute to minute), one probe round per repetition round.
  const bool refresh = !calibration_rows.empty();
  std::vector<double> memory_shares, compute_shares;
  for (size_t model = 0; model < models.size(); ++model) {
    const auto& widths = models[model];
    std::vector<std::unique_ptr<detail::StepRun>> calibration;
    for (int64_t r : reporter ? calibration_rows : std::vector<int64_t>{}) {
      calibration.push_back(
          std::make_unique<detail::StepRun>(detail::dense_stack(widths), r, one_device));
    }
    uint64_t seed = 100;
    for (int64_t batch : batches) {
      // Every rank makes the multi-rank runs, in the same order (their steps are collective);
      // rank 0 alone the 1-device ones.
      std::vector<std::unique_ptr<detail::StepRun>> runs;
      for (const Kind& k : kinds) {
        if (k.ranks == 1 && !reporter) {
          runs.push_back(nullptr);
          continue;
        }
        detail::StrategyOptions so;
        so.devices = k.devices;
        so.threads_per_device = hw.device.threads;
        so.kind = k.strategy;
        so.reducer = k.reducer;
        so.deterministic = k.deterministic;
        if (k.ranks > 1) {
          so.world = world;
          so.gradient_comm = {.bf16 = k.bf16, .deterministic = k.deterministic};
        }
        runs.push_back(std::make_unique<detail::StepRun>(detail::dense_stack(widths), batch, so));
      }
      for (int rep = 0; rep < o.repeats; ++rep) {
        if (refresh && ranks == 1) {
          memory_shares.push_back(detail::concurrent_memory_share(n, 64 << 20, 1));
          compute_shares.push_back(detail::concurrent_compute_share(n, 1));
        }
        for (auto& r : calibration) r->time(o.steps, seed);
        for (auto& r : runs) {
          if (r) r->time(o.steps, seed);
        }
      }
      for (size_t i = 0; reporter && i < runs.size(); ++i) {
        all.push_back({model, batch, i, runs[i]->median_seconds(), runs[i]->seconds(),
                       runs[i]->phase_seconds()});
      }
    }
    if (!calibration.empty()) {
      nlohmann::json c = detail::refit_dense_rate(hw, widths, calibration);
      fmt::print("{}: {:.1f} GFLOP/s sustained, half_rows {:.1f} (1 device at rows {})\n",
                 fmt::join(widths, "-"), c.at("sustained_flops").get<double>() / 1e9,
                 c.at("half_rows").get<double>(), fmt::join(calibration_rows, ", "));
      calibrations.push_back(c);
    }
  }
  if (!reporter) return 0;
  if (refresh && ranks == 1) {
    hw.device.concurrent_memory_share = std::min(1.0, detail::median_of(memory_shares));
    hw.device.concurrent_compute_share = std::min(1.0, detail::median_of(compute_shares));
    hw.document["device"]["concurrent_memory_share"] = hw.device.concurrent_memory_share;
    hw.document["device"]["concurrent_compute_share"] = hw.device.concurrent_compute_share;
    fmt::print(
        "{} devices at once keep {:.2f} of one's memory bandwidth and {:.2f} of its GEMM speed "
        "(medians of {} probe rounds; ranges {:.2f}-{:.2f} and {:.2f}-{:.2f})\n",
        n, hw.device.concurrent_memory_share, hw.device.concurrent_compute_share,
        memory_shares.size(), *std::min_element(memory_shares.begin(), memory_shares.end()),
        *std::max_element(memory_shares.begin(), memory_shares.end()),
        *std::min_element(compute_shares.begin(), compute_shares.end()),
        *std::max_element(compute_shares.begin(), compute_shares.end()));
  }

  // The predictions, from the profile as the run left it; each row's speedup against its
  // model and batch's 1-device run (kinds[0]).
  std::vector<detail::ValidationRow> rows;
  nlohmann::json measured = nlohmann::json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    const Measured& m = all[i];
    const Kind& kind = kinds[m.kind];
    const auto& widths = models[m.model];
    const std::string model_name = fmt::format("{}", fmt::join(widths, "-"));
    const double base = all[i - m.kind].seconds;
    const detail::Prediction p =
        detail::predict_config(hw, {widths, m.batch, kind.devices, kind.strategy, kind.reducer,
                                    kind.deterministic, kind.ranks, kind.bf16});
    detail::ValidationRow row;
    row.model = model_name;
    row.config = config_name(kind);
    row.batch = m.batch;
    row.devices = kind.devices * kind.ranks;  // over all ranks
    row.predicted_seconds = p.step_seconds;
    row.measured_seconds = m.seconds;
    row.predicted_speedup = p.speedup;
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
                        {"measured_seconds", row.measured_seconds},
                        {"per_repetition", m.per_repetition},
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
         {{"memory_share", memory_shares}, {"compute_share", compute_shares}}},
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

}  // namespace tandem::cli
