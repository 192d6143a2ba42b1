#include "advise/profile_dense_rates.h"

#include <algorithm>
#include <iterator>

#include "advise/profile_fields.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using json = nlohmann::json;

// A dense model's measured steps (dense_rates[].points): rows ascending, compute seconds > 0,
// two or more (the curve is followed between them); update seconds > 0 on all or none.
std::vector<DenseRowsSeconds> dense_points(const json& j, const std::string& where) {
  if (!j.is_array() || j.size() < 2) {
    throw ConfigError(where + " must be an array of 2 or more {rows, compute_seconds}");
  }
  std::vector<DenseRowsSeconds> out;
  const bool updates = j.front().is_object() && j.front().contains("update_seconds");
  for (const json& c : j) {
    const int64_t rows = ascending_size(c, "rows", out.empty() ? 0 : out.back().rows, where);
    if (c.contains("update_seconds") != updates) {
      throw ConfigError(where + ": 'update_seconds' must be on every entry or on none");
    }
    out.push_back({rows, positive_field(c, "compute_seconds", where),
                   updates ? positive_field(c, "update_seconds", where) : 0.0});
  }
  return out;
}

// The four timings of a steps-at-once entry (`where` names it), each > 0.
constexpr const char* kAtOnce[] = {"forward_alone", "backward_alone", "forward_shared",
                                   "backward_shared"};
// And the micro-shards' two (profiles since 2026-12-06), both or neither; and the own
// copies' three (profiles since 2026-12-07), all or none, the wait 0 or more, and their
// all-reduce's seconds (profiles since 2026-12-07, later), > 0 and no less than the wait, only
// with them.
StepsAtOnceTimes steps_at_once(const json& c, const std::string& where) {
  StepsAtOnceTimes out{positive_field(c, kAtOnce[0], where), positive_field(c, kAtOnce[1], where),
                       positive_field(c, kAtOnce[2], where), positive_field(c, kAtOnce[3], where)};
  if (c.contains("forward_micro") || c.contains("backward_micro")) {
    out.forward_micro = positive_field(c, "forward_micro", where);
    out.backward_micro = positive_field(c, "backward_micro", where);
  }
  if (c.contains("forward_own") || c.contains("backward_own") || c.contains("wait_own")) {
    out.forward_own = positive_field(c, "forward_own", where);
    out.backward_own = positive_field(c, "backward_own", where);
    if (!c.contains("wait_own")) {
      throw ConfigError(where + ": missing number 'wait_own' (with forward_own and backward_own)");
    }
    out.wait_own = non_negative_field(c, "wait_own", where, 0);
  }
  if (c.contains("exchange_own")) {
    if (!out.has_own()) {
      throw ConfigError(where + ": 'exchange_own' without forward_own, backward_own and wait_own");
    }
    out.exchange_own = positive_field(c, "exchange_own", where);
    // It cannot end before the last device posts (StepsAtOnce::own), in every pass.
    if (out.exchange_own < out.wait_own) {
      throw ConfigError(where +
                        ": 'exchange_own' is less than 'wait_own': the all-reduce from "
                        "the backward's end cannot end before the last device's backward");
    }
  }
  return out;
}

