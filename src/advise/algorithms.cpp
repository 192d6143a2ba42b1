#include "advise/algorithms.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

// `value` of measured points (ascending in `key`) at `x`: linear in log key between the two
// nearest measured points, the nearest end's value beyond them.
template <typename Point, typename Key, typename Value>
double log_interpolated(const std::vector<Point>& points, double x, Key key, Value value) {
  if (x <= key(points.front())) return value(points.front());
  for (size_t i = 1; i < points.size(); ++i) {
    const double hi = key(points[i]);
    if (x <= hi) {
      const double lo = key(points[i - 1]);
      const double t = std::log(x / lo) / std::log(hi / lo);
      return value(points[i - 1]) + t * (value(points[i]) - value(points[i - 1]));
    }
  }
  return value(points.back());
}

// The same over points measured at sizes of `floats` floats.
template <typename Point, typename Value>
double at_size(const std::vector<Point>& points, double floats, Value value) {
  return log_interpolated(
      points, floats, [](const Point& p) { return static_cast<double>(p.floats); }, value);
}

// What each of several devices computing at once keeps of one device's speed alone: of its
// memory bandwidth, and of its arithmetic (cores that all run AVX-512 clock down, or share a
// virtual machine's host). 1 for one device.
struct Shares {
  double memory = 1, compute = 1;
};

// Seconds of one layer's forward (or backward) on `rows` samples on one device. A Dense
// layer's rate sustained * r / (r + half_rows) is flops / sustained plus a fixed part,
// flops_per_row * half_rows / sustained, that does not grow with the rows: streaming the
// weights, which slows with the memory share when other devices stream theirs from memory
// (devices_share).
double layer_seconds(const DeviceProfile& d, const LayerCost& l, int64_t rows, bool backward,
                     Shares share = {}) {
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

double forward_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                       Shares share = {}) {
  double s = 0;
  for (const auto& l : m.layers) s += layer_seconds(d, l, rows, false, share);
  return s;
}

double backward_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                        Shares share = {}) {
  double s = 0;
  for (const auto& l : m.layers) s += layer_seconds(d, l, rows, true, share);
  return s;
}

double transfer_seconds(const LinkProfile& link, double bytes) {
  return bytes <= 0 ? 0 : link.latency + bytes / link.bandwidth;
}

// A resource that does one task at a time: a task starts when ready and the resource is
// free; returns its end.
struct Resource {
  double free_at = 0, busy = 0;
  double run(double ready, double seconds) {
    const double start = std::max(ready, free_at);
    free_at = start + seconds;
    busy += seconds;
    return free_at;
  }
};

// The rows the busiest device computes (the global batch is split over every rank's devices).
int64_t rows_per_device(const Scenario& s) {
  const int64_t all = int64_t{s.devices} * s.ranks;
  return s.per_device_batch ? s.batch : (s.batch + all - 1) / all;
}

int64_t global_batch(const Scenario& s) {
  return s.per_device_batch ? s.batch * s.devices * s.ranks : s.batch;
}

// The share of one device's speed alone that each of k devices keeps when all run at once,
// from the profile's measurement with max_devices (`at_max`): 1 alone, interpolated in
// between; beyond the profile's devices their sum stays at what max_devices reach.
double share_of(double at_max, int max_devices, int k) {
  const int max = std::max(max_devices, 1);
  if (k <= 1 || max <= 1) return k <= 1 ? 1.0 : std::min(1.0, at_max * max / k);
  if (k >= max) return at_max * max / k;
  return 1.0 - (1.0 - at_max) * (k - 1) / (max - 1);
}

double memory_share(const HardwareProfile& hw, int k) {
  return share_of(hw.device.concurrent_memory_share, hw.max_devices, k);
}

// The devices on one machine that run at once: a process's devices, MPI ranks of one host
// too, up to the profile's devices.
int devices_at_once(const HardwareProfile& hw, const Scenario& s) {
  return std::min(s.devices * s.ranks, std::max(hw.max_devices, s.devices));
}

// Whether a process's devices share one parameter buffer (mirrored.cpp: not own_copies, the
// sharded reducer over shared parameters); otherwise each device keeps its own copy.
bool one_parameter_buffer(const Scenario& s) {
  return s.strategy == StrategyKind::mirrored && s.reducer == ReducerKind::sharded &&
         s.shared_parameters;
}

// The shares each device keeps while all of the scenario's devices run at once. With the
// size of the cache the cores share (and one process), weights that fit it do not stream from
// memory, and the memory share is 1: one buffer per process for mirrored's sharded reducer
// over shared parameters, one per device otherwise. On the Zen 4 of docs/SCALING.md ("The
// update on several devices at once") the 784-256-256-10 model's 2-device compute at 16 rows
// took 0.88-1.07 times the 1-device steps at 16 rows, where the memory share made it about 1.2.
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

// The update's seconds in the measured steps of the model being predicted at `rows` (its
// curve's points, in log rows between two of them, the nearest end's beyond them); 0 where
// the points do not hold them.
double measured_update_seconds(const DeviceProfile& d, int64_t rows) {
  const auto& p = d.row_points;
  if (p.empty() || !(d.row_points_params > 0) || !(p.front().update_seconds > 0)) return 0;
  return log_interpolated(
      p, static_cast<double>(rows),
      [](const DenseRowsSeconds& q) { return static_cast<double>(q.rows); },
      [](const DenseRowsSeconds& q) { return q.update_seconds; });
}

