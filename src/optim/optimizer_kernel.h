// OptimizerKernel: the update rule as a flat loop over [begin, end) of the parameter buffer,
// so it can run on whole buffers, on buckets, or on one replica's shard.
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/optimizers.h"

namespace tandem::detail {

class OptimizerKernel {
 public:
  virtual ~OptimizerKernel() = default;
  // Accumulator buffers the rule needs, each as large as the parameter buffer.
  virtual int state_slots() const = 0;
  // One update of params[begin, end) from grads; state[s] is slot s's buffer. iteration
  // counts updates from 1 (Adam's bias correction). origin: where index 0 of the three
  // pointers sits in the whole parameter buffer (a caller may pass views into a shard),
  // so rules that differ by position (moving averages) find their ranges.
  virtual void update(float* params, const float* grads, float* const* state, int64_t begin,
                      int64_t end, int64_t iteration, double learning_rate, int threads,
                      int64_t origin) const = 0;
};

// Validates hyper-parameters (ConfigError naming the one at fault) and makes the kernel.
std::unique_ptr<OptimizerKernel> make_optimizer_kernel(const Optimizer& config);

}  // namespace tandem::detail
