// Strategy: how replicas are made, fed and kept in sync. The fit loop hands a strategy the
// global batch as row indices; the strategy computes, reduces and updates, and returns
// sums over the batch, so metrics are the same for any number of devices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend/backend.h"
#include "model/model_state.h"
#include "parallel/kinds.h"
#include "parallel/world.h"
#include "profile/phase_timer.h"
#include "tandem/samples.h"

namespace tandem::detail {

struct BatchStats {
  double loss_sum = 0;     // sum over samples of the per-sample loss
  double correct_sum = 0;  // sum over samples of per-sample accuracy
  int64_t samples = 0;

  BatchStats& operator+=(const BatchStats& other) {
    loss_sum += other.loss_sum;
    correct_sum += other.correct_sum;
    samples += other.samples;
    return *this;
  }
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Sizes buffers for global batches up to max_batch; allocates (not in the hot loop).
  virtual void prepare(int64_t max_batch) = 0;
  // Forward, loss, backward, gradient reduction and update on the global batch x[rows].
  virtual BatchStats train_step(const Samples& x, const Samples& y, std::span<const int64_t> rows,
                                uint64_t step_seed) = 0;
  // Loss and accuracy sums without training (dropout off).
  virtual BatchStats test_step(const Samples& x, const Samples& y,
                               std::span<const int64_t> rows) = 0;
  // out (rows.size(), output size) = model(x[rows]) in inference mode.
  virtual void predict_step(const Samples& x, std::span<const int64_t> rows, float* out) = 0;
  // Per-phase time since prepare(), averaged over replicas (a replica's view of a step);
  // steps counts train steps.
  virtual PhaseTimes times() const = 0;
};

// One device: the model's own buffers, no communication.
std::unique_ptr<Strategy> make_single_device_strategy(
    ModelState& model, int threads, BackendFactory make_backend = &make_cpu_backend);

struct StrategyOptions {
  int devices = 1;
  int threads_per_device = 0;  // <= 0: the available cores shared out
  StrategyKind kind = StrategyKind::mirrored;
  bool deterministic = false;
  int deterministic_shards = 4;  // micro-shards per global batch in deterministic mode
  int64_t bucket_bytes = 4 << 20;
  int64_t first_bucket_bytes = 1 << 20;
  // mirrored with the sharded reducer: replicas in one process read one shared parameter
  // buffer instead of a copy each (they share memory; the sharded update then writes each
  // shard once instead of N times). Measured faster (docs/PERFORMANCE.md); false gives
  // every replica its own copy.
  bool shared_parameters = true;
  // mirrored: sharded (reduce a shard, update it, share the result) or allreduce
  // (all-reduce every bucket through the Communicator, then every replica applies the
  // whole update to its own copy, as DDP does).
  ReducerKind reducer = ReducerKind::sharded;
  // sharded + shared parameters: each device computes its shard of every weight gradient
  // over the whole global batch, so no gradient is summed at all (falls back to buckets
  // when a layer is not a Dense used once, and in deterministic mode).
  bool shard_weight_gradients = true;
  BackendFactory make_backend = &make_cpu_backend;
  // Several processes (MPI ranks): each runs `devices` local devices, the global batch is
  // split over all ranks x devices, and gradients are reduced hierarchically (shared memory
  // locally, one all-reduce per bucket across processes). Null or size 1: this process.
  World* world = nullptr;
  GradientCommOptions gradient_comm;
};

// Several devices (threads pinned to core groups) in this process.
//   mirrored: a replica per device, buckets reduced during backward, sharded update.
//   host:     keras.utils.multi_gpu_model's design, kept as a measurable baseline.
// One device, not deterministic, mirrored: the single-device strategy.
std::unique_ptr<Strategy> make_strategy(ModelState& model, const StrategyOptions& options);
std::unique_ptr<Strategy> make_mirrored_strategy(ModelState& model, const StrategyOptions& options);
std::unique_ptr<Strategy> make_host_strategy(ModelState& model, const StrategyOptions& options);

// Splits n rows into `parts` contiguous runs as evenly as possible (the first n % parts
// get one more): part p is [begin(p), begin(p + 1)).
inline int64_t split_begin(int64_t n, int parts, int p) {
  return n / parts * p + std::min<int64_t>(p, n % parts);
}

}  // namespace tandem::detail
