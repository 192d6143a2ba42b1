// A dense model's forward and backward GEMMs on several devices at once, as mirrored's sharded
// reducer runs them over one shared parameter buffer, against one device alone: calibrate's
// weight-gradient probe (weight_grad_probes.h, weight_grad_gemm_seconds, the `*_alone` and
// `*_shared` timings); as deterministic mode's micro-shards run them over that buffer (the
// `*_micro` timings); and as the all-reduce reducer's replicas run a step each over their own
// copy of the parameters, ending in the all-reduce of their gradients (the `*_own` timings).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "optim/optimizer_kernel.h"
#include "parallel/device_group.h"
#include "parallel/shared_memory_communicator.h"
#include "profile/phase_timer.h"

namespace tandem::detail {

// The devices' mean of how long after its own `ends[d]` the last of `ends` came, in seconds (0
// for none or one).
double mean_wait_for_last(const std::vector<Clock::time_point>& ends);

// The model Input(widths[0]) -> Dense(widths[1], relu) -> ... -> Dense(widths.back()) on a
// DeviceGroup of `devices` devices of `threads` threads each: one flat parameter buffer and
// RMSprop accumulator laid out as the model's (each kernel (in, units), then its bias), and
// each device's own gradient buffer, layer inputs (forward writes the next layer's) and output
// gradients (backward's input gradients write the previous layer's), up to `rows` rows.
// Each timed step follows an untimed one of its kind, as a run's step follows its last (for a
// model that fits the cores' caches, what the last step left where decides the time). What
// the probe leaves out of a step: the loss, the relu's derivative, the input rows' copy.
// RMSprop (Keras's and tandem train's default) whatever the model trains with.
class StepsAtOnce {
 public:
  struct Seconds {
    double forward = 0;   // the forward GEMMs (bias and relu fused, as nn/dense.cpp's)
    double backward = 0;  // the input-gradient and weight-gradient GEMMs
    // own only: the devices' mean of how long after its own backward's end the last device's
    // ended (what a device waits for the others' gradients before an exchange can finish).
    double wait = 0;
    // own only: the devices' mean of the seconds from the end of its backward to the end of
    // the all-reduce of its gradients (the wait for the others' and the exchange, as a step
    // pays them after its backward).
    double exchange = 0;
  };

  // own's passes timed, after an untimed one: their mean (the wait is heavy-tailed, and a
  // step's timing is a mean over steps).
  static constexpr int kOwnTimedPasses = 4;

  StepsAtOnce(const std::vector<int64_t>& widths, int64_t rows, int devices, int threads);

  // Device 0 alone, as single_device.cpp runs a step: forward, then per layer, last first, the
  // input gradient and the kernel's whole gradient, then the update of every parameter.
  Seconds alone(int64_t rows);

  // Every device at once, as mirrored's sharded reducer over shared parameters runs a step
  // (parallel/grad_reducer.cpp, WeightGradShardReducer): forward over the shared parameters
  // (other devices updated their shards of them in the last step), then per layer, last first,
  // the input gradient, a wait for every device's operands of the layer, the device's 1/n of
  // the kernel's gradient over every device's rows (one GEMM per device, the first writing,
  // the others accumulating; the others' operands in their cores' caches), and the update of
  // that shard (device 0 also each bias's). The devices' mean.
  Seconds shared(int64_t rows);

  // Every device at once, as mirrored.cpp's deterministic_gradients runs its micro-shards over
  // the shared parameters: the update of the device's 1/n of them from every device's
  // gradients summed there (the sharded reducer's, at the end of the last step), a wait for
  // every device's, then `local` micro-shards one after another, each a forward and a whole
  // backward (every kernel's gradient over its `rows` rows) into the device's own gradient
  // buffer, copied aside after it (a buffer per micro-shard), and the copies' sum into that
  // buffer (the copies and the sums untimed, the reducer's part). Per micro-shard, the devices'
  // mean. Unlike the step, the update takes one contiguous 1/n of the buffer, not 1/n of each
  // bucket. 1 to 64 micro-shards.
  Seconds micro_shards(int64_t rows, int local);

  // Every device at once, each over its own copy of the parameters and of RMSprop's
  // accumulator, as mirrored's all-reduce reducer runs a step (parallel/mirrored.cpp,
  // grad_reducer.cpp's AllreduceReducer): the last step's update of the device's whole copy
  // from its gradient buffer (untimed), forward, a whole backward into the device's
  // gradient buffer, whose end every device reads on one clock, and the all-reduce of that
  // buffer as one bucket over a SharedMemoryCommunicator (as the reducer's finalize posts its
  // last bucket and waits for every bucket), after which every device holds the devices' sum
  // and reads the clock again. The devices' mean, `wait` (mean_wait_for_last over the
  // backward's ends) and `exchange` (the devices' mean from their backward's end to their
  // all-reduce's), each the mean of kOwnTimedPasses passes after an untimed one. As in a step,
  // nothing lines the devices up between a pass's start and those ends: the wait holds the
  // devices' start, update, forward and backward apart. The copies start as the shared
  // parameters, on first use; from equal gradients (a new probe's are zero) they stay equal,
  // and after another pass (which leaves each device's gradients its own) they differ by the
  // first own pass's update from those, then move alike.
  // One device: no all-reduce, `wait` and `exchange` 0.
  Seconds own(int64_t rows);

