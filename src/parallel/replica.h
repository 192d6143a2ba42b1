// Replica: one copy of the model's working state on one device: its backend, executor,
// batch buffers and gradient buffer. Parameters are a pointer: the model's own buffer for
// replica 0 (or a single device), a private copy for the others.
#pragma once

#include <memory>
#include <span>

#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "model/executor.h"
#include "model/model_state.h"
#include "parallel/device_group.h"
#include "parallel/strategy.h"

namespace tandem::detail {

class Replica {
 public:
  // own_params: allocate a private parameter copy (else params() is the model's buffer).
  Replica(ModelState& model, int threads, bool own_params,
          BackendFactory make_backend = &make_cpu_backend);

  // Buffers for up to max_rows samples per call. Allocates.
  void reserve(int64_t max_rows);

  // Forward, loss and backward on x[rows], gradients (of the loss summed over these rows,
  // times grad_scale) written to grads(). listener hears as each layer's gradients are
  // final. rows may be empty: gradients are then zero and listener still hears every layer.
  // first_sample: where rows start in the global batch (per-sample dropout streams).
  BatchStats compute_gradients(const Samples& x, const Samples& y, std::span<const int64_t> rows,
                               float grad_scale, uint64_t seed, int64_t first_sample,
                               GradReadyListener* listener, WeightGradSink* weight_grads = nullptr);
  // Inference on x[rows]; with y, the loss and accuracy sums. Returns the output
  // (rows, output size), valid until the next call.
  const float* infer(const Samples& x, const Samples* y, std::span<const int64_t> rows,
                     BatchStats* stats);

  // Sums across replicas for synchronized layers (borrowed; null: none).
  void set_replica_sum(ReplicaSum* sum) { executor_.set_replica_sum(sum); }

  float* params() { return params_; }
  float* grads() { return grads_.data(); }
  Backend& backend() { return *backend_; }
  Executor& executor() { return executor_; }
  PhaseTimes& times() { return times_; }
  // Output of the last forward; its gradient buffer (for strategies that compute the loss
  // elsewhere, like `host`).
  float* output_grad() { return executor_.output_grad(); }
  BatchStats loss_and_grad(const float* out, int64_t n, float grad_scale);
  // Training-mode forward on x[rows] (dropout seeded by seed); the output, as infer's.
  const float* forward_train(const Samples& x, std::span<const int64_t> rows, uint64_t seed,
                             int64_t first_sample);
  // Backward from output_grad(); grad_is_preactivation as the loss decided; sample_weight is
  // the loss's grad_scale (what one row weighs in the summed gradient).
  void backward(GradReadyListener* listener, bool grad_is_preactivation, float sample_weight,
                WeightGradSink* weight_grads = nullptr);

 private:
  void gather(const Samples& x, const Samples* y, std::span<const int64_t> rows);

  ModelState& model_;
  std::unique_ptr<Backend> backend_;
  Executor executor_;
  AlignedBuffer own_params_;
  float* params_;
  AlignedBuffer grads_, x_, y_;
  bool fused_ = false;
  PhaseTimes times_;
};

// Inference on x[rows] split across the replicas of `group` (no communication): returns
// the loss and accuracy sums (with y) and writes the outputs to out (when not null).
// stats holds one entry per replica.
BatchStats split_inference(DeviceGroup& group, std::vector<std::unique_ptr<Replica>>& replicas,
                           const Samples& x, const Samples* y, std::span<const int64_t> rows,
                           float* out, std::vector<BatchStats>& stats);

}  // namespace tandem::detail
