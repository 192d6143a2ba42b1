// A dense model's backward GEMMs timed as a training step runs them, for calibrate's
// weight-gradient probe (weight_grad_probes.h, weight_grad_gemm_seconds, the `*_step` timings).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "optim/optimizer_kernel.h"

namespace tandem::detail {

// The model Input(widths[0]) -> Dense(widths[1]) -> ... on one device of `threads` threads:
// one flat parameter, gradient and RMSprop accumulator buffer laid out as the model's (each
// kernel (in, units), then its bias), and each of `replicas` replicas' own layer inputs and
// output gradients, up to `rows` rows. Before each pass, what a step runs between one
// backward and the next: the update of every parameter (the other devices' shards included:
// they share the last-level cache) and forward's read of them; so the gradients and
// parameters are in the caches as far as that traffic leaves them, neither warm from the same
// pass nor emptied. RMSprop (Keras's and tandem train's default) whatever the model trains with.
class StepGemms {
 public:
  struct Seconds {
    double input = 0;   // the input-gradient GEMMs (none for the first layer)
    double weight = 0;  // the weight-gradient GEMMs: whole kernels, or one device's shards
  };

  StepGemms(const std::vector<int64_t>& widths, int64_t rows, int replicas, int threads);

  // One device's backward GEMMs (nn/dense.cpp, Dense::backward): per layer, last first, the
  // input gradient dx (rows, in) = dz . kernel^T, then the kernel's whole gradient
  // x^T (in, rows) . dz (rows, units).
  Seconds whole(int64_t rows);

  // Device 0 of n (<= replicas) under weight-gradient sharding (parallel/grad_reducer.cpp,
  // WeightGradShardReducer::process_layer): per layer, its input gradient, then the first 1/n
  // of the kernel's gradient over every replica's rows (the first GEMM writing, the others
  // accumulating), then the update of that shard. Device 0 also sums and updates every bias,
  // a few hundred floats a layer, which this leaves out.
  Seconds shard(int64_t rows, int n);

 private:
  const float* x(size_t layer, int replica) const;
  const float* dz(size_t layer, int replica) const;
  void input_gradient(size_t layer, int64_t rows);
  void update(int64_t begin, int64_t end);
  void between_steps();

  std::vector<int64_t> widths_;
  int replicas_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<OptimizerKernel> kernel_;
  std::vector<int64_t> offsets_;  // each layer's kernel in the flat buffers
  int64_t params_ = 0;
  AlignedBuffer w_, g_, s_;
  std::vector<AlignedBuffer> x_, dz_, dx_;  // x_ and dz_: layer * replicas_ + replica
  int64_t iteration_ = 0;
};

}  // namespace tandem::detail
