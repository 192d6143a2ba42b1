#include "advise/calibrate_dense.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "advise/steps_at_once.h"
#include "advise/weight_grad_probes.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

std::vector<DenseRowsSeconds> rows_points(const std::vector<double>& rows,
                                          const std::vector<double>& compute,
                                          const std::vector<double>& updates) {
  struct Sums {
    double compute = 0, update = 0;
    int count = 0;
  };
  std::map<int64_t, Sums> by_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    Sums& sums = by_rows[static_cast<int64_t>(rows[i])];
    sums.compute += compute[i];
    sums.update += updates[i];
    ++sums.count;
  }
  std::vector<DenseRowsSeconds> points;
  for (const auto& [r, sums] : by_rows) {
    points.push_back({r, sums.compute / sums.count, sums.update / sums.count});
  }
  return points;
}

// As dense_rates[].points (and ranks_points) hold them.
json points_json(const std::vector<DenseRowsSeconds>& points) {
  json out = json::array();
  for (const DenseRowsSeconds& p : points) {
    json point = {{"rows", p.rows}, {"compute_seconds", p.compute_seconds}};
    if (p.update_seconds > 0) point["update_seconds"] = p.update_seconds;
    out.push_back(point);
  }
  return out;
}

// A steps_at_once entry's timings, as dense_rates[].weight_grad_gemms[].steps_at_once holds
// them (and their median).
json times_json(const StepsAtOnceTimes& t) {
  json out = {{"forward_alone", t.forward_alone},
              {"backward_alone", t.backward_alone},
              {"forward_shared", t.forward_shared},
              {"backward_shared", t.backward_shared}};
  if (t.has_micro()) {
    out["forward_micro"] = t.forward_micro;
    out["backward_micro"] = t.backward_micro;
  }
  if (t.has_own()) {
    out["forward_own"] = t.forward_own;
    out["backward_own"] = t.backward_own;
    out["wait_own"] = t.wait_own;
    if (t.has_exchange()) out["exchange_own"] = t.exchange_own;
  }
  return out;
}

// As dense_rates[].weight_grad_gemms holds them.
json weight_grad_gemms_json(const std::vector<WeightGradShards>& timed) {
  json out = json::array();
  for (const WeightGradShards& w : timed) {
    json points = json::array();
    for (const WeightGradGemmSeconds& p : w.points) {
      json point = {{"rows", p.rows},
                    {"whole", p.whole},
                    {"shard", p.shard},
                    {"whole_cold", p.whole_cold},
                    {"shard_cold", p.shard_cold}};
      if (p.timed_as_step()) {
        point["whole_step"] = p.whole_step;
        point["shard_step"] = p.shard_step;
        point["input_step"] = p.input_step;
      }
      points.push_back(point);
    }
    out.push_back({{"devices", w.devices}, {"points", points}});
    if (w.micro_shards > 0) out.back()["micro_shards"] = w.micro_shards;
    for (const StepsAtOnceSeconds& a : w.at_once) {
      json entry = times_json(a.best);
      entry["rows"] = a.rows;
      if (a.has_medians()) entry["median"] = times_json(a.median);
      out.back()["steps_at_once"].push_back(entry);
    }
    if (w.at_once_window.recorded()) out.back()["window"] = probe_window_json(w.at_once_window);
  }
  return out;
}

