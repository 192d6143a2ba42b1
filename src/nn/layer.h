// LayerImpl: what a layer is (shapes, parameters, config) and how it runs forward and
// backward. A LayerImpl holds no per-replica state: parameters, gradients, activations and
// scratch are passed in, so one graph serves every replica.
//
// Data layout: every tensor is a row-major (batch, size) block where size is the product of
// the per-sample shape. Images are channels-last: (batch, height, width, channels).
//
// Backward contract (every layer):
//  - grad_output may be overwritten (nobody reads it after this layer's backward);
//  - grad_inputs[i].data == nullptr: that input needs no gradient; otherwise the layer
//    writes it, or adds into it when grad_inputs[i].accumulate;
//  - parameter gradients are written, or added when accumulate_param_grads (a layer used
//    twice in one graph).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "backend/activation.h"
#include "backend/backend.h"
#include "core/rng.h"
#include "tandem/layers.h"

namespace tandem::detail {

struct ParamSpec {
  std::string name;  // "kernel", "bias"
  Shape shape;
  Initializer initializer;
  int64_t fan_in = 0, fan_out = 0;
  // A non-trainable weight is a moving average of a statistic (BatchNormalization's moving
  // mean and variance): backward writes the statistic, weighted like a gradient (times the
  // batch's samples times sample_weight), into the gradient slot, the replicas' slots are summed
  // like gradients, and the update is params = momentum * params + (1 - momentum) * slot.
  bool trainable = true;
  double momentum = 0;
};

struct GradTarget {
  float* data = nullptr;
  bool accumulate = false;
};

// Sums across the replicas of one data-parallel training step (every device, every rank),
// for a layer whose training forward or backward needs the whole global batch
// (synchronized BatchNormalization). Every replica calls sum() at the same points with the
// same n, a replica without rows this step too (Executor::forward_without_rows); data is
// then the sum over replicas, the same on each. Null in ForwardArgs: one replica.
class ReplicaSum {
 public:
  virtual ~ReplicaSum() = default;
  virtual void sum(double* data, int64_t n) = 0;
};

struct ForwardArgs {
  Backend& backend;
  int64_t batch;
  std::span<const float* const> inputs;  // each (batch, input_sizes[i])
  std::span<const int64_t> input_sizes;
  std::span<const Shape> input_shapes;  // per sample; input_sizes[i] is its product
  float* output;                        // (batch, output_size)
  int64_t output_size;
  const Shape& output_shape;  // per sample; output_size is its product
  const float* params;        // this layer's slice of the flat parameter buffer
  float* scratch;             // scratch_floats(batch) floats, kept from forward to backward
  bool training;
  // Randomness (dropout) is drawn per sample from (stream, first_sample + i): a sample gets
  // the same mask whichever replica, shard or batch position computes it.
  uint64_t stream;
  int64_t first_sample;  // position of row 0 in the global batch
  ReplicaSum* replica_sum = nullptr;
};

// Takes a layer's weight-gradient operands instead of the layer computing its weight
// gradient itself: the mirrored strategy then computes each device's shard of it over the
// whole global batch (every replica's rows), so there is nothing left to all-reduce.
class WeightGradSink {
 public:
  virtual ~WeightGradSink() = default;
  // kernel gradient (in, units) = x^T (in, rows) . dz (rows, units); bias gradient = column
  // sums of dz. Called after the layer's input gradient is computed (it no longer reads
  // its weights this step); x and dz stay valid until the step ends.
  virtual void weight_grad_operands(int64_t param_offset, const float* x, const float* dz,
                                    int64_t rows) = 0;
};

struct BackwardArgs {
  const ForwardArgs& forward;  // the same arguments as the matching forward call
  float* grad_output;          // (batch, output_size)
  // true when the loss already differentiated through this layer's output activation
  // (fused softmax + cross-entropy): grad_output is then w.r.t. the pre-activation.
  bool grad_output_is_preactivation;
  std::span<const GradTarget> grad_inputs;
  float* grads;  // this layer's slice of the flat gradient buffer
  bool accumulate_param_grads;
  WeightGradSink* weight_grads = nullptr;  // when set (Dense only): hand over, do not compute
  int64_t param_offset = 0;                // of this layer's slice, for the sink
  // What one sample of this batch weighs in the summed gradient (the loss's 1 / global
  // batch): a statistic written into a non-trainable weight's slot is multiplied by
  // batch * sample_weight, so the replicas' slots sum to the samples' weighted mean.
  float sample_weight = 0;
};

class LayerImpl {
 public:
  virtual ~LayerImpl() = default;
  virtual std::string type() const = 0;  // Keras class name: "Dense"

  // Per-sample output shape; throws ShapeError naming this layer when inputs do not fit.
  virtual Shape output_shape(const std::vector<Shape>& inputs) const = 0;
  virtual std::vector<ParamSpec> param_specs(const std::vector<Shape>& inputs) const { return {}; }
  virtual int64_t scratch_floats(const std::vector<Shape>& inputs, int64_t batch) const {
    return 0;
  }
  // Doubles this layer sums across replicas (ReplicaSum) in a training forward (backward
  // false) or in its backward; 0: it never does.
  virtual int64_t replica_sum_size(const std::vector<Shape>& inputs, bool backward) const {
    return 0;
  }
  // The activation applied last, which a loss may fuse with (softmax + cross-entropy).
  virtual ActivationKind output_activation() const { return ActivationKind::linear; }
  virtual bool is_input() const { return false; }

  virtual void forward(const ForwardArgs& args) = 0;
  virtual void backward(const BackwardArgs& args) = 0;

  // Keras-style config; layer_from_config(type(), config()) rebuilds an equal layer.
  virtual nlohmann::json config() const = 0;

  std::string name;  // unique within a model; assigned by the model when empty
};

// Rebuilds a layer from its type and config (saved models). Unknown type: ConfigError.
std::shared_ptr<LayerImpl> layer_from_config(const std::string& type, const nlohmann::json& config);

// The graph node behind a public Node.
struct NodeData {
  std::shared_ptr<LayerImpl> layer;
  std::vector<std::shared_ptr<NodeData>> inputs;
  Shape shape;  // per-sample output shape
};

// dst (n) = src, or dst += src when accumulate.
void write_or_add(float* dst, const float* src, int64_t n, bool accumulate);

// Layers whose output is their input's values in another shape (Flatten, Reshape):
// forward copies x to y; backward writes (or adds) dy into dx.
void copy_forward(const ForwardArgs& args);
void copy_backward(const BackwardArgs& args);

}  // namespace tandem::detail
