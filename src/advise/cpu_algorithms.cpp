#include "advise/cpu_algorithms.h"

#include <algorithm>
#include <optional>

#include "advise/step_costs.h"
#include "advise/weight_grad_costs.h"

namespace tandem::detail {
namespace {

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

// A step whose backward fills each replica's whole gradient buffer, then `reduce` on the same
// cores and a barrier.
Prediction full_backward_then(const HardwareProfile& hw, const Scenario& s,
                              void (*reduce)(const HardwareProfile&, const Scenario&,
                                             Prediction&)) {
  const int64_t rows = rows_per_device(s);
  Prediction p = cpu_step_start(hw, s, rows);
  p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  reduce(hw, s, p);
  p.phases["overhead"] += hw.device.barrier;
  return finish_prediction(p);
}

}  // namespace

// single_device.cpp: forward, backward, the whole update, on the calling thread.
Prediction single_device(const HardwareProfile& hw, const Scenario& s) {
  const int64_t rows = rows_per_device(s);
  Prediction p = cpu_step_start(hw, s, rows);
  p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  p.phases["optimizer"] = update_seconds(hw, s, static_cast<double>(s.model.params()));
  return finish_prediction(p);
}

// grad_reducer.cpp, WeightGradShardReducer (mirrored, sharded reducer, shared parameters,
// every layer with parameters a Dense used once): each device runs backward's input
// gradients on its rows, hands over its operands per layer, and computes 1/N of every
// weight gradient over the whole batch (N GEMMs of its rows of the kernel, one per replica's
// rows: as many FLOPs as its own rows' weight gradient), then updates that 1/N; nothing is
// summed. Its forward and backward come from calibrate's timing of the model's steps, all
// devices at once over one shared parameter buffer: below kRatioFromRows rows per device the
// seconds that timing gives them at its rows (shared_steps_seconds), from it one device's
// (without the devices' shares) times the probe's shared pass over its alone pass
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
  const std::optional<double> ratio =
      rows >= kRatioFromRows ? shared_steps_over_alone(hw.device, rows, n) : std::nullopt;
  if (ratio) {
    p.phases["compute"] =
        (forward_seconds(hw.device, s.model, rows) + backward_seconds(hw.device, s.model, rows)) *
        *ratio;
  } else if (const std::optional<double> seconds =
                 shared_steps_seconds(hw.device, s.model, rows, n)) {
    p.phases["compute"] = *seconds;
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
  return finish_prediction(p);
}

// grad_reducer.cpp, ShardedUpdateReducer (mirrored, sharded reducer, when weight-gradient
// sharding does not apply: convnets, shared layers, shared_parameters off): full backward
// into each replica's gradient buffer, then sharded_bucket_work on the same cores.
Prediction sharded_buckets(const HardwareProfile& hw, const Scenario& s) {
  return full_backward_then(hw, s, sharded_bucket_work);
}

// mirrored.cpp with the all-reduce reducer: full backward into each replica's gradient buffer,
// then allreduce_bucket_work.
Prediction bucket_allreduce(const HardwareProfile& hw, const Scenario& s) {
  return full_backward_then(hw, s, allreduce_bucket_work);
}

// mirrored.cpp, deterministic_gradients: each device computes its micro-shards one after
// another (shards / devices of them over all ranks, B / shards rows each), copies each
// shard's gradients aside and sums them in a fixed tree (tree_sum) into its buffer. In one
// process over one shared parameter buffer (the sharded reducer over shared parameters) the
// micro-shards take one device's steps alone times what calibrate's timing of them, all
// devices at once over such a buffer, says (micro_shards_over_alone); otherwise (each device
// its own copy, MPI ranks) or in profiles without that timing, one device's steps slowed by
// the devices' shares.
Prediction deterministic_start(const HardwareProfile& hw, const Scenario& s) {
  const int n = s.devices * s.ranks;
  const int shards = std::max(s.deterministic_shards, n);
  const int local = shards / n;
  const int64_t shard_rows = (global_batch(s) + shards - 1) / shards;
  Prediction p = cpu_step_start(hw, s, shard_rows);
  const DeviceProfile& d = hw.device;
  const std::optional<double> at_once =
      s.ranks == 1 && one_parameter_buffer(s)
          ? micro_shards_over_alone(d, shard_rows, s.devices, local)
          : std::nullopt;
  if (at_once) {
    p.phases["compute"] =
        local *
        (forward_seconds(d, s.model, shard_rows) + backward_seconds(d, s.model, shard_rows)) *
        *at_once;
  } else {
    const Shares shares = devices_share(hw, s);
    p.phases["compute"] = local * (forward_seconds(d, s.model, shard_rows, shares) +
                                   backward_seconds(d, s.model, shard_rows, shares));
  }
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
  return finish_prediction(p);
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
  Prediction out = finish_prediction(p);
  out.busy["weights_to_devices"] = p.phases["weights_to_devices"];
  out.busy["gradients_to_host"] = p.phases["gradients_to_host"];
  out.busy["host_update"] = p.phases["host_update"];
  return out;
}

}  // namespace tandem::detail
