#include "advise/step_costs.h"

#include <algorithm>

namespace tandem::detail {
namespace {

// The share of one device's speed alone that each of k devices keeps when all run at once,
// from the profile's measurement with max_devices (`at_max`): 1 alone, interpolated in
// between; beyond the profile's devices their sum stays at what max_devices reach.
double share_of(double at_max, int max_devices, int k) {
  const int max = std::max(max_devices, 1);
  if (k <= 1 || max <= 1) return k <= 1 ? 1.0 : std::min(1.0, at_max * max / k);
  if (k >= max) return at_max * max / k;
  return 1.0 - (1.0 - at_max) * (k - 1) / (max - 1);
}

// The devices on one machine that run at once: a process's devices, MPI ranks of one host
// too, up to the profile's devices.
int devices_at_once(const HardwareProfile& hw, const Scenario& s) {
  return std::min(s.devices * s.ranks, std::max(hw.max_devices, s.devices));
}

}  // namespace

bool one_parameter_buffer(const Scenario& s) {
  return s.strategy == StrategyKind::mirrored && s.reducer == ReducerKind::sharded &&
         s.shared_parameters;
}

double layer_seconds(const DeviceProfile& d, const LayerCost& l, int64_t rows, bool backward,
                     Shares share) {
  if (rows <= 0) return 0;
  const double r = static_cast<double>(rows);
  const double per_row = backward ? l.backward_flops : l.forward_flops;
  const double bytes = r * (backward ? l.backward_bytes : l.forward_bytes);
  if (per_row <= 0 && bytes <= 0) return 0;
  const double stream = l.kind == CostKind::pool ? d.pool_scale : 1;
  double seconds = d.layer_overhead + stream * bytes / (d.memory_bandwidth * share.memory);
  if (per_row > 0) {
    if (l.kind == CostKind::conv) {
      // Measured shapes count once calibrate has set their scale.
      const ConvShapeSeconds* own =
          d.conv_step_scale > 0 ? conv_shape_of(d.conv_shapes, l) : nullptr;
      if (own) {
        seconds +=
            r * conv_primitive_seconds(*own, l, backward) * d.conv_step_scale / share.compute;
      } else {
        seconds +=
            r * per_row / ((d.conv_flops > 0 ? d.conv_flops : d.sustained_flops) * share.compute);
      }
    } else {
      const RowRate rate = dense_rate_at(d, rows);
      seconds += (r * per_row / share.compute + per_row * rate.half_rows / share.memory) /
                 rate.sustained_flops;
    }
  }
  return seconds;
}

double forward_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows, Shares share) {
  double s = 0;
  for (const auto& l : m.layers) s += layer_seconds(d, l, rows, false, share);
  return s;
}

double backward_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows, Shares share) {
  double s = 0;
  for (const auto& l : m.layers) s += layer_seconds(d, l, rows, true, share);
  return s;
}

double transfer_seconds(const LinkProfile& link, double bytes) {
  return bytes <= 0 ? 0 : link.latency + bytes / link.bandwidth;
}

int64_t rows_per_device(const Scenario& s) {
  const int64_t all = int64_t{s.devices} * s.ranks;
  return s.per_device_batch ? s.batch : (s.batch + all - 1) / all;
}

int64_t global_batch(const Scenario& s) {
  return s.per_device_batch ? s.batch * s.devices * s.ranks : s.batch;
}

double memory_share(const HardwareProfile& hw, int k) {
  return share_of(hw.device.concurrent_memory_share, hw.max_devices, k);
}

Shares devices_share(const HardwareProfile& hw, const Scenario& s) {
  const int k = devices_at_once(hw, s);
  const double compute = share_of(hw.device.concurrent_compute_share, hw.max_devices, k);
  const double copies = one_parameter_buffer(s) ? s.ranks : s.devices * s.ranks;
  if (s.ranks == 1 && hw.device.shared_cache_bytes > 0 &&
      copies * 4.0 * static_cast<double>(s.model.params()) <=
          static_cast<double>(hw.device.shared_cache_bytes)) {
    return {1.0, compute};
  }
  return {memory_share(hw, k), compute};
}

double measured_update_seconds(const DeviceProfile& d, int64_t rows) {
  const auto& p = d.row_points;
  if (p.empty() || !(d.row_points_params > 0) || !(p.front().update_seconds > 0)) return 0;
  return log_interpolated(
      p, static_cast<double>(rows),
      [](const DenseRowsSeconds& q) { return static_cast<double>(q.rows); },
      [](const DenseRowsSeconds& q) { return q.update_seconds; });
}

