// The cost model behind `tandem advise` and the report's `predicted` column: the time of a
// training step on N devices of a hardware profile, phase by phase, under the algorithm the
// scenario runs (advise/algorithms.h: one simulation per strategy and reducer, each
// following the code in src/parallel that it mirrors).
//
// A model is its layers' costs per sample: GEMM FLOPs (Dense, at the device's dense rate,
// which falls for few rows per device), convolution FLOPs (Conv2D, at the device's
// convolution rate) and the bytes that memory-bound layers move (pooling, normalization,
// concatenation, element-wise), at the device's memory bandwidth; parameters for the
// copies, the all-reduce and the update.
//
// On devices that move bytes over links (GPUs) the simulations are small event simulations
// over the layers in the order the step runs them: each resource (a device, a link
// direction, the host) does one thing at a time, and a task starts when its inputs are
// ready and its resource is free (how TensorFlow's dataflow executor overlapped
// multi_gpu_model's copies with compute, and how DDP overlaps buckets with backward). CPU
// devices reduce with their own cores, so their step is the sum of its parts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"
#include "parallel/kinds.h"

namespace tandem {
class Model;
}

namespace tandem::detail {

// What one layer costs per sample. GEMM layers' element-wise work (bias, activation and its
// gradient) is inside their calibrated FLOP rate; other layers only move bytes.
// memory: a layer that streams bytes; pool: one of those on the backend's pooling kernels
// (MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D), whose speed calibrate measures.
enum class CostKind { dense, conv, pool, memory };

struct LayerCost {
  std::string name;  // the layer's, for explanations
  CostKind kind = CostKind::dense;
  // A convolution's shape (batch 1), to find its own measured speed in the profile
  // (device.conv_shapes), and whether its backward computes the input gradient (not when
  // it reads the model's input).
  Window2d window;
  bool backward_data = true;
  int64_t params = 0;  // floats copied, reduced and updated (non-trainable ones included)
  double forward_flops = 0, backward_flops = 0;  // per sample; backward: weight and input
  double forward_bytes = 0, backward_bytes = 0;  // per sample, read + written (memory kind)
};

// The measured primitives of this convolution's shape among `shapes`; null when none (or
// the layer is not a convolution).
const ConvShapeSeconds* conv_shape_of(const std::vector<ConvShapeSeconds>& shapes,
                                      const LayerCost& layer);
// Seconds per sample of a measured shape's primitives in one pass of `layer`: forward, or
// backward weights plus backward data where the layer computes its input gradient.
double conv_primitive_seconds(const ConvShapeSeconds& shape, const LayerCost& layer, bool backward);

struct ModelCost {
  std::vector<LayerCost> layers;  // in the order forward runs them
  int64_t input_size = 0;         // floats per sample
  std::vector<int64_t> widths;    // a Dense stack made by dense(): its widths (dense_rates)
  // Every layer with parameters is a Dense called once (what weight-gradient sharding
  // needs; mirrored.cpp's dense_layers_used_once).
  bool dense_used_once = true;
  // widths: input, hidden..., output (784, 4096, 2048, 512, 64, 10 for the seed).
  static ModelCost dense(const std::vector<int64_t>& widths);
  // Any model tandem builds (Dense, Conv2D and the image layers): ConfigError naming a layer
  // whose cost it does not know.
  static ModelCost of(const Model& model);
  int64_t params() const;
  // FLOPs of one training step on `rows` samples (forward, weight and input gradients).
  double step_flops(int64_t rows) const;
  bool has_conv() const;
};

struct Scenario {
  ModelCost model;
  int64_t batch = 128;  // global; with per_device_batch, per device
  // The batch grows with the devices (the blog post's rule: 64 per device), so N devices
  // run N times the samples per step; speedups are then in samples per second.
  bool per_device_batch = false;
  int devices = 1;
  StrategyKind strategy = StrategyKind::mirrored;
  // mirrored's options (StrategyOptions): the reducer, deterministic micro-shards, one shared
  // parameter buffer per process, weight-gradient sharding.
  ReducerKind reducer = ReducerKind::sharded;
  bool deterministic = false;
  int deterministic_shards = 4;
  bool shared_parameters = true;
  bool shard_weight_gradients = true;
  int ranks = 1;  // MPI processes, each with `devices` devices
  int64_t bucket_bytes = 4 << 20;
  int64_t first_bucket_bytes = 1 << 20;
  bool bf16 = false;                              // gradients cross ranks or links as bfloat16
  AllreduceKind allreduce = AllreduceKind::ring;  // tree: binary tree reduce, then broadcast
  bool overlap = true;                            // buckets start during backward (false: after it)
  int update_passes = 5;    // floats read + written per parameter by the update (RMSprop 5)
  int64_t samples = 60000;  // per epoch
  int epochs = 5;
};

struct Prediction {
  int devices = 1;
  StrategyKind strategy = StrategyKind::mirrored;
  std::string algorithm;    // the simulation that made it (advise/algorithms.h)
  bool model_rate = false;  // the dense rate measured on this very model (dense_rates) was used
  double step_seconds = 0, epoch_seconds = 0, total_seconds = 0;
  double speedup = 1;  // vs 1 device of the same profile
  // Seconds per step on the critical path, by phase: compute, weights_to_devices,
  // gradients_to_host, host_update, allreduce (exposed), optimizer, input, overhead.
  std::map<std::string, double> phases;
  // Busy time per step of each resource, overlapped or not (for explanations).
  std::map<std::string, double> busy;
  std::string bottleneck;  // the phase that takes the most of the step
};

// Solves the device's sustained FLOP/s so that one device trains the calibration run
// ({"widths", "batch", "samples", "epochs", "seconds"}) in the given seconds.
void calibrate_device(HardwareProfile& hardware, const nlohmann::json& calibration,
                      const std::string& where);

// The same from one measured step of the dense model `widths` at `batch` on one device (the
// benchmarks recalibrate a profile with their own run this way).
void calibrate_to_step(HardwareProfile& hardware, const std::vector<int64_t>& widths, int64_t batch,
                       double step_seconds);
// Solves the device's convolution FLOP/s so that one device trains one step of `model` at
// `batch` in step_seconds (its dense and memory-bound parts at the profile's rates).
void calibrate_conv_to_step(HardwareProfile& hardware, const ModelCost& model, int64_t batch,
                            double step_seconds, const std::string& where);
// The same from the seconds one step of `model` at `batch` spent in its convolutions,
// measured inside the step (calibrate times the backend's kernels): a measured shape then
// costs conv_step_scale x its primitives' seconds alone, and the rest of the step is left to
// the profile's other figures (not solved from it). Without measured shapes: conv_flops.
void calibrate_conv_to_conv_seconds(HardwareProfile& hardware, const ModelCost& model,
                                    int64_t batch, double conv_seconds, const std::string& where);
// Solves device.pool_scale from the seconds one step of `model` at `batch` spent in its
// pooling kernels, measured inside the step. A model without pooling layers: unchanged.
void calibrate_pool_to_pool_seconds(HardwareProfile& hardware, const ModelCost& model,
                                    int64_t batch, double pool_seconds, const std::string& where);
// One device's predicted step of `model` at `batch`.
double one_device_step_seconds(const HardwareProfile& hardware, const ModelCost& model,
                               int64_t batch);

// The rate curve the profile measured on this very model (its widths), which predict uses in
// place of the profile's general rate; nullptr where it has none.
const DenseRateCurve* own_dense_rate(const HardwareProfile& hardware, const ModelCost& model);

// ConfigError for a batch smaller than the devices, an unknown strategy or an empty
// model. More devices than the profile has are predicted as if the system had that many
// of the same devices and links (the caller says it extrapolates).
Prediction predict(const HardwareProfile& hardware, const Scenario& scenario);
// Predictions for every device count (speedups relative to the 1-device prediction).
std::vector<Prediction> predict_all(const HardwareProfile& hardware, Scenario scenario,
                                    const std::vector<int>& devices);

}  // namespace tandem::detail
