// The costs the cost model's simulations (algorithms.h) are built from: a layer's and a
// model's seconds on one device at a row count (the device's measured curve), the shares of
// one device's speed that devices running at once keep, the update, the gradient buckets
// and the start and end of a CPU-device step. Internal to src/advise.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "advise/cost_model.h"

namespace tandem::detail {

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
                     Shares share = {});

// A model's forward (backward) seconds on one device: its layers' layer_seconds.
double forward_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows, Shares share = {});

double backward_seconds(const DeviceProfile& d, const ModelCost& m, int64_t rows,
                        Shares share = {});

// Seconds to move `bytes` over `link`: its latency, then the bytes at its bandwidth.
double transfer_seconds(const LinkProfile& link, double bytes);

// The rows the busiest device computes (the global batch is split over every rank's devices).
int64_t rows_per_device(const Scenario& s);

// The batch over every rank's devices.
int64_t global_batch(const Scenario& s);

// What each of k devices keeps of one device's memory bandwidth when all stream at once.
double memory_share(const HardwareProfile& hw, int k);

// The shares each device keeps while all of the scenario's devices run at once. With the
// size of the cache the cores share (and one process), weights that fit it do not stream from
// memory, and the memory share is 1: one buffer per process for mirrored's sharded reducer
// over shared parameters, one per device otherwise. On the Zen 4 of docs/SCALING.md ("The
// update on several devices at once") the 784-256-256-10 model's 2-device compute at 16 rows
// took 0.88-1.07 times the 1-device steps at 16 rows, where the memory share made it about 1.2.
Shares devices_share(const HardwareProfile& hw, const Scenario& s);

// Whether a process's devices share one parameter buffer (mirrored.cpp: not own_copies, the
// sharded reducer over shared parameters); otherwise each device keeps its own copy.
bool one_parameter_buffer(const Scenario& s);

// The update's seconds in the measured steps of the model being predicted at `rows` (its
// curve's points, in log rows between two of them, the nearest end's beyond them); 0 where
// the points do not hold them.
double measured_update_seconds(const DeviceProfile& d, int64_t rows);

enum class UpdateOf { own_copy, shared_shard };

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
double update_seconds(const HardwareProfile& hw, const Scenario& s, double params,
                      UpdateOf of = UpdateOf::own_copy);

// Gradient buckets as make_buckets (src/parallel/buckets.cpp) forms them: layers in backward
// order, a bucket closed once it holds the first (then the regular) bucket's bytes.
struct ModelBucket {
  double params = 0;
};

std::vector<ModelBucket> model_buckets(const Scenario& s);

// The model's layers with parameters (each hands its gradients over once).
int layers_with_params(const ModelCost& m);

// The costs every CPU-device algorithm shares: waking the devices and joining them
// (DeviceGroup::run), the input rows, forward and the step's fixed overhead.
Prediction cpu_step_start(const HardwareProfile& hw, const Scenario& s, int64_t rows);

// Sums the phases into the step's seconds and fills the busy times of the devices and the
// reduction.
Prediction finish_prediction(Prediction p);

// Whether the model's parameters (and so its gradients) do not fit in one core's private
// cache, or its size is not known.
bool outgrows_private_cache(const DeviceProfile& d, const ModelCost& m);

// Whether a step's gradient buffers have left the core's cache by the time they are summed
// and exchanged: the profile measured the cold rates and the model outgrows the core's cache.
bool gradients_evicted(const DeviceProfile& d, const ModelCost& m);

// A Dense layer's rate at `rows` rows per device: sustained_flops * r / (r + half_rows). From
// the device's line, or where the device carries the measured steps of the model predicted
// (row_points), from the tangent to that curve at `rows`: between two measured row counts
// the curve is a power law through both (steps grow less than in proportion to the rows
// there); beyond the largest, the line through the last two (the steps grow in proportion
// by then); below the smallest, the first two's power law. The tangent's intercept is the
// fixed part (at most the whole step, never negative), so one device's compute at `rows` is
// the curve's value there.
struct RowRate {
  double sustained_flops = 0, half_rows = 0;
};
RowRate dense_rate_at(const DeviceProfile& device, int64_t rows);

}  // namespace tandem::detail