double update_seconds(const HardwareProfile& hw, const Scenario& s, double params, UpdateOf of) {
  const DeviceProfile& d = hw.device;
  const double measured = measured_update_seconds(d, rows_per_device(s));
  const double bytes = s.update_passes * 4.0 * params;
  const double alone = measured > 0 ? measured * params / d.row_points_params * s.update_passes /
                                          kMeasuredUpdatePasses
                                    : bytes / d.memory_bandwidth;
  const int k = devices_at_once(hw, s);
  if (k < 2 || s.ranks > 1 || d.shared_cache_bytes == 0) return alone;
  if (k * bytes > static_cast<double>(d.shared_cache_bytes)) {
    return std::max(alone, bytes / (d.memory_bandwidth * memory_share(hw, k)));
  }
  if (of == UpdateOf::own_copy || d.update_contention.empty()) return alone;
  const double slower = log_interpolated(
      d.update_contention, 4.0 * static_cast<double>(s.model.params()),
      [](const UpdateContention& u) { return static_cast<double>(u.bytes); },
      [](const UpdateContention& u) { return u.shard; });
  const int m = d.update_contention_devices;
  return alone * (k >= m ? slower : 1.0 + (slower - 1.0) * (k - 1) / (m - 1));
}

std::vector<ModelBucket> model_buckets(const Scenario& s) {
  std::vector<ModelBucket> out;
  ModelBucket open;
  const int64_t first = std::min(s.first_bucket_bytes, s.bucket_bytes);
  for (size_t i = s.model.layers.size(); i-- > 0;) {
    if (s.model.layers[i].params == 0) continue;
    open.params += static_cast<double>(s.model.layers[i].params);
    if (4.0 * open.params >= static_cast<double>(out.empty() ? first : s.bucket_bytes)) {
      out.push_back(open);
      open = {};
    }
  }
  if (open.params > 0) out.push_back(open);
  return out;
}

int layers_with_params(const ModelCost& m) {
  return static_cast<int>(std::count_if(m.layers.begin(), m.layers.end(),
                                        [](const LayerCost& l) { return l.params > 0; }));
}

Prediction cpu_step_start(const HardwareProfile& hw, const Scenario& s, int64_t rows) {
  const DeviceProfile& d = hw.device;
  Prediction p;
  p.phases["input"] = transfer_seconds(hw.host_device, 4.0 * rows * s.model.input_size);
  p.phases["compute"] = forward_seconds(d, s.model, rows, devices_share(hw, s));
  p.phases["allreduce"] = 0;
  p.phases["optimizer"] = 0;
  p.phases["overhead"] = d.step_overhead + (s.devices > 1 ? d.fork_join : 0);
  return p;
}

Prediction finish_prediction(Prediction p) {
  p.step_seconds = 0;
  for (const auto& [phase, seconds] : p.phases) p.step_seconds += seconds;
  p.busy["device"] = p.phases["compute"] + p.phases["allreduce"] + p.phases["optimizer"];
  p.busy["allreduce"] = p.phases["allreduce"];
  return p;
}

bool outgrows_private_cache(const DeviceProfile& d, const ModelCost& m) {
  return d.private_cache_bytes == 0 ||
         4.0 * static_cast<double>(m.params()) > static_cast<double>(d.private_cache_bytes);
}

bool gradients_evicted(const DeviceProfile& d, const ModelCost& m) {
  return d.cold_copy_bandwidth > 0 && outgrows_private_cache(d, m);
}

RowRate dense_rate_at(const DeviceProfile& d, int64_t rows) {
  const auto& p = d.row_points;
  if (p.size() < 2 || !(d.row_points_flops > 0) || rows < 1) {
    return {d.sustained_flops, d.half_rows};
  }
  const double r = static_cast<double>(rows);
  // The curve's compute seconds c at r and its slope there (seconds per row).
  double c = 0, slope = 0;
  if (rows > p.back().rows) {
    const DenseRowsSeconds &lo = p[p.size() - 2], &hi = p.back();
    slope = std::max(
        0.0, (hi.compute_seconds - lo.compute_seconds) / static_cast<double>(hi.rows - lo.rows));
    c = hi.compute_seconds + slope * (r - static_cast<double>(hi.rows));
  } else {
    size_t i = 1;
    while (i + 1 < p.size() && rows > p[i].rows) ++i;
    const DenseRowsSeconds &lo = p[i - 1], &hi = p[i];
    const double power = std::log(hi.compute_seconds / lo.compute_seconds) /
                         std::log(static_cast<double>(hi.rows) / static_cast<double>(lo.rows));
    c = lo.compute_seconds * std::pow(r / static_cast<double>(lo.rows), power);
    slope = power * c / r;
  }
  // The tangent c = slope * (r + half): its share of the rows, between a twentieth (a flat or
  // falling stretch, measured noise) and all of it (a growing slope has no fixed part).
  const double grows = std::clamp(slope * r / c, 0.05, 1.0);
  return {d.row_points_flops * r / (grows * c), r * (1.0 - grows) / grows};
}

}  // namespace tandem::detail
