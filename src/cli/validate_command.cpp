#include "cli/validate_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "advise/calibrate_dense.h"
#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/probes.h"
#include "advise/step_run.h"
#include "advise/validation.h"
#include "advise/weight_grad_probes.h"
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
  std::string name;
  int devices;  // 1, or the --devices count
  detail::StrategyKind strategy;
  detail::ReducerKind reducer;
  bool deterministic;
  int ranks = 1;
  bool bf16 = false;
  double bucket_mb = 0;  // 0: the default bucket size
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

// A committed run, read and checked to be one.
nlohmann::json read_run(const std::string& path) {
  const std::string text =
      read_regular_file(path, 64 * kMiB, "validation run (JSON from bench validate)");
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path, 0, std::string("not valid JSON: ") + e.what());
  }
  if (!run.is_object() || !run.contains("profile") || !run.contains("rows")) {
    throw ConfigError("--recompute " + path +
                      ": not a validation run (needs 'profile' and 'rows', as bench validate "
                      "--json writes)");
  }
  return run;
}

// The run's rows with this build's predictions, from its own profile or --hardware.
std::vector<detail::ValidationRow> recompute_rows(const nlohmann::json& run,
                                                  const std::string& path,
                                                  const ValidateOptions& o) {
  const detail::HardwareProfile hw = o.hardware.empty()
                                         ? detail::parse_hardware_profile(run.at("profile"), path)
                                         : detail::load_hardware_profile(o.hardware);
  try {
    return detail::recompute_validation(run, hw);
  } catch (const ConfigError& e) {
    throw ConfigError("--recompute " + path + ": " + e.what());
  }
}

// Several runs of the same configurations, under the majority rule.
int recompute_repeated(const ValidateOptions& o) {
  if (!o.json_path.empty()) {
    throw ConfigError("--json writes one recomputed run: give --recompute one run with it");
  }
  const detail::Tolerances tolerances{o.speedup_tolerance, o.step_tolerance};
  std::vector<std::vector<detail::ValidationRow>> runs;
  for (const std::string& path : o.recompute)
    runs.push_back(recompute_rows(read_run(path), path, o));
  const auto rows = detail::repeated_validation(runs, o.recompute, tolerances);
  std::cout << detail::repeated_validation_table(rows);
  for (size_t k = 0; k < runs.size(); ++k) {
    std::cout << o.recompute[k] << ":\n"
              << detail::advice_check_table(detail::check_advice(runs[k]));
  }
  std::cout.flush();
  const auto missed = std::count_if(
      rows.begin(), rows.end(), [](const detail::RepeatedRow& r) { return r.majority_missed(); });
  if (missed == 0) return 0;
  fmt::print(stderr,
             "tandem: validation failed: {} of {} configurations out of tolerance in more than "
             "half of the {} runs\n",
             missed, rows.size(), runs.size());
  return 1;
}