// The rate line through 1-device runs of one dense model at several row counts; an error
// names the command and its option for the row counts.
DenseCurve fit_dense_curve(const std::vector<int64_t>& widths,
                           const std::vector<std::unique_ptr<StepRun>>& runs, std::ostream* log,
                           const char* command, const char* rows_option) {
  DenseCurve c{ModelCost::of(runs.front()->model()), {}, {}, {}};
  std::vector<double> rows, compute;
  const std::string name = fmt::format("{}", fmt::join(widths, "-"));
  for (const auto& run : runs) {
    // The rows gathered into the batch are the cost model's input phase, costed apart. Each
    // repetition's step less its own update and gathering, and the median of those: a hiccup
    // in one repetition's update (0.34 ms against 0.08 in the others, once, on the Zen 4 of
    // 2026-12-04) stays out, where the mean over all of them took it into every repetition.
    const std::vector<double> updates = run->phase_per_step_each(Phase::optimizer),
                              gathers = run->phase_per_step_each(Phase::data);
    std::vector<double> computes;
    for (size_t i = 0; i < run->seconds().size(); ++i) {
      computes.push_back(run->seconds()[i] - updates.at(i) - gathers.at(i));
    }
    const double step = run->median_seconds(), update = median_of(updates),
                 data = median_of(gathers), computed = median_of(computes);
    if (!(computed > 0)) {
      throw Error(fmt::format(
          "{}: the 1-device step of {} at {} rows less its update and the batch's gathering "
          "is not positive ({:.3f} ms less {:.3f} and {:.3f} ms in most repetitions): the "
          "machine was disturbed while it measured; run again, or with more --steps",
          command, name, run->rows(), step * 1e3, update * 1e3, data * 1e3));
    }
    rows.push_back(static_cast<double>(run->rows()));
    c.steps.push_back(step);
    c.updates.push_back(update);
    compute.push_back(computed);
    c.steps_json.push_back({{"rows", run->rows()},
                            {"step_seconds", step},
                            {"optimizer_seconds", update},
                            {"data_seconds", data},
                            {"per_repetition", run->seconds()},
                            {"optimizer_per_repetition", updates},
                            {"data_per_repetition", gathers},
                            {"compute_seconds", computed}});
    if (log) {
      *log << fmt::format("dense {} step, {} rows: {:.3f} ms (update {:.3f} ms)\n", name,
                          run->rows(), step * 1e3, update * 1e3);
    }
  }
  c.rate = dense_rate_from_steps(c.cost.step_flops(1), rows, compute);
  c.points = rows_points(rows, compute, c.updates);
  if (!(c.rate.slope > 0)) {
    std::string at;
    for (const auto& run : runs) at += (at.empty() ? "" : ", ") + std::to_string(run->rows());
    throw Error(fmt::format(
        "{}: the 1-device step of {} did not grow with the rows ({} at {} rows): the "
        "measurements are too noisy or the model too small; use row counts further apart "
        "({}), more --steps, or a larger model",
        command, name, format_list(compute, 1e3, " ms"), at, rows_option));
  }
  return c;
}

}  // namespace

std::string format_list(const std::vector<double>& values, double scale, const char* unit) {
  std::string out;
  for (double x : values)
    out += (out.empty() ? "" : ", ") + fmt::format("{:.2f}{}", x * scale, unit);
  return out;
}

std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  return {slope, my - slope * mx};
}

DenseRate dense_rate_from_steps(double flops_per_sample, const std::vector<double>& rows,
                                const std::vector<double>& compute_seconds) {
  DenseRate d;
  std::tie(d.slope, d.intercept) = fit_line(rows, compute_seconds);
  if (!(d.slope > 0)) return d;
  d.sustained_flops = flops_per_sample / d.slope;
  d.half_rows = std::max(0.0, d.intercept / d.slope);
  return d;
}

DenseCurve measure_dense(const std::vector<int64_t>& widths, const CalibrationPlan& plan,
                         const StrategyOptions& one_device, uint64_t& seed, std::ostream& log) {
  std::vector<std::unique_ptr<StepRun>> runs;
  for (int64_t r : plan.rows) {
    runs.push_back(std::make_unique<StepRun>(dense_stack(widths), r, one_device));
  }
  for (int rep = 0; rep < plan.repeats; ++rep) {
    for (auto& run : runs) {
      run->settle(seed);
      run->time(plan.steps, seed);
    }
  }
  DenseCurve c = fit_dense_curve(widths, runs, &log, "calibrate", "--rows");
  runs.clear();  // their models and batches freed before the GEMMs' buffers are made
  c.weight_grad_gemms =
      weight_grad_gemm_seconds(widths, plan.rows, shard_device_counts(plan.max_devices),
                               plan.threads_per_device, plan.repeats);
  for (const WeightGradShards& w : c.weight_grad_gemms) {
    log << fmt::format("dense {}: {}\n", fmt::join(widths, "-"), weight_grad_shares(w));
  }
  return c;
}

