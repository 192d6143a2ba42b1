#include "advise/validation.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

bool speedup_missed(const ValidationRow& r, const Tolerances& t) {
  return r.devices > 1 && !(std::abs(r.speedup_error()) <= t.speedup);
}

bool step_missed(const ValidationRow& r, const Tolerances& t) {
  return !(std::abs(r.step_error()) <= t.step);
}

std::vector<int64_t> widths_of(const std::string& model) {
  std::vector<int64_t> widths;
  size_t at = 0;
  while (at <= model.size()) {
    const size_t dash = std::min(model.find('-', at), model.size());
    widths.push_back(std::stoll(model.substr(at, dash - at)));
    at = dash + 1;
  }
  return widths;
}

}  // namespace

Prediction predict_config(const HardwareProfile& hw, const ValidationConfig& c) {
  Scenario s;
  s.model = ModelCost::dense(c.widths);
  s.batch = c.batch;
  s.strategy = c.strategy;
  s.reducer = c.reducer;
  s.deterministic = c.deterministic;
  s.ranks = c.ranks;
  s.bf16 = c.bf16;
  if (c.bucket_mb > 0) s.bucket_bytes = static_cast<int64_t>(c.bucket_mb * (1 << 20));
  return predict_all(hw, s, {c.devices}).front();
}

std::vector<ValidationRow> recompute_validation(const nlohmann::json& run,
                                                const HardwareProfile& hw) {
  std::vector<ValidationRow> rows;
  try {
    for (const auto& r : run.at("rows")) {
      ValidationConfig c;
      c.widths = widths_of(r.at("model").get<std::string>());
      c.batch = r.at("batch").get<int64_t>();
      c.devices = r.at("devices").get<int>();
      c.strategy = parse_strategy(r.at("strategy").get<std::string>());
      c.reducer = parse_reducer(r.at("reducer").get<std::string>());
      c.deterministic = r.at("deterministic").get<bool>();
      c.ranks = r.value("ranks", 1);
      c.bf16 = r.value("bf16", false);
      c.bucket_mb = r.value("bucket_mb", 0.0);
      const Prediction p = predict_config(hw, c);
      ValidationRow row;
      row.model = r.at("model").get<std::string>();
      row.config = r.at("config").get<std::string>();
      row.batch = c.batch;
      row.devices = c.devices * c.ranks;
      row.predicted_seconds = p.step_seconds;
      row.predicted_speedup = p.speedup;
      row.predicted_phases = p.phases;
      row.algorithm = p.algorithm;
      row.measured_seconds = r.at("measured_seconds").get<double>();
      row.measured_speedup = r.at("measured_speedup").get<double>();
      if (r.contains("per_repetition")) {
        row.measured_repetitions = r.at("per_repetition").get<std::vector<double>>();
      }
      rows.push_back(row);
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(std::string("validation run: ") + e.what());
  } catch (const std::logic_error& e) {  // std::stoll on a model name that is not widths
    throw ConfigError(std::string("validation run: a model is not a list of widths: ") + e.what());
  }
  return rows;
}

bool validation_missed(const ValidationRow& r, const Tolerances& t) {
  return speedup_missed(r, t) || step_missed(r, t);
}

std::vector<std::string> validation_misses(const std::vector<ValidationRow>& rows,
                                           const Tolerances& t) {
  std::vector<std::string> out;
  for (const ValidationRow& r : rows) {
    const std::string what = fmt::format("{}, batch {}, {}", r.model, r.batch, r.config);
    if (speedup_missed(r, t)) {
      out.push_back(fmt::format(
          "{}: speedup predicted {:.2f}x, measured {:.2f}x ({:+.1f}%, "
          "tolerance {:.0f}%)",
          what, r.predicted_speedup, r.measured_speedup, 100 * r.speedup_error(), 100 * t.speedup));
    }
    if (step_missed(r, t)) {
      out.push_back(
          fmt::format("{}: step predicted {:.2f} ms, measured {:.2f} ms ({:+.1f}%, "
                      "tolerance {:.0f}%)",
                      what, 1e3 * r.predicted_seconds, 1e3 * r.measured_seconds,
                      100 * r.step_error(), 100 * t.step));
    }
  }
  return out;
}

std::string validation_table(const std::vector<ValidationRow>& rows, const Tolerances& t) {
  std::string out =
      fmt::format("{:<38} {:>6} {:<32} {:>10} {:>10} {:>7} {:>8} {:>8} {:>7}\n", "model", "batch",
                  "config", "pred ms", "meas ms", "error", "pred x", "meas x", "error");
  for (const ValidationRow& r : rows) {
    const bool miss = validation_missed(r, t);
    out +=
        fmt::format("{:<38} {:>6} {:<32} {:>10.2f} {:>10.2f} {:>+6.1f}% {:>7.2f}x {:>7.2f}x ",
                    r.model, r.batch, r.config, 1e3 * r.predicted_seconds, 1e3 * r.measured_seconds,
                    100 * r.step_error(), r.predicted_speedup, r.measured_speedup);
    out += r.devices > 1 ? fmt::format("{:>+6.1f}%", 100 * r.speedup_error())
                         : fmt::format("{:>7}", "-");
    out += miss ? "  MISS\n" : "\n";
  }
  return out;
}

std::vector<RepeatedRow> repeated_validation(const std::vector<std::vector<ValidationRow>>& runs,
                                             const std::vector<std::string>& names,
                                             const Tolerances& t) {
  std::vector<RepeatedRow> out;
  if (runs.empty()) return out;
  const auto key = [](const ValidationRow& r) {
    return fmt::format("{}, batch {}, {}", r.model, r.batch, r.config);
  };
  for (const ValidationRow& r : runs.front()) {
    RepeatedRow row;
    row.model = r.model;
    row.config = r.config;
    row.batch = r.batch;
    out.push_back(row);
  }
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].size() != out.size()) {
      throw ConfigError(
          fmt::format("{}: {} configurations, but {} has {}: repeated runs must "
                      "measure the same configurations",
                      names.at(k), runs[k].size(), names.front(), out.size()));
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const ValidationRow& r = runs[k][i];
      if (key(r) != key(runs.front()[i])) {
        throw ConfigError(fmt::format("{}: configuration {} is '{}' where {} has '{}'", names.at(k),
                                      i + 1, key(r), names.front(), key(runs.front()[i])));
      }
      RepeatedRow& row = out[i];
      ++row.runs;
      row.missed += validation_missed(r, t);
      row.step_errors.push_back(r.step_error());
      if (r.devices > 1) row.speedup_errors.push_back(r.speedup_error());
    }
  }
  return out;
}

