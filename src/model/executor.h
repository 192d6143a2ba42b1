// Executor: runs a Graph forward and backward for one replica on one backend. It owns the
// replica's activation, activation-gradient and scratch buffers (sized once by reserve());
// parameters and gradients are the replica's flat buffers, passed in.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "core/rng.h"
#include "model/graph.h"
#include "profile/phase_timer.h"

namespace tandem::detail {

// Told, during backward, when a layer's parameter gradients are final: the reducer starts
// all-reducing a bucket as soon as the gradients it covers are all ready.
class GradReadyListener {
 public:
  virtual ~GradReadyListener() = default;
  // [offset, offset + count) of the flat gradient buffer is final for this step.
  virtual void grads_ready(int64_t offset, int64_t count) = 0;
};

class Executor {
 public:
  Executor(const Graph& graph, Backend& backend);

  // Sizes every buffer for batches up to max_batch. Allocates; call before the hot loop.
  void reserve(int64_t max_batch);
  int64_t max_batch() const { return max_batch_; }

  // x (batch, input size) -> returns the output (batch, output size), valid until the next
  // forward. batch <= max_batch. seed and first_sample place the batch in the global
  // batch's random streams (dropout).
  const float* forward(const float* x, int64_t batch, const float* params, bool training,
                       uint64_t seed = 0, int64_t first_sample = 0);
  // Where the loss writes dL/d(output) (batch, output size) before backward().
  float* output_grad() { return grads_.back().data(); }
  // Gradients of every parameter into `grads` (overwritten). grad_is_preactivation: the
  // loss differentiated through the output layer's activation (fused softmax + CE).
  // weight_grads: Dense layers hand their weight-gradient operands to it instead of
  // computing (only for graphs whose layers are each used once).
  // sample_weight: what one sample weighs in the summed gradient (the loss's grad_scale).
  void backward(const float* params, float* grads, bool grad_is_preactivation, float sample_weight,
                GradReadyListener* listener = nullptr, WeightGradSink* weight_grads = nullptr);

  // Sums across replicas for synchronized layers (null: one replica). Borrowed.
  void set_replica_sum(ReplicaSum* sum) { replica_sum_ = sum; }
  // Whether any layer sums across replicas in training.
  bool sums_across_replicas() const { return sum_size_ > 0; }
  // The most doubles one layer sums in one call.
  int64_t replica_sum_capacity() const { return sum_size_; }
  // A replica with no rows this step: makes every ReplicaSum call a training forward, or a
  // backward, would make (summing zeros); the backward one also tells listener of every
  // layer's gradients in backward's order. The other replicas meet it at the same points.
  void forward_without_rows();
  void backward_without_rows(GradReadyListener* listener);

  ActivationKind output_activation() const { return graph_.output().layer->output_activation(); }
  const Graph& graph() const { return graph_; }
  Backend& backend() { return backend_; }
  PhaseTimes& times() { return times_; }

 private:
  ForwardArgs forward_args(int node, const float* params);
  void sum_zeros(const GraphNode& node, bool backward);

  const Graph& graph_;
  Backend& backend_;
  int64_t max_batch_ = 0;
  int64_t batch_ = 0;
  bool training_ = false;
  uint64_t seed_ = 0;
  int64_t first_sample_ = 0;
  const float* input_ = nullptr;
  std::vector<AlignedBuffer> activations_;  // per node (max_batch, size); input node unused
  std::vector<AlignedBuffer> grads_;        // per node (max_batch, size); input node unused
  std::vector<AlignedBuffer> scratch_;      // per node, as the layer asks
  // Per node: pointers to its inputs' activations and gradient targets (rebuilt per call
  // without allocating).
  std::vector<std::vector<const float*>> input_ptrs_;
  std::vector<std::vector<GradTarget>> grad_targets_;
  std::vector<int> layer_uses_left_;  // per layer, during backward
  std::vector<bool> written_;         // per node, during backward: gradient holds a value
  PhaseTimes times_;
  ReplicaSum* replica_sum_ = nullptr;
  int64_t sum_size_ = 0;           // the largest replica_sum_size of any layer
  std::vector<double> sum_zeros_;  // that many, for take_part_without_rows
};

}  // namespace tandem::detail