int recompute(const ValidateOptions& o) {
  if (o.recompute.size() > 1) return recompute_repeated(o);
  const std::string& path = o.recompute.front();
  nlohmann::json run = read_run(path);
  const std::vector<detail::ValidationRow> rows = recompute_rows(run, path, o);
  const detail::Tolerances tolerances{o.speedup_tolerance, o.step_tolerance};
  std::cout << detail::validation_table(rows, tolerances);
  std::cout << detail::advice_check_table(detail::check_advice(rows));
  if (!o.json_path.empty()) {
    // The same measurements with this build's predictions (and misses), marked as such.
    check_writable(o.json_path);
    for (size_t i = 0; i < rows.size(); ++i) {
      run["rows"][i]["predicted_seconds"] = rows[i].predicted_seconds;
      run["rows"][i]["predicted_speedup"] = rows[i].predicted_speedup;
      run["rows"][i]["predicted_phases"] = rows[i].predicted_phases;
      run["rows"][i]["algorithm"] = rows[i].algorithm;
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
  std::vector<double> bucket_sizes;
  if (o.bucket_mb != "none") {
    for (const std::string& text : split(o.bucket_mb, ',')) {
      size_t used = 0;
      double mb = 0;
      try {
        mb = std::stod(text, &used);
      } catch (const std::logic_error&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || !(mb > 0) || mb > 4096) {
        throw ConfigError("--bucket-mb: '" + text +
                          "' is not a size in MB between 0 and 4096 (a list: 1,25; or none)");
      }
      bucket_sizes.push_back(mb);
    }
  }
  if (reporter && !o.json_path.empty()) check_writable(o.json_path);
  constexpr auto mirrored = detail::StrategyKind::mirrored;
  constexpr auto sharded = detail::ReducerKind::sharded;
  std::vector<Kind> kinds =
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
  // Each bucket size beside the default it is compared with (the advice's choice).
  for (double mb : bucket_sizes) {
    const std::string size = fmt::format(" {:g} MB buckets", mb);
    if (ranks > 1) {
      kinds.push_back({"ranks" + size, 1, mirrored, sharded, false, ranks, false, mb});
    } else {
      kinds.push_back({"mirrored (allreduce)" + size, n, mirrored, detail::ReducerKind::allreduce,
                       false, 1, false, mb});
    }
  }
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
    std::vector<std::unique_ptr<detail::StepRun>> calibration, together;
    for (int64_t r : calibration_rows) {
      if (reporter) {
        calibration.push_back(
            std::make_unique<detail::StepRun>(detail::dense_stack(widths), r, one_device));
      }
      // Under mpirun every rank also runs the same 1-device steps at once, no exchange between
      // them: what one rank computes at while the others compute (rank 0's times; the ranks of
      // one host share its memory and caches, which a rank alone does not show).
      if (ranks > 1) {
        together.push_back(
            std::make_unique<detail::StepRun>(detail::dense_stack(widths), r, one_device));
      }
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
        if (k.bucket_mb > 0) so.bucket_bytes = static_cast<int64_t>(k.bucket_mb * (1 << 20));
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
        for (auto& r : calibration) {
          r->settle(seed);
          r->time(o.steps, seed);
        }
        for (auto& r : together) {
          world->barrier();  // every rank starts its steps together
          r->settle(seed);
          r->time(o.steps, seed);
        }
        // Each round starts one configuration later, so that none always follows the same
        // one; every rank rotates alike. (The same configuration built twice still measures
        // apart with this: docs/SCALING.md, "one configuration built twice".)
        for (size_t j = 0; j < runs.size(); ++j) {
          auto& r = runs[(j + static_cast<size_t>(rep)) % runs.size()];
          if (!r) continue;
          r->settle(seed);
          r->time(o.steps, seed);
        }
      }
      for (size_t i = 0; reporter && i < runs.size(); ++i) {
        all.push_back({model, batch, i, runs[i]->median_seconds(), runs[i]->seconds(),
                       runs[i]->phase_seconds()});
      }
    }
    if (!calibration.empty()) {
      // The model's weight-gradient GEMMs, whole and as one of the n devices' shards (what
      // weight-gradient sharding keeps of the pass), where the run has CPU devices.
      std::vector<detail::WeightGradShards> gemms;
      if (ranks == 1 && n > 1) {
        gemms = detail::weight_grad_gemm_seconds(widths, calibration_rows, {n}, hw.device.threads,
                                                 o.repeats);
      }
      nlohmann::json c = detail::refit_dense_rate(hw, widths, calibration, together, ranks, gemms);
      fmt::print("{}: {:.1f} GFLOP/s sustained, half_rows {:.1f} (1 device at rows {})\n",
                 fmt::join(widths, "-"), c.at("sustained_flops").get<double>() / 1e9,
                 c.at("half_rows").get<double>(), fmt::join(calibration_rows, ", "));
      for (const auto& timed : gemms) fmt::print("  {}\n", detail::weight_grad_shares(timed));
      if (!together.empty()) {
        std::vector<std::string> slower;
        for (size_t i = 0; i < together.size(); ++i) {
          slower.push_back(fmt::format(
              "{:.2f}x", together[i]->median_seconds() / calibration[i]->median_seconds()));
        }
        fmt::print("  with {} ranks computing at once: {} the step alone\n", ranks,
                   fmt::join(slower, ", "));
      }
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
                                    kind.deterministic, kind.ranks, kind.bf16, kind.bucket_mb});
    detail::ValidationRow row;
    row.model = model_name;
    row.config = config_name(kind);
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