// The optimizer's passes over `params` floats. A model whose own steps were measured with
// their update (dense_rates[].points) takes that update's seconds, scaled to `params` and the
// optimizer's passes: a model that fits in the caches updates faster than memory_bandwidth
// (measured in the seed model's steps) says: over the 1-device steps of held_out_update the
// update came within -12% to +16% of measured this way, and +19% to +78% off for the 256-256
// model at the seed's rate (docs/SCALING.md, "The update measured on each model").
// Several devices updating at once (profiles that know the cache the cores share). Where the
// devices' update buffers outgrow it (each device's parameters, gradients and optimizer state:
// update_passes floats per parameter, an upper bound), the update streams from memory and
// takes at least its bytes at the memory bandwidth each device keeps (memory_share): on the
// Zen 4 of docs/SCALING.md ("The update on several devices at once", share 0.65-0.70) the large
// models' whole updates on 2 devices took 1.40-1.66 times their time alone; on the Xeon (share 1)
// each of 2 devices updating the seed model took 13.9 ms against 13.4 ms alone. Where they fit
// it, a device's shard of one shared buffer that every device read in forward pays for the
// lines the others hold (device.update_contention's shard at the model's bytes, in log bytes
// between two measured sizes, the nearest end's beyond them; for fewer devices than measured
// at once, linear from 1 alone; for more, as measured).
enum class UpdateOf { own_copy, shared_shard };

double update_seconds(const HardwareProfile& hw, const Scenario& s, double params,
                      UpdateOf of = UpdateOf::own_copy) {
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

// The part of a device's Dense layers' weight-gradient time that does not grow with the rows:
// the cost model's rate sustained * r / (r + half_rows) is flops / sustained plus
// flops_per_row * half_rows / sustained, a fixed cost per pass proportional to the layer's
// weights (streaming them). The weight-gradient pass is as many FLOPs as forward.
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

// Whether the model's parameters (and so its gradients) do not fit in one core's private
// cache, or its size is not known.
bool outgrows_private_cache(const DeviceProfile& d, const ModelCost& m) {
  return d.private_cache_bytes == 0 ||
         4.0 * static_cast<double>(m.params()) > static_cast<double>(d.private_cache_bytes);
}

// The weight-gradient part of a device's Dense layers' backward: each one's backward seconds
// (its GEMMs, and its small per-layer overhead) times the weight gradient's share of its FLOPs
// (as many as its forward's).
double weight_grad_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows, Shares share) {
  double s = 0;
  for (const auto& l : m.layers) {
    if (l.kind == CostKind::dense && l.backward_flops > 0) {
      s += layer_seconds(d, l, rows, true, share) * l.forward_flops / l.backward_flops;
    }
  }
  return s;
}

// The model's weight-gradient timings for n devices; nullptr where none were timed.
const WeightGradShards* timed_for(const DeviceProfile& d, int n) {
  const auto timed = std::find_if(d.row_weight_grad_gemms.begin(), d.row_weight_grad_gemms.end(),
                                  [n](const WeightGradShards& w) { return w.devices == n; });
  return timed == d.row_weight_grad_gemms.end() ? nullptr : &*timed;
}