  // What the last pass left, for checking it: layer `layer`'s input on `device` (rows, in),
  // the gradient of its output (rows, units), and the device's gradient buffer, each kernel
  // (in, units) at kernel_offset(layer); alone writes device 0's whole kernels, shared each
  // device's rows [d * ceil(in / n), ...) of every kernel, micro_shards every device's whole
  // kernels from its own rows (every micro-shard's, summed), and the copies aside of them
  // (each micro-shard's), own every device's whole kernels over its own copy of the parameters
  // (own_parameters: the pass's forward read them), summed over every device's rows by the
  // pass's all-reduce.
  const float* input(size_t layer, int device) const;
  const float* output_gradient(size_t layer, int device) const;
  const float* gradients(int device) const { return g_[device].data(); }
  const float* aside(int device, int micro_shard) const {
    return aside_.at(device).at(micro_shard).data();
  }
  int64_t kernel_offset(size_t layer) const { return offsets_[layer]; }
  const float* parameters() const { return w_.data(); }
  // `device`'s own copy (own; null before the first own pass).
  const float* own_parameters(int device) const {
    return own_w_.empty() ? nullptr : own_w_.at(device).data();
  }
  const float* accumulator() const { return s_.data(); }  // RMSprop's
  // The last own call's timed passes, in order (kOwnTimedPasses of them, the untimed first
  // one left out), whose mean it returned. For checking it.
  const std::vector<Seconds>& own_passes() const { return own_passes_; }
  // The mean of `passes`, field by field (zeros for none).
  static Seconds mean_of(const std::vector<Seconds>& passes);
  int64_t parameter_count() const { return params_; }
  DeviceGroup& group() { return group_; }  // its devices, for window_check.h's hand-offs

  // The update a micro-shards pass starts with, on every device at once: each device's
  // aligned 1/n of the parameters (parallel/buckets.h, aligned_share) from every device's
  // gradients summed there. For checking it.
  void summed_updates();

 private:
  float* x(size_t layer, int device);
  float* dz(size_t layer, int device);
  void check_rows(int64_t rows) const;
  Seconds devices_mean(int per) const;
  // Throws unless the parameters in `w` (what names them) read back finite: the passes ran
  // and are not optimized away.
  void check_finite(const AlignedBuffer& w, const std::string& what) const;
  // Over the parameters at `w` (the shared buffer, or a device's own copy).
  void forward(int device, const float* w, int64_t rows, Seconds& out);
  void input_gradient(int device, const float* w, size_t layer, int64_t rows, Seconds& out);
  void update(int device, int64_t begin, int64_t end);
  void summed_update(int device);
  void alone_pass(int64_t rows, Seconds& out);
  void shared_pass(int64_t rows);            // into each_
  void micro_pass(int64_t rows, int local);  // into each_
  void own_pass(int64_t rows);               // into each_, ends_, exchanged_ and g_
  void whole_backward(int device, const float* w, int64_t rows, Seconds& out);

  std::vector<int64_t> widths_;
  int64_t rows_;  // the most rows a pass may take
  int devices_;
  DeviceGroup group_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::unique_ptr<OptimizerKernel> kernel_;
  std::vector<int64_t> offsets_;  // each layer's kernel in the flat buffers
  int64_t params_ = 0;
  AlignedBuffer w_, s_;           // (params_): parameters, RMSprop's accumulator
  std::vector<AlignedBuffer> g_;  // per device, (params_)
  // Per layer l (0 .. widths_.size() - 1) and device d, at [l * devices_ + d]: x_ the layer's
  // input (rows_, widths_[l]) (the last: the model's output), dz_ the gradient of it (the
  // first: none, and not allocated).
  std::vector<AlignedBuffer> x_, dz_;
  std::vector<Seconds> each_;  // per device, the last pass's
  // Per device: a summed chunk (kUpdateChunk), the devices' gradients at it, and its copies
  // aside, as the micro-shards' passes take them (no allocation within a pass).
  std::vector<AlignedBuffer> chunks_;
  std::vector<std::vector<float*>> sources_, copies_;
  // Per device, its micro-shards' gradients copied aside (params_ each), made on first use.
  std::vector<std::vector<AlignedBuffer>> aside_;
  // Per device, its own copy of the parameters and of the accumulator (own), made on first
  // use, and when its last own pass's backward ended.
  std::vector<AlignedBuffer> own_w_, own_s_;
  std::vector<Clock::time_point> ends_;
  std::vector<Seconds> own_passes_;  // the last own call's timed passes
  // Per device, when its last own pass's all-reduce ended, and its communicator (two or more
  // devices), made on first use.
  std::vector<Clock::time_point> exchanged_;
  std::vector<std::unique_ptr<SharedMemoryCommunicator>> comms_;
  int64_t iteration_ = 0;
};

}  // namespace tandem::detail
