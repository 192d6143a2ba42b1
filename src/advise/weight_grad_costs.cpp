#include "advise/weight_grad_costs.h"

#include <algorithm>

namespace tandem::detail {
namespace {

// The model's weight-gradient timings for n devices; nullptr where none were timed.
const WeightGradShards* timed_for(const DeviceProfile& d, int n) {
  const auto timed = std::find_if(d.row_weight_grad_gemms.begin(), d.row_weight_grad_gemms.end(),
                                  [n](const WeightGradShards& w) { return w.devices == n; });
  return timed == d.row_weight_grad_gemms.end() ? nullptr : &*timed;
}

// The model's shard and whole weight-gradient GEMMs timed for n devices; nullptr where none.
const std::vector<WeightGradGemmSeconds>* timed_shards(const DeviceProfile& d, int n) {
  const WeightGradShards* timed = timed_for(d, n);
  return timed == nullptr || timed->points.empty() ? nullptr : &timed->points;
}

}  // namespace

double weight_grad_fixed_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                                 Shares share) {
  const RowRate rate = dense_rate_at(d, rows);
  double s = 0;
  for (const auto& l : m.layers) {
    if (l.kind == CostKind::dense) {
      s += l.forward_flops * rate.half_rows / rate.sustained_flops / share.memory;
    }
  }
  return s;
}

double weight_grad_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows, Shares share) {
  double s = 0;
  for (const auto& l : m.layers) {
    if (l.kind == CostKind::dense && l.backward_flops > 0) {
      s += layer_seconds(d, l, rows, true, share) * l.forward_flops / l.backward_flops;
    }
  }
  return s;
}

double weight_grad_shard_kept(const DeviceProfile& d, const ModelCost& m, int64_t rows, int n) {
  const std::vector<WeightGradGemmSeconds>* timed = timed_shards(d, n);
  if (timed == nullptr) return -1;
  const auto& g = *timed;
  const bool cold = outgrows_private_cache(d, m);
  return log_interpolated(
      g, static_cast<double>(rows),
      [](const WeightGradGemmSeconds& p) { return static_cast<double>(p.rows); },
      [cold](const WeightGradGemmSeconds& p) {
        return cold ? p.shard_cold / p.whole_cold : p.shard / p.whole;
      });
}

std::optional<double> weight_grad_shard_saved(const DeviceProfile& d, int64_t rows, int n) {
  const std::vector<WeightGradGemmSeconds>* timed = timed_shards(d, n);
  if (timed == nullptr || !timed->front().timed_as_step()) return std::nullopt;
  return log_interpolated(
      *timed, static_cast<double>(rows),
      [](const WeightGradGemmSeconds& p) { return static_cast<double>(p.rows); },
      [](const WeightGradGemmSeconds& p) { return p.step_saved_share(); });
}

std::optional<double> shared_steps_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                                           int n) {
  const WeightGradShards* timed = timed_for(d, n);
  if (timed == nullptr || timed->at_once.empty()) return std::nullopt;
  const StepsAtOnceSeconds& first = timed->at_once.front();
  const StepsAtOnceSeconds& last = timed->at_once.back();
  if (rows < first.rows || rows > last.rows) {
    const StepsAtOnceSeconds& end = rows < first.rows ? first : last;
    const auto one_device = [&](int64_t r) {
      return forward_seconds(d, m, r) + backward_seconds(d, m, r);
    };
    const double at_end = one_device(end.rows);
    return end.modelled_shared_seconds() * (at_end > 0 ? one_device(rows) / at_end : 1.0);
  }
  return log_interpolated(
      timed->at_once, static_cast<double>(rows),
      [](const StepsAtOnceSeconds& a) { return static_cast<double>(a.rows); },
      [](const StepsAtOnceSeconds& a) { return a.modelled_shared_seconds(); });
}

std::optional<double> shared_steps_over_alone(const DeviceProfile& d, int64_t rows, int n) {
  const WeightGradShards* timed = timed_for(d, n);
  if (timed == nullptr || timed->at_once.empty()) return std::nullopt;
  return log_interpolated(
      timed->at_once, static_cast<double>(rows),
      [](const StepsAtOnceSeconds& a) { return static_cast<double>(a.rows); },
      [](const StepsAtOnceSeconds& a) { return a.modelled_shared_over_alone(); });
}

std::optional<double> micro_shards_over_alone(const DeviceProfile& d, int64_t rows, int n,
                                              int local) {
  const WeightGradShards* timed = timed_for(d, n);
  if (timed == nullptr || timed->micro_shards != local || timed->at_once.empty()) {
    return std::nullopt;
  }
  const StepsAtOnceSeconds& first = timed->at_once.front();
  if (!first.best.has_micro() || (first.has_medians() && !first.median.has_micro())) {
    return std::nullopt;
  }
  const double ratio = log_interpolated(
      timed->at_once, static_cast<double>(rows),
      [](const StepsAtOnceSeconds& a) { return static_cast<double>(a.rows); },
      [](const StepsAtOnceSeconds& a) { return a.modelled_micro_over_alone(); });
  return ratio > 0 ? std::optional<double>(ratio) : std::nullopt;
}

}  // namespace tandem::detail