// What a device of n keeps of that part when it computes only its shard of every weight
// gradient: the model's shards' GEMMs over its whole kernels' GEMMs as calibrate timed them
// at rows near `rows` (in log rows between two measured row counts, the nearest end's beyond
// them), with the caches emptied first where the model's gradients do not fit in the core's
// cache (a step streams them out), warm where they do; -1 where the profile did not time
// them for n devices (calibrate times them for 2, 4, 8, ... devices and its max_devices, bench
// validate for its --devices; other device counts keep the rule of 1/N of the fixed part). In the
// runs held out from this (docs/SCALING.md, "Weight-gradient shards timed as they run") the large
// models' shards took 0.47-0.62 of the whole GEMMs at 12 and 24 rows with the caches emptied,
// 0.86-1.16 at 48 and 96 (oneDNN's kernels for few rows are bound by writing the gradient, and 1/N
// of it stays in the cache for the accumulating GEMMs); the 784-256-256-10 model's, warm, 1.11-1.34
// at 12 and 24.
const std::vector<WeightGradGemmSeconds>* timed_shards(const DeviceProfile& d, int n) {
  const WeightGradShards* timed = timed_for(d, n);
  return timed == nullptr || timed->points.empty() ? nullptr : &timed->points;
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

// The share of a device's backward that computing only its shard of every weight gradient
// saves, where calibrate timed the model's backward GEMMs as a step runs them (the `*_step`
// timings: after the update and forward's read of every parameter, input gradients
// interleaved): the whole weight-gradient GEMMs less the shards, over the input- and whole
// weight-gradient GEMMs, at rows near `rows` (in log rows, as weight_grad_shard_kept); nullopt
// where they were not. The two parts the rule before guessed, as timed inside steps at 16 rows
// (docs/SCALING.md, "Weight gradients timed as a step runs them"): the deep 784-1024x6-10
// model's weight gradients were 0.67-0.69 of its backward GEMMs, not the 0.54 their FLOPs give
// (oneDNN's kernels for few rows are bound by writing the gradient); and its shards kept
// 0.40-0.42 of them, the warm share, where the seed's kept 0.58-0.61, the share with the caches
// emptied (what the update between two steps leaves in the shared cache decides which).
std::optional<double> weight_grad_shard_saved(const DeviceProfile& d, int64_t rows, int n) {
  const std::vector<WeightGradGemmSeconds>* timed = timed_shards(d, n);
  if (timed == nullptr || !timed->front().timed_as_step()) return std::nullopt;
  return log_interpolated(
      *timed, static_cast<double>(rows),
      [](const WeightGradGemmSeconds& p) { return static_cast<double>(p.rows); },
      [](const WeightGradGemmSeconds& p) { return p.step_saved_share(); });
}

// A device's forward and backward under weight-gradient sharding over one of its alone, all n
// devices at once, where calibrate timed the model's steps so (the `*_alone` and `*_shared`
// timings, steps_at_once.h: the devices' forward reads the shared parameters the others updated
// their shards of, and each one's shard GEMMs read the others' operands from their cores'
// caches), at rows near `rows` (in log rows, as weight_grad_shard_kept); nullopt where it did
// not. In the held-out runs before (held_out_step_gemms_xeon) the 784-256-256-10 model's
// sharded forward and backward at 16 rows took 1.14-1.38 times one device's steps, which the
// step-timed GEMMs' rule (no traffic between cores) put at 0.95-0.98: its parameters fit a
// core's private cache, so each device's read of the shards the other wrote is a transfer
// between cores. In the runs held out from this (held_out_steps_at_once_xeon) the four models'
// sharded steps at 16 rows per device came within -13% to +7% of the measured (the rule before:
// -15% to +17%); 784-8192-10's at 64 rows, between the probe's 48 and 96, -16% to -1%. The
// timings are the profile's own rows (calibrate's: the points'); timing them also at thirds of
// an octave between did not help on a fresh set (held_out_thirds_xeon), where the probe's alone
// pass ran at 0.73-0.91 of one device's steps at 16 rows and put the sharded step of
// 784-8192-10 at 16 rows +8% to +19% over (docs/SCALING.md, "Steps at once at thirds of an
// octave"). The ratio is of the rounds' medians where the profile records them, as one device's
// curve is a median, else of their best: at few rows the alone pass's best sits further under
// its median than the shared pass's, which inflated the ratio there; on a fresh set
// (held_out_median_xeon) the medians missed 5 configurations over 3 runs where the best missed
// 6, and 784-8192-10's sharded step at 16 rows in none (the best: 1).
std::optional<double> shared_steps_over_alone(const DeviceProfile& d, int64_t rows, int n) {
  const WeightGradShards* timed = timed_for(d, n);
  if (timed == nullptr || timed->at_once.empty()) return std::nullopt;
  return log_interpolated(
      timed->at_once, static_cast<double>(rows),
      [](const StepsAtOnceSeconds& a) { return static_cast<double>(a.rows); },
      [](const StepsAtOnceSeconds& a) { return a.modelled_shared_over_alone(); });
}

// Gradient buckets as make_buckets (src/parallel/buckets.cpp) forms them: layers in backward
// order, a bucket closed once it holds the first (then the regular) bucket's bytes.
struct ModelBucket {
  double params = 0;
};

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

// The costs every CPU-device algorithm shares: waking the devices and joining them
// (DeviceGroup::run), the input rows, forward and the step's fixed overhead.
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

Prediction finish(Prediction p) {
  p.step_seconds = 0;
  for (const auto& [phase, seconds] : p.phases) p.step_seconds += seconds;
  p.busy["device"] = p.phases["compute"] + p.phases["allreduce"] + p.phases["optimizer"];
  p.busy["allreduce"] = p.phases["allreduce"];
  return p;
}

// single_device.cpp: forward, backward, the whole update, on the calling thread.
Prediction single_device(const HardwareProfile& hw, const Scenario& s) {
  const int64_t rows = rows_per_device(s);
  Prediction p = cpu_step_start(hw, s, rows);
  p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  p.phases["optimizer"] = update_seconds(hw, s, static_cast<double>(s.model.params()));
  return finish(p);
}

// grad_reducer.cpp, WeightGradShardReducer (mirrored, sharded reducer, shared parameters,
// every layer with parameters a Dense used once): each device runs backward's input
// gradients on its rows, hands over its operands per layer, and computes 1/N of every
// weight gradient over the whole batch (N GEMMs of its rows of the kernel, one per replica's
// rows: as many FLOPs as its own rows' weight gradient), then updates that 1/N; nothing is
// summed. Its forward and backward are one device's times what calibrate's timing of the
// model's steps, all devices at once, says they take over one device's alone
// (shared_steps_over_alone); in profiles without that timing, its forward is one device's and
// its backward one device's less what calibrate's timing of the backward GEMMs as a step runs
// them says the shards save (weight_grad_shard_saved); in profiles without that
// timing, its weight-gradient pass takes what the GEMMs timed warm or cold keep of the whole
// ones (weight_grad_shard_kept); in profiles without either, the GEMMs write 1/N of each
// kernel gradient, so their fixed cost is 1/N of a whole one's. A hand-off per layer, a
// barrier at the end.
Prediction weight_grad_shard(const HardwareProfile& hw, const Scenario& s) {
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  Prediction p = cpu_step_start(hw, s, rows);
  const Shares share = devices_share(hw, s);
  const auto backward = [&] { return backward_seconds(hw.device, s.model, rows, share); };
  if (const std::optional<double> ratio = shared_steps_over_alone(hw.device, rows, n)) {
    p.phases["compute"] =
        (forward_seconds(hw.device, s.model, rows) + backward_seconds(hw.device, s.model, rows)) *
        *ratio;
  } else if (const std::optional<double> saved = weight_grad_shard_saved(hw.device, rows, n)) {
    p.phases["compute"] += backward() * (1.0 - *saved);
  } else if (const double kept = weight_grad_shard_kept(hw.device, s.model, rows, n); kept >= 0) {
    p.phases["compute"] +=
        backward() - (1.0 - kept) * weight_grad_seconds(hw.device, s.model, rows, share);
  } else {
    p.phases["compute"] +=
        backward() - (1.0 - 1.0 / n) * weight_grad_fixed_seconds(hw.device, s.model, rows, share);
  }
  p.phases["allreduce"] = layers_with_params(s.model) * hw.device_device.latency;
  p.phases["optimizer"] =
      update_seconds(hw, s, static_cast<double>(s.model.params()) / n, UpdateOf::shared_shard);
  p.phases["overhead"] += hw.device.barrier;
  return finish(p);
}

// The cross-device part of the sharded reducer (grad_reducer.cpp, ShardedUpdateReducer), per
// device: for each bucket, its 1/N shard summed over the N replicas' gradients (N reads of
// count/N floats), updated, and (with a copy of the parameters per replica) written into
// the other N-1. A hand-off per bucket.
void sharded_bucket_work(const HardwareProfile& hw, const Scenario& s, Prediction& p) {
  const int n = s.devices;
  const double share = memory_share(hw, n);
  const double sum_rate = hw.device_device.bandwidth * share;
  const double copy_rate = hw.host_device.bandwidth * share;
  for (const ModelBucket& b : model_buckets(s)) {
    p.phases["allreduce"] += hw.device_device.latency + 4.0 * b.params / sum_rate;
    if (!s.shared_parameters) p.phases["allreduce"] += (n - 1) * 4.0 * b.params / n / copy_rate;
    p.phases["optimizer"] += update_seconds(
        hw, s, b.params / n, s.shared_parameters ? UpdateOf::shared_shard : UpdateOf::own_copy);
  }
}

// grad_reducer.cpp, ShardedUpdateReducer (mirrored, sharded reducer, when weight-gradient
// sharding does not apply: convnets, shared layers, shared_parameters off): full backward
// into each replica's gradient buffer, then sharded_bucket_work on the same cores.
Prediction sharded_buckets(const HardwareProfile& hw, const Scenario& s) {
  const int64_t rows = rows_per_device(s);
  Prediction p = cpu_step_start(hw, s, rows);
  p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  sharded_bucket_work(hw, s, p);
  p.phases["overhead"] += hw.device.barrier;
  return finish(p);
}

// grad_reducer.cpp, AllreduceReducer over shared_memory_communicator.cpp, per device: each
// bucket all-reduced in shared memory (each device sums its 1/N slice of the N buffers,
// tree_sum_into_all, and copies the sum into the N-1 others), then every device applies the
// whole update to its own copy of the parameters (mirrored.cpp).
void allreduce_bucket_work(const HardwareProfile& hw, const Scenario& s, Prediction& p) {
  const int n = s.devices;
  const double share = memory_share(hw, n);
  for (const ModelBucket& b : model_buckets(s)) {
    p.phases["allreduce"] += hw.device_device.latency +
                             4.0 * b.params / (hw.device_device.bandwidth * share) +
                             (n - 1) * 4.0 * b.params / n / (hw.host_device.bandwidth * share);
  }
  p.phases["optimizer"] += update_seconds(hw, s, static_cast<double>(s.model.params()));
}

// mirrored.cpp with the all-reduce reducer: full backward into each replica's gradient buffer,
// then allreduce_bucket_work.
Prediction bucket_allreduce(const HardwareProfile& hw, const Scenario& s) {
  const int64_t rows = rows_per_device(s);
  Prediction p = cpu_step_start(hw, s, rows);
  p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  allreduce_bucket_work(hw, s, p);
  p.phases["overhead"] += hw.device.barrier;
  return finish(p);
}

// Whether a step's gradient buffers have left the core's cache by the time they are summed
// and exchanged: the profile measured the cold rates and the model outgrows the core's cache.
bool gradients_evicted(const DeviceProfile& d, const ModelCost& m) {
  return d.cold_copy_bandwidth > 0 && outgrows_private_cache(d, m);
}

// Whether deterministic mode's copies and tree stay in the shared cache: one process, a
// profile that timed them (device.deterministic_exchange) and knows the cache, and every
// device's parameters, gradients and `local` copies of them fit it, at a gradient size no
// larger than the largest it timed (beyond that the probe says nothing).
bool exchange_in_shared_cache(const DeviceProfile& d, const Scenario& s, int local) {
  const double bytes = 4.0 * static_cast<double>(s.model.params());
  return !d.deterministic_exchange.empty() && s.ranks == 1 && d.shared_cache_bytes > 0 &&
         s.devices * (local + 2) * bytes <= static_cast<double>(d.shared_cache_bytes) &&
         bytes <= static_cast<double>(d.deterministic_exchange.back().bytes);
}

// mirrored.cpp, deterministic_gradients: each device computes its micro-shards one after
// another (shards / devices of them over all ranks, B / shards rows each), copies each
// shard's gradients aside and sums them in a fixed tree (tree_sum) into its buffer.
Prediction deterministic_start(const HardwareProfile& hw, const Scenario& s) {
  const int n = s.devices * s.ranks;
  const int shards = std::max(s.deterministic_shards, n);
  const int local = shards / n;
  const int64_t shard_rows = (global_batch(s) + shards - 1) / shards;
  Prediction p = cpu_step_start(hw, s, shard_rows);
  const DeviceProfile& d = hw.device;
  const Shares shares = devices_share(hw, s);
  p.phases["compute"] = local * (forward_seconds(d, s.model, shard_rows, shares) +
                                 backward_seconds(d, s.model, shard_rows, shares));
  const double share = memory_share(hw, s.devices);
  const double bytes = 4.0 * static_cast<double>(s.model.params());
  if (exchange_in_shared_cache(d, s, local)) {
    // The copies and the tree as calibrate timed them on the devices at once, per byte at
    // the model's gradient bytes; the tree's reads and write scaled to `local` copies.
    const auto per_byte = [&](auto seconds) {
      return log_interpolated(
          d.deterministic_exchange, bytes,
          [](const ExchangeSeconds& e) { return static_cast<double>(e.bytes); },
          [&](const ExchangeSeconds& e) { return seconds(e) / static_cast<double>(e.bytes); });
    };
    const double copy = per_byte([](const ExchangeSeconds& e) { return e.copy; });
    const double tree = per_byte([](const ExchangeSeconds& e) { return e.tree; }) * (local + 1) /
                        (d.deterministic_exchange_shards + 1);
    p.phases["allreduce"] = local * bytes * copy + bytes * tree;
    return p;
  }
  if (d.cold_copy_bandwidth > 0) {
    // Each shard's gradients copied aside, then tree_sum of the `local` copies into the
    // replica's buffer (local reads and a write; a copy for one); for a model larger than the
    // core's cache at the rates of memory the caches no longer hold (backward and the copies
    // before have streamed the whole model).
    const bool cold = gradients_evicted(d, s.model);
    const double copy = (cold ? d.cold_copy_bandwidth : hw.host_device.bandwidth) * share;
    const double sum = (cold ? d.cold_sum_bandwidth : hw.device_device.bandwidth) * share;
    p.phases["allreduce"] =
        local * bytes / copy + (local > 1 ? (local + 1) * bytes / sum : bytes / copy);
    return p;
  }
  // Profiles without the cold rates: `local` reads for the tree, at the warm rates.
  p.phases["allreduce"] = local * bytes / (hw.host_device.bandwidth * share) +
                          (local > 1 ? local * bytes / (hw.device_device.bandwidth * share)
                                     : bytes / (hw.host_device.bandwidth * share));
  return p;
}

// Deterministic mode in one process: deterministic_start, then the reducer across the
// devices once backward is over (mirrored.cpp hands every layer's gradients to it then):
// sharded_bucket_work, or allreduce_bucket_work with the all-reduce reducer.
Prediction deterministic_shards(const HardwareProfile& hw, const Scenario& s) {
  Prediction p = deterministic_start(hw, s);
  if (s.reducer == ReducerKind::allreduce) {
    allreduce_bucket_work(hw, s, p);
  } else {
    sharded_bucket_work(hw, s, p);
  }
  p.phases["overhead"] += hw.device.barrier;
  return finish(p);
}

// host.cpp (tandem's host strategy on CPU devices): three rounds per step. 1: every device
// copies the whole weights from the host buffer, runs forward on its rows and copies its
// outputs back; the loss on the host; 2: the output gradient to the devices, backward on
// each; 3: the host's sum of the N gradient buffers (tree_sum) and its update, each device's
// cores taking 1/N of the parameters.
Prediction host_copies(const HardwareProfile& hw, const Scenario& s) {
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  const DeviceProfile& d = hw.device;
  const double params = static_cast<double>(s.model.params());
  Prediction p = cpu_step_start(hw, s, rows);
  p.phases["compute"] += backward_seconds(d, s.model, rows, devices_share(hw, s));
  // For a model larger than the core's cache, at the rates of memory the caches no longer
  // hold: the update streamed the weights it wrote (and the gradients and state) before the
  // next step copies them, and backward streamed the whole model before the sum.
  const bool cold = gradients_evicted(d, s.model);
  const double copy = cold ? d.cold_copy_bandwidth : hw.host_device.bandwidth;
  const double sum = cold ? d.cold_sum_bandwidth : hw.host_memory_bandwidth;
  p.phases["weights_to_devices"] =
      4.0 * params / (copy * memory_share(hw, n)) + hw.host_device.latency;
  // tree_sum of n buffers into one, 1/n of it per device: n reads and a write of each float.
  p.phases["gradients_to_host"] = (n + 1) * 4.0 * params / n / (sum * memory_share(hw, n));
  // The update on the devices' cores as a device's own (its model's measured update), else at
  // the host's update rate.
  p.phases["host_update"] = measured_update_seconds(d, rows) > 0
                                ? update_seconds(hw, s, params / n, UpdateOf::shared_shard)
                                : s.update_passes * 4.0 * params / n / hw.host_update_bandwidth;
  p.phases["overhead"] += 2 * d.fork_join;  // the second and third rounds
  p.phases.erase("allreduce");
  p.phases.erase("optimizer");
  Prediction out = finish(p);
  out.busy["weights_to_devices"] = p.phases["weights_to_devices"];
  out.busy["gradients_to_host"] = p.phases["gradients_to_host"];
  out.busy["host_update"] = p.phases["host_update"];
  return out;
}

// Replicas on devices that move bytes over links (GPUs; NCCL, DDP, MirroredStrategy): buckets
// all-reduced in a ring (or a tree) while backward runs, then the update on every device.
Prediction ring_allreduce(const HardwareProfile& hw, const Scenario& s) {
  const DeviceProfile& d = hw.device;
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  const auto& layers = s.model.layers;
  Prediction p;
  Resource device, ring;
  double t = device.run(0, transfer_seconds(hw.host_device, 4.0 * rows * s.model.input_size));
  p.phases["input"] = t;
  const double forward = forward_seconds(d, s.model, rows);
  t = device.run(t, forward);
  double compute = forward, comm_total = 0;
  const double wire = s.bf16 ? 2.0 : 4.0;
  double bucket_bytes = 0, deferred = 0;
  double comm_end = t;
  for (size_t i = layers.size(); i-- > 0;) {
    const double b = layer_seconds(d, layers[i], rows, true);
    compute += b;
    t = device.run(t, b);
    bucket_bytes += 4.0 * static_cast<double>(layers[i].params);
    const bool last = i == 0;
    if (n > 1 && (bucket_bytes >= static_cast<double>(s.bucket_bytes) || last)) {
      const double bytes_on_wire = bucket_bytes * wire / 4.0;
      // Ring: 2(n-1) steps, each moving 1/n of the bucket over every link. Tree: the whole
      // bucket down a binary tree and back up, 2 ceil(log2 n) hops.
      const double hops = 2.0 * std::ceil(std::log2(static_cast<double>(n)));
      const double c =
          s.allreduce == AllreduceKind::tree
              ? hops * (hw.device_device.latency + bytes_on_wire / hw.device_device.bandwidth)
              : 2.0 * (n - 1) * hw.device_device.latency +
                    2.0 * (n - 1) / n * bytes_on_wire / hw.device_device.bandwidth;
      comm_total += c;
      if (d.comm_uses_compute) {
        t = device.run(t, c);  // the cores that compute also move the bytes
        comm_end = t;
      } else {
        // Without overlap a bucket waits for the whole backward (known only at the end:
        // queued here, started below).
        comm_end = s.overlap ? ring.run(t, c) : (deferred += c, comm_end);
      }
      bucket_bytes = 0;
    }
  }
  if (deferred > 0) comm_end = ring.run(t, deferred);
  const double end_of_reduction = std::max(t, comm_end);
  p.phases["compute"] = compute;
  p.phases["allreduce"] = std::max(0.0, end_of_reduction - (p.phases["input"] + compute));
  p.phases["optimizer"] = update_seconds(hw, s, static_cast<double>(s.model.params()));
  p.phases["overhead"] = d.step_overhead;
  p.busy["device"] = device.busy;
  p.busy["allreduce"] = comm_total;
  p.step_seconds = end_of_reduction + p.phases["optimizer"] + d.step_overhead;
  return p;
}

// keras multi_gpu_model as TensorFlow ran it: weights on the host are copied to every
// device layer by layer as forward needs them, gradients are copied back layer by layer
// as backward makes them, and the host sums the N gradients and updates each layer as
// soon as its gradients are in. Devices sharing a link share its bandwidth.
Prediction keras_multi_gpu_model(const HardwareProfile& hw, const Scenario& s) {
  const DeviceProfile& d = hw.device;
  const int n = s.devices;
  const int64_t rows = rows_per_device(s);
  const int share = std::min(n, hw.host_device.devices_per_link);  // devices on the busiest link
  const auto& layers = s.model.layers;
  Prediction p;
  Resource links_to_device, device, links_to_host, cpu;
  // CPU devices copy with their own cores: their copies queue behind their compute.
  Resource& to_device = d.comm_uses_compute ? device : links_to_device;
  Resource& to_host = d.comm_uses_compute ? device : links_to_host;
  // Each link direction carries its devices' copies one after another; busy time per
  // direction is kept apart (for CPU devices the resource is the device itself).
  double in_busy = 0, out_busy = 0;
  auto over_link = [&](double bytes_per_device, double& busy) {
    const double seconds = share * transfer_seconds(hw.host_device, bytes_per_device);
    busy += seconds;
    return seconds;
  };
  double ready = to_device.run(0, over_link(4.0 * rows * s.model.input_size, in_busy));
  std::vector<double> weights_at(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    weights_at[i] =
        to_device.run(0, over_link(4.0 * static_cast<double>(layers[i].params), in_busy));
  }
  double t = ready, compute = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const double f = layer_seconds(d, layers[i], rows, false);
    compute += f;
    t = device.run(std::max(t, weights_at[i]), f);
  }
  // Outputs to the host, loss there, output gradients back: small, latency-bound.
  t += 2 * hw.host_device.latency;
  double update_end = 0;
  for (size_t i = layers.size(); i-- > 0;) {
    const double b = layer_seconds(d, layers[i], rows, true);
    compute += b;
    t = device.run(t, b);
    const double bytes = 4.0 * static_cast<double>(layers[i].params);
    const double arrived = to_host.run(t, over_link(bytes, out_busy));
    // The sum of the n gradients (n reads, 1 write), then the update's passes.
    update_end = cpu.run(arrived, (n + 1) * bytes / hw.host_memory_bandwidth +
                                      s.update_passes * bytes / hw.host_update_bandwidth);
  }
  p.phases["compute"] = compute;
  p.phases["overhead"] = d.step_overhead;
  p.busy["device"] = device.busy;
  p.busy["weights_to_devices"] = in_busy;
  p.busy["gradients_to_host"] = out_busy;
  p.busy["host_update"] = cpu.busy;
  // The critical path is compute plus waiting; the waiting is attributed to the copies
  // and the host's sum and update in proportion to how busy each was.
  const double path = update_end;
  const double waiting = std::max(0.0, path - compute);
  const double others = in_busy + out_busy + cpu.busy;
  p.phases["weights_to_devices"] = waiting * in_busy / others;
  p.phases["gradients_to_host"] = waiting * out_busy / others;
  p.phases["host_update"] = waiting * cpu.busy / others;
  p.step_seconds = path + d.step_overhead;
  return p;
}