json dense_rate_entry(const std::vector<int64_t>& widths, double sustained, double half_rows,
                      const DenseCurve& c) {
  json entry = {{"widths", widths},
                {"sustained_flops", sustained},
                {"half_rows", half_rows},
                {"points", points_json(c.points)}};
  if (!c.weight_grad_gemms.empty()) {
    entry["weight_grad_gemms"] = weight_grad_gemms_json(c.weight_grad_gemms);
  }
  return entry;
}

std::string weight_grad_gemms_source(const CalibrationPlan& plan) {
  return fmt::format(
      "Measured: the model's weight-gradient GEMMs on one device of {} thread(s) at {} rows, "
      "best of {}: every kernel's whole gradient, and device 0's shards of N devices for N = "
      "{} (1/N of each kernel's input rows, one GEMM per replica's rows, the first writing, the "
      "others accumulating), each right after the same pass, with the caches emptied first and "
      "as a step runs them (after the update and forward's read of every parameter, the input "
      "gradients interleaved, a shard's update after its GEMMs); and the model's forward and "
      "backward GEMMs as device 0 alone runs a step and as the N devices at once run the sharded "
      "reducer's over one shared parameter buffer, and as the N devices at once (N a power of "
      "two) run deterministic mode's micro-shards over it (each device's update of its 1/N of "
      "the parameters from every device's gradients summed there, then 4/N micro-shards, at "
      "least 1, each a forward and whole backward into its own gradient buffer, copied aside, "
      "the copies summed back into it; the sums and copies untimed; seconds per micro-shard), "
      "and as the N devices at once run a step each over its own copy of the parameters (the "
      "last step's update of the whole copy from the gradient buffer untimed, forward, "
      "a whole backward, the all-reduce of the gradients as one bucket; wait_own: the devices' "
      "mean of how long after their own backward the last device's ended; exchange_own: the "
      "devices' mean from their backward's end to their all-reduce's; the mean of {} passes), "
      "each after an untimed step of its kind (the best of the rounds, and their median); the "
      "steps at once of each round's row count between two hand-offs of the devices' cores, "
      "timed again where they were apart (window_check.h; where they ran: each entry's window)",
      plan.threads_per_device, fmt::join(plan.rows, ", "), plan.repeats,
      fmt::join(shard_device_counts(plan.max_devices), ", "), StepsAtOnce::kOwnTimedPasses);
}