// One device count's weight-gradient GEMMs (dense_rates[].weight_grad_gemms[]): the devices
// whose shards were timed (2 or more) and points ascending in rows, every time > 0; and the
// steps at once, either as the points' four fields (every point or none) or as the array
// `steps_at_once` ascending in rows, not both.
WeightGradShards weight_grad_shards(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("devices") || !j.at("devices").is_number_integer() ||
      j.at("devices").get<int64_t>() < 2 || j.at("devices").get<int64_t>() > 1 << 20) {
    throw ConfigError(where + " needs 'devices', a whole number >= 2");
  }
  if (!j.contains("points") || !j.at("points").is_array() || j.at("points").empty()) {
    throw ConfigError(where +
                      " needs 'points', an array of {rows, whole, shard, whole_cold, "
                      "shard_cold}");
  }
  WeightGradShards out{j.at("devices").get<int>(), {}};
  const std::string points = where + ": points";
  for (const json& c : j.at("points")) {
    const int64_t rows =
        ascending_size(c, "rows", out.points.empty() ? 0 : out.points.back().rows, points);
    WeightGradGemmSeconds p{
        rows, positive_field(c, "whole", points), positive_field(c, "shard", points),
        positive_field(c, "whole_cold", points), positive_field(c, "shard_cold", points)};
    // As a step runs them: all three or none (profiles before 2026-12-05), alike in every point;
    // no input gradients (a model of one Dense layer) take no time.
    const bool step =
        c.contains("whole_step") || c.contains("shard_step") || c.contains("input_step");
    if (step) {
      p.whole_step = positive_field(c, "whole_step", points);
      p.shard_step = positive_field(c, "shard_step", points);
      if (!c.contains("input_step")) {
        throw ConfigError(points +
                          ": missing number 'input_step' (with whole_step and shard_step)");
      }
      p.input_step = non_negative_field(c, "input_step", points, 0);
    }
    if (!out.points.empty() && step != out.points.front().timed_as_step()) {
      throw ConfigError(points + ": point at " + std::to_string(rows) +
                        " rows: whole_step, shard_step and input_step in every point or none");
    }
    // The steps at once, as profiles of 2026-12-05 hold them: all four or none, alike in every
    // point; their medians came later, in the array only.
    for (const char* later : {"median", "forward_micro", "backward_micro", "forward_own",
                              "backward_own", "wait_own", "exchange_own"}) {
      if (c.contains(later)) {
        throw ConfigError(points + ": point at " + std::to_string(rows) + " rows: '" + later +
                          "' belongs in a steps_at_once entry");
      }
    }
    const bool once = std::any_of(std::begin(kAtOnce), std::end(kAtOnce),
                                  [&](const char* k) { return c.contains(k); });
    const std::string point = points + ": point at " + std::to_string(rows) + " rows";
    const StepsAtOnceSeconds at_once =
        once ? StepsAtOnceSeconds{rows, steps_at_once(c, point)} : StepsAtOnceSeconds{};
    if (!out.points.empty() && once != !out.at_once.empty()) {
      throw ConfigError(point +
                        ": forward_alone, backward_alone, forward_shared and backward_shared in "
                        "every point or none");
    }
    if (once) out.at_once.push_back(at_once);
    out.points.push_back(p);
  }
  if (j.contains("steps_at_once")) {
    const std::string at = where + ": steps_at_once";
    if (!out.at_once.empty()) {
      throw ConfigError(at + " with the same timings in the points: one or the other");
    }
    if (!j.at("steps_at_once").is_array() || j.at("steps_at_once").empty()) {
      throw ConfigError(at +
                        " must be an array of {rows, forward_alone, backward_alone, "
                        "forward_shared, backward_shared} (and, since 2026-12-06, "
                        "forward_micro, backward_micro; since 2026-12-07, forward_own, "
                        "backward_own, wait_own, and later exchange_own)");
    }
    for (const json& c : j.at("steps_at_once")) {
      const int64_t rows =
          ascending_size(c, "rows", out.at_once.empty() ? 0 : out.at_once.back().rows, at);
      const std::string entry = at + ": entry at " + std::to_string(rows) + " rows";
      out.at_once.push_back({rows, steps_at_once(c, entry)});
      // The rounds' median beside their best (profiles since 2026-12-05, morning): all four,
      // and the later timings as the entry has them.
      if (c.contains("median")) {
        if (!c.at("median").is_object()) {
          throw ConfigError(entry +
                            ": 'median' must be an object of forward_alone, backward_alone, "
                            "forward_shared and backward_shared (and, since 2026-12-06, "
                            "forward_micro and backward_micro; since 2026-12-07, forward_own, "
                            "backward_own and wait_own, and later exchange_own)");
        }
        out.at_once.back().median = steps_at_once(c.at("median"), entry + ": median");
      }
      if (out.at_once.back().has_medians() != out.at_once.front().has_medians()) {
        throw ConfigError(entry + ": 'median' in every entry or none");
      }
      const StepsAtOnceSeconds& a = out.at_once.back();
      if (a.best.has_micro() != out.at_once.front().best.has_micro() ||
          (a.has_medians() && a.median.has_micro() != a.best.has_micro())) {
        throw ConfigError(entry +
                          ": forward_micro and backward_micro in every entry and its median, or "
                          "in none");
      }
      if (a.best.has_own() != out.at_once.front().best.has_own() ||
          (a.has_medians() && a.median.has_own() != a.best.has_own())) {
        throw ConfigError(entry +
                          ": forward_own, backward_own and wait_own in every entry and its "
                          "median, or in none");
      }
      if (a.best.has_exchange() != out.at_once.front().best.has_exchange() ||
          (a.has_medians() && a.median.has_exchange() != a.best.has_exchange())) {
        throw ConfigError(entry + ": exchange_own in every entry and its median, or in none");
      }
    }
  }
  // Where the steps at once ran (profiles since 2026-12-07, evening): with them only.
  if (j.contains("window")) {
    if (out.at_once.empty()) {
      throw ConfigError(where + ": 'window' without steps_at_once (where they ran)");
    }
    out.at_once_window = read_probe_window(j.at("window"), where + ": steps_at_once");
  }
  // The micro-shards per device their timings took: with them, and only with them.
  const bool micro = !out.at_once.empty() && out.at_once.front().best.has_micro();
  if (micro != j.contains("micro_shards")) {
    throw ConfigError(where + (micro ? " needs 'micro_shards', a whole number from 1 to 64, with "
                                       "the steps at once's forward_micro and backward_micro"
                                     : ": 'micro_shards' without forward_micro and "
                                       "backward_micro in its steps_at_once"));
  }
  if (micro) {
    const json& m = j.at("micro_shards");
    if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > 64) {
      throw ConfigError(where + ": 'micro_shards' must be a whole number from 1 to 64");
    }
    out.micro_shards = m.get<int>();
  }
  return out;
}