// hierarchical_reducer.cpp over mpi_world.cpp (several MPI ranks, `devices` local devices
// each sharing one parameter buffer): each local device sums its 1/L shard of every bucket
// over the local replicas; the communication thread all-reduces each bucket across the
// ranks (float32 with MPI_SUM; bf16: packed, reduced with a bfloat16 sum, unpacked;
// deterministic: all-gathered and tree-summed), sharing the ranks' cores; then each local
// device updates 1/L of the parameters. A bucket posted while backward still runs costs the
// link's line (its bandwidth from calibrate's two largest, out-of-cache all-reduces): it
// shares the core with backward, which has just streamed the layers through the cache. The
// last bucket, posted when backward is done, runs alone as calibrate's sweep timed it
// (docs/SCALING.md: a one-bucket model's all-reduce took 0.22 ms in the step, 0.17 ms in the
// sweep, 0.55 ms on the line). With bf16, a bucket posted during backward costs the float32
// line times what compression measured against float32 in the sweep at its size (on shared
// memory it lost at 2^20 floats and above, and at some smaller sizes).
Prediction hierarchical(const HardwareProfile& hw, const Scenario& s) {
  const int local = s.devices, ranks = s.ranks;
  Prediction p;
  if (s.deterministic) {
    p = deterministic_start(hw, s);
  } else {
    const int64_t rows = rows_per_device(s);
    p = cpu_step_start(hw, s, rows);
    p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  }
  const LinkProfile& link = hw.rank_rank.bandwidth > 0 ? hw.rank_rank : hw.device_device;
  // Every rank's devices on one machine stream memory at once (the ranks of one host).
  const int streams = std::min(local * ranks, std::max(hw.max_devices, local));
  const std::vector<ModelBucket> buckets = model_buckets(s);
  for (size_t i = 0; i < buckets.size(); ++i) {
    const ModelBucket& b = buckets[i];
    const double bytes = 4.0 * b.params;
    if (local > 1) {
      p.phases["allreduce"] += hw.device_device.latency +
                               bytes / (hw.device_device.bandwidth * memory_share(hw, streams));
    }
    if (s.deterministic) {
      // The buckets are handed over one after another once backward is done (mirrored.cpp).
      p.phases["allreduce"] +=
          rank_deterministic_seconds(hw, b.params, ranks, gradients_evicted(hw.device, s.model));
    } else if (i + 1 < buckets.size()) {
      p.phases["allreduce"] +=
          rank_allreduce_in_backward_seconds(link, hw.device, b.params, ranks, s.bf16);
    } else {
      p.phases["allreduce"] +=
          rank_allreduce_alone_seconds(link, hw.device, b.params, ranks, s.bf16);
    }
  }
  p.phases["optimizer"] = update_seconds(hw, s, static_cast<double>(s.model.params()) / local);
  p.phases["overhead"] += 2 * hw.device.barrier;
  return finish(p);
}