std::string repeated_validation_table(const std::vector<RepeatedRow>& rows) {
  const auto range = [](const std::vector<double>& e) {
    if (e.empty()) return std::string("-");
    const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
    return fmt::format("{:+.0f}% to {:+.0f}%", 100 * *lo, 100 * *hi);
  };
  std::string out = fmt::format("{:<38} {:>6} {:<38} {:>8} {:>18} {:>18}\n", "model", "batch",
                                "config", "missed", "step error", "speedup error");
  int majority = 0;
  for (const RepeatedRow& r : rows) {
    majority += r.majority_missed();
    out += fmt::format("{:<38} {:>6} {:<38} {:>3} of {:<2} {:>18} {:>18}{}\n", r.model, r.batch,
                       r.config, r.missed, r.runs, range(r.step_errors), range(r.speedup_errors),
                       r.majority_missed() ? "  MISS" : "");
  }
  out += fmt::format("{} of {} configurations out of tolerance in more than half of the {} runs\n",
                     majority, rows.size(), rows.empty() ? 0 : rows.front().runs);
  return out;
}

const char* advised_choice_name(AdvisedChoice choice) {
  switch (choice) {
    case AdvisedChoice::bf16_over_float32:
      return "bf16 gradients over float32";
    case AdvisedChoice::mirrored_over_host:
      return "mirrored over host";
    case AdvisedChoice::bucket_size_over_default:
      return "a bucket size over the default";
  }
  return "?";
}

namespace {

constexpr AdvisedChoice kChoices[] = {AdvisedChoice::bf16_over_float32,
                                      AdvisedChoice::mirrored_over_host,
                                      AdvisedChoice::bucket_size_over_default};

// "2 ranks 1 MB buckets" -> "2 ranks"; "" when `config` names no bucket size.
std::string without_bucket_size(const std::string& config) {
  const std::string tail = " MB buckets";
  if (config.size() <= tail.size() ||
      config.compare(config.size() - tail.size(), tail.size(), tail) != 0) {
    return "";
  }
  const size_t space = config.rfind(' ', config.size() - tail.size() - 1);
  return space == std::string::npos ? "" : config.substr(0, space);
}

// The configuration a choice's advised one is compared with, or "" when `config` is not one.
std::string other_config(AdvisedChoice choice, const std::string& config) {
  const auto ends_with = [&](const std::string& tail) {
    return config.size() >= tail.size() &&
           config.compare(config.size() - tail.size(), tail.size(), tail) == 0;
  };
  switch (choice) {
    case AdvisedChoice::bf16_over_float32:
      return ends_with(" ranks bf16") ? config.substr(0, config.size() - 5) : "";
    case AdvisedChoice::mirrored_over_host: {
      const std::string tail = " mirrored (sharded)";
      return ends_with(tail) ? config.substr(0, config.size() - tail.size()) + " host" : "";
    }
    case AdvisedChoice::bucket_size_over_default:
      return without_bucket_size(config);
  }
  return "";
}

bool apart(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return false;
  const auto [a_lo, a_hi] = std::minmax_element(a.begin(), a.end());
  const auto [b_lo, b_hi] = std::minmax_element(b.begin(), b.end());
  return *a_hi < *b_lo || *b_hi < *a_lo;
}

}  // namespace