// An array of them, ascending in devices; one object (the first profiles that had them,
// 2026-12-03) is an array of one.
std::vector<WeightGradShards> weight_grad_gemms(const json& j, const std::string& where) {
  if (j.is_object()) return {weight_grad_shards(j, where)};
  if (!j.is_array() || j.empty()) {
    throw ConfigError(where + " must be an array of {devices, points}");
  }
  std::vector<WeightGradShards> out;
  for (size_t i = 0; i < j.size(); ++i) {
    out.push_back(weight_grad_shards(j[i], where + "[" + std::to_string(i) + "]"));
    if (out.size() > 1 && out.back().devices <= out[out.size() - 2].devices) {
      throw ConfigError(where + " must ascend in 'devices', got " +
                        std::to_string(out.back().devices) + " after " +
                        std::to_string(out[out.size() - 2].devices));
    }
  }
  return out;
}

}  // namespace

std::vector<DenseRateCurve> dense_rates(const json& j, const std::string& where) {
  std::vector<DenseRateCurve> out;
  if (!j.is_array()) throw ConfigError(where + " must be an array");
  for (const json& c : j) {
    if (!c.is_object() || !c.contains("widths") || !c.at("widths").is_array() ||
        c.at("widths").size() < 2) {
      throw ConfigError(where + ": each entry needs 'widths' (input, ..., output)");
    }
    DenseRateCurve curve;
    for (const json& w : c.at("widths")) {
      if (!w.is_number_integer() || w.get<int64_t>() < 1) {
        throw ConfigError(where + ": widths must be whole numbers >= 1, got " + w.dump());
      }
      curve.widths.push_back(w.get<int64_t>());
    }
    curve.sustained_flops = positive_field(c, "sustained_flops", where);
    curve.half_rows = non_negative_field(c, "half_rows", where, 0);
    if (c.contains("points")) curve.points = dense_points(c.at("points"), where + ": points");
    if (c.contains("ranks_points")) {
      curve.ranks_points = dense_points(c.at("ranks_points"), where + ": ranks_points");
      if (!c.contains("ranks") || !c.at("ranks").is_number_integer() ||
          c.at("ranks").get<int64_t>() < 2 || c.at("ranks").get<int64_t>() > 1 << 20) {
        throw ConfigError(where + ": ranks_points needs 'ranks', a whole number >= 2");
      }
      curve.ranks = c.at("ranks").get<int>();
    }
    if (c.contains("weight_grad_gemms")) {
      curve.weight_grad_gemms =
          weight_grad_gemms(c.at("weight_grad_gemms"), where + ": weight_grad_gemms");
    }
    out.push_back(curve);
  }
  return out;
}

}  // namespace tandem::detail