// One loop's seconds per float at `floats`, from its measurements at the nearest sizes.
double per_float_at(const std::vector<Bf16LoopSeconds>& loops, double floats,
                    double Bf16LoopSeconds::*loop) {
  return at_size(loops, floats, [loop](const Bf16LoopSeconds& l) { return l.*loop; });
}

}  // namespace

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

double bf16_allreduce_loop_seconds(const DeviceProfile& d, double floats, int ranks) {
  const double others = static_cast<double>(ranks - 1) / ranks;
  if (d.bf16_loops.empty()) {
    // The older profiles' one figure: a pack and unpack round trip per float, and the sum of
    // each received part (two unpacks and a pack: 1.5 round trips) per other rank.
    return floats * d.bf16_seconds_per_float * (1.0 + 1.5 * (ranks - 1));
  }
  const auto& l = d.bf16_loops;
  return floats * (per_float_at(l, floats, &Bf16LoopSeconds::pack) +
                   per_float_at(l, floats, &Bf16LoopSeconds::unpack) +
                   others * per_float_at(l, floats, &Bf16LoopSeconds::sum));
}

double rank_allreduce_seconds(const LinkProfile& link, const DeviceProfile& d, double floats,
                              int ranks, bool bf16) {
  const double r = ranks, wire = (bf16 ? 2.0 : 4.0) * floats;
  double seconds = 2.0 * (r - 1) * link.latency + 2.0 * (r - 1) / r * wire / link.bandwidth;
  if (bf16) seconds += bf16_allreduce_loop_seconds(d, floats, ranks);
  return seconds;
}