json refit_dense_rate(HardwareProfile& hw, const std::vector<int64_t>& widths,
                      const std::vector<std::unique_ptr<StepRun>>& runs,
                      const std::vector<std::unique_ptr<StepRun>>& together, int ranks,
                      const std::vector<WeightGradShards>& weight_grad_gemms) {
  const DenseCurve c =
      fit_dense_curve(widths, runs, nullptr, "bench validate", "--calibration-rows");
  auto& curves = hw.device.dense_rates;
  DenseRateCurve measured{widths, c.rate.sustained_flops, c.rate.half_rows, c.points};
  // The weight-gradient GEMMs the profile had for the model, those measured now replacing the
  // same device count's.
  for (const DenseRateCurve& k : curves) {
    if (k.widths == widths) measured.weight_grad_gemms = k.weight_grad_gemms;
  }
  for (const WeightGradShards& w : weight_grad_gemms) {
    auto& timed = measured.weight_grad_gemms;
    std::erase_if(timed, [&](const WeightGradShards& t) { return t.devices == w.devices; });
    timed.insert(std::find_if(timed.begin(), timed.end(),
                              [&](const WeightGradShards& t) { return t.devices > w.devices; }),
                 w);
  }
  std::erase_if(curves, [&](const DenseRateCurve& k) { return k.widths == widths; });
  json together_steps;
  if (!together.empty()) {
    const DenseCurve t =
        fit_dense_curve(widths, together, nullptr, "bench validate", "--calibration-rows");
    measured.ranks_points = t.points;
    measured.ranks = ranks;
    together_steps = t.steps_json;
  }
  curves.push_back(measured);
  // The document follows the parsed curves.
  json& document = hw.document["device"]["dense_rates"];
  document = json::array();
  for (const DenseRateCurve& k : curves) {
    json entry = {
        {"widths", k.widths}, {"sustained_flops", k.sustained_flops}, {"half_rows", k.half_rows}};
    if (!k.points.empty()) entry["points"] = points_json(k.points);
    if (!k.ranks_points.empty()) {
      entry["ranks_points"] = points_json(k.ranks_points);
      entry["ranks"] = k.ranks;
    }
    if (!k.weight_grad_gemms.empty()) {
      entry["weight_grad_gemms"] = weight_grad_gemms_json(k.weight_grad_gemms);
    }
    document.push_back(entry);
  }
  json entry = document.back();
  entry["steps"] = c.steps_json;
  if (!together.empty()) entry["steps_ranks_at_once"] = together_steps;
  entry["slope_seconds_per_row"] = c.rate.slope;
  entry["intercept_seconds"] = c.rate.intercept;
  return entry;
}

std::string weight_grad_shares(const WeightGradShards& timed) {
  std::string out;
  const bool step = !timed.points.empty() && timed.points.front().timed_as_step();
  for (const WeightGradGemmSeconds& p : timed.points) {
    out += fmt::format("{}{} rows {:.2f}/{:.2f}", out.empty() ? "" : ", ", p.rows,
                       p.shard / p.whole, p.shard_cold / p.whole_cold);
    if (step) {
      out += fmt::format("/{:.2f} saves {:.2f}", p.shard_step / p.whole_step, p.step_saved_share());
    }
  }
  std::string once, micro, own;
  for (const StepsAtOnceSeconds& a : timed.at_once) {
    once += fmt::format("{}{} rows {:.2f}", once.empty() ? "" : ", ", a.rows,
                        a.modelled_shared_over_alone());
    if (a.best.has_micro()) {
      micro += fmt::format("{}{} rows {:.2f}", micro.empty() ? "" : ", ", a.rows,
                           a.modelled_micro_over_alone());
    }
    if (a.best.has_own()) {
      const StepsAtOnceTimes& t = a.has_medians() ? a.median : a.best;
      own += fmt::format("{}{} rows {:.2f} wait {:.1f} us", own.empty() ? "" : ", ", a.rows,
                         t.own_over_alone(), t.wait_own * 1e6);
      if (t.has_exchange()) own += fmt::format(" all-reduce {:.1f} us", t.exchange_own * 1e6);
    }
  }
  return fmt::format(
      "weight-gradient shards of 1 of {} devices over the whole GEMMs (warm/caches emptied{}): "
      "{}{}{}{}{}",
      timed.devices, step ? "/as a step runs them; the share of the backward GEMMs saved" : "", out,
      once.empty() ? ""
                   : "; the sharded reducer's forward and backward with all devices at once over "
                     "one device's alone: " +
                         once,
      micro.empty() ? ""
                    : fmt::format("; deterministic micro-shards ({} per device) at once over one "
                                  "device's step alone: {}",
                                  timed.micro_shards, micro),
      own.empty() ? ""
                  : "; steps at once over each device's own copy over one device's alone, the "
                    "wait for the last device's backward, and the all-reduce from the device's "
                    "backward's end: " +
                        own,
      timed.at_once_window.recorded()
          ? "; where the steps at once ran: " + timed.at_once_window.words()
          : std::string());
}

std::vector<int> shard_device_counts(int max_devices) {
  std::vector<int> out;
  for (int n = 2; n < max_devices; n *= 2) out.push_back(n);
  if (max_devices > 1) out.push_back(max_devices);
  return out;
}

}  // namespace tandem::detail
