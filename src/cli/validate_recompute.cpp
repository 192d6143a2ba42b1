#include "cli/validate_recompute.h"

#include <fmt/core.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "advise/hardware_profile.h"
#include "cli/atomic_write.h"
#include "core/input_file.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

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

}  // namespace

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

int recompute_validation_runs(const ValidateOptions& o) {
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

}  // namespace tandem::cli