std::vector<AdviceCheck> check_advice(const std::vector<ValidationRow>& rows) {
  std::vector<AdviceCheck> out;
  for (const AdvisedChoice choice : kChoices) {
    for (const ValidationRow& advised : rows) {
      const std::string other = other_config(choice, advised.config);
      if (other.empty()) continue;
      const auto it = std::find_if(rows.begin(), rows.end(), [&](const ValidationRow& r) {
        return r.model == advised.model && r.batch == advised.batch && r.config == other;
      });
      if (it == rows.end()) continue;
      AdviceCheck c;
      c.choice = choice;
      c.model = advised.model;
      c.batch = advised.batch;
      c.config = advised.config;
      c.predicted_ratio = advised.predicted_seconds / it->predicted_seconds;
      c.measured_ratio = advised.measured_seconds / it->measured_seconds;
      c.separated = apart(advised.measured_repetitions, it->measured_repetitions);
      out.push_back(c);
    }
  }
  // The run's own control: pairs the model predicts equal are one configuration built
  // twice, and how far apart they measured is how far apart two instances of anything may
  // measure (memory placement differs between them; the repetitions of each do not see
  // it). A pair no further apart than that does not separate.
  double control = 0;
  for (const AdviceCheck& c : out) {
    if (c.predicted_equal()) control = std::max(control, std::abs(std::log(c.measured_ratio)));
  }
  for (AdviceCheck& c : out) {
    if (!c.predicted_equal() && c.separated && std::abs(std::log(c.measured_ratio)) <= control) {
      c.separated = false;
      c.within_control = true;
    }
  }
  return out;
}

std::string advice_check_table(const std::vector<AdviceCheck>& checks) {
  std::string out;
  for (const AdvisedChoice choice : kChoices) {
    int pairs = 0, advised = 0, equal = 0, separated = 0, equal_separated = 0, contradicted = 0;
    int within_control = 0;
    double control = 0;
    std::string lines;
    for (const AdviceCheck& c : checks) {
      if (c.choice != choice) continue;
      ++pairs;
      advised += c.predicted_ratio < 1;
      equal += c.predicted_equal();
      separated += c.separated && !c.predicted_equal();
      equal_separated += c.separated && c.predicted_equal();
      within_control += c.within_control;
      if (c.predicted_equal()) control = std::max(control, std::abs(c.measured_ratio - 1));
      if (c.contradicted()) {
        ++contradicted;
        lines += fmt::format(
            "    contradicted: {}, batch {}, {}: predicted {:.2f}x the other's step, measured "
            "{:.2f}x, every repetition apart\n",
            c.model, c.batch, c.config, c.predicted_ratio, c.measured_ratio);
      }
    }
    if (pairs == 0) continue;
    out += fmt::format(
        "advice {}: {} pairs, advised (predicted faster) in {}; the runs separate in {}, of "
        "which {} contradict{} the prediction\n",
        advised_choice_name(choice), pairs - equal, advised, separated, contradicted,
        contradicted == 1 ? "s" : "");
    if (equal > 0) {
      // The same configuration twice, as far as the model sees: how often the runs
      // separate by chance.
      out += fmt::format(
          "    and {} pairs the model predicts equal (the same buckets): the runs separate in "
          "{}, up to {:.0f}% apart\n",
          equal, equal_separated, 100 * control);
    }
    if (within_control > 0) {
      out += fmt::format(
          "    {} pair{} whose repetitions separate {} not counted: no further apart than the "
          "same configuration built twice\n",
          within_control, within_control == 1 ? "" : "s", within_control == 1 ? "is" : "are");
    }
    out += lines;
  }
  return out;
}

}  // namespace tandem::detail