double rank_deterministic_seconds(const HardwareProfile& hw, double floats, int ranks,
                                  bool evicted) {
  const LinkProfile& link = hw.rank_rank.bandwidth > 0 ? hw.rank_rank : hw.device_device;
  const auto modelled = [&](double n) {
    return (ranks - 1) * transfer_seconds(link, 4.0 * n) +
           ranks * 4.0 * n / hw.device_device.bandwidth;
  };
  if (!sweep_applies(link, ranks) || !(link.alone.front().deterministic_seconds > 0) ||
      !(floats > 0)) {
    return modelled(floats);
  }
  return modelled(floats) * at_size(link.alone, floats, [&](const AllreduceAlone& a) {
           return (evicted ? a.deterministic_cold_seconds : a.deterministic_seconds) /
                  modelled(static_cast<double>(a.floats));
         });
}

bool sweep_applies(const LinkProfile& link, int ranks) {
  return !link.alone.empty() && ranks >= 2 && link.alone_ranks == ranks;
}

double rank_allreduce_alone_seconds(const LinkProfile& link, const DeviceProfile& d, double floats,
                                    int ranks, bool bf16) {
  const double modelled = rank_allreduce_seconds(link, d, floats, ranks, bf16);
  if (!sweep_applies(link, ranks) || !(floats > 0)) return modelled;
  return modelled * at_size(link.alone, floats, [&](const AllreduceAlone& a) {
           return (bf16 ? a.bf16_seconds : a.seconds) /
                  rank_allreduce_seconds(link, d, static_cast<double>(a.floats), ranks, bf16);
         });
}

double rank_allreduce_in_backward_seconds(const LinkProfile& link, const DeviceProfile& d,
                                          double floats, int ranks, bool bf16) {
  if (!bf16 || !sweep_applies(link, ranks) || !(floats > 0)) {
    return rank_allreduce_seconds(link, d, floats, ranks, bf16);
  }
  return rank_allreduce_seconds(link, d, floats, ranks, false) *
         at_size(link.alone, floats,
                 [](const AllreduceAlone& a) { return a.bf16_seconds / a.seconds; });
}

const std::vector<AlgorithmModel>& algorithm_models() {
  static const std::vector<AlgorithmModel> models = {
      {Algorithm::single_device, "single device", "make_single_device_strategy"},
      {Algorithm::weight_grad_shard, "weight-gradient sharding",
       "make_mirrored_strategy, make_weight_grad_shard_reducer"},
      {Algorithm::sharded_buckets, "sharded buckets",
       "make_mirrored_strategy, make_sharded_update_reducer"},
      {Algorithm::bucket_allreduce, "bucketed all-reduce",
       "make_mirrored_strategy, make_allreduce_reducer, SharedMemoryCommunicator"},
      {Algorithm::deterministic_shards, "deterministic micro-shards",
       "make_mirrored_strategy (deterministic_gradients), make_sharded_update_reducer, "
       "make_allreduce_reducer"},
      {Algorithm::host_copies, "tandem host", "make_host_strategy"},
      {Algorithm::keras_multi_gpu_model, "Keras multi_gpu_model", "keras.utils.multi_gpu_model"},
      {Algorithm::ring_allreduce, "ring all-reduce over links", "NCCL / DDP ring all-reduce"},
      {Algorithm::hierarchical, "MPI hierarchical",
       "make_mirrored_strategy, make_hierarchical_reducer, MpiGradientComm (bf16, "
       "deterministic)"},
  };
  return models;
}

const char* name_of(Algorithm a) {
  for (const auto& m : algorithm_models()) {
    if (m.algorithm == a) return m.name;
  }
  return "unknown";
}

Algorithm algorithm_for(const HardwareProfile& hw, const Scenario& s) {
  const bool cpu_devices = hw.device.threads > 0;
  if (s.ranks > 1) return Algorithm::hierarchical;
  if (s.strategy == StrategyKind::host) {
    if (s.devices == 1) return Algorithm::single_device;  // multi_gpu_model is not used then
    return cpu_devices ? Algorithm::host_copies : Algorithm::keras_multi_gpu_model;
  }
  if (s.deterministic && cpu_devices) return Algorithm::deterministic_shards;
  if (s.devices == 1) return Algorithm::single_device;
  if (!cpu_devices) return Algorithm::ring_allreduce;
  if (s.reducer == ReducerKind::allreduce) return Algorithm::bucket_allreduce;
  if (s.shared_parameters && s.shard_weight_gradients && s.model.dense_used_once) {
    return Algorithm::weight_grad_shard;
  }
  return Algorithm::sharded_buckets;
}

Prediction simulate(const HardwareProfile& hw, const Scenario& s, Algorithm a) {
  switch (a) {
    case Algorithm::single_device:
      return single_device(hw, s);
    case Algorithm::weight_grad_shard:
      return weight_grad_shard(hw, s);
    case Algorithm::sharded_buckets:
      return sharded_buckets(hw, s);
    case Algorithm::bucket_allreduce:
      return bucket_allreduce(hw, s);
    case Algorithm::deterministic_shards:
      return deterministic_shards(hw, s);
    case Algorithm::host_copies:
      return host_copies(hw, s);
    case Algorithm::keras_multi_gpu_model:
      return keras_multi_gpu_model(hw, s);
    case Algorithm::ring_allreduce:
      return ring_allreduce(hw, s);
    case Algorithm::hierarchical:
      return hierarchical(hw, s);
  }
  throw Error("cost model: no simulation for this algorithm");
}

}  // namespace tandem::detail
