// Non-trainable weights inside the flat parameter buffer (BatchNormalization's moving mean
// and variance): their ranges are not updated by the optimizer's rule but as moving averages
// of the statistic their gradient slot carries,
//   params[i] = momentum * params[i] + (1 - momentum) * slot[i]     (Keras's update)
// so every strategy, reducer and shard that runs OptimizerKernel::update over any
// [begin, end) updates them too, from the same summed slots.
#pragma once

#include <memory>
#include <vector>

#include "optim/optimizer_kernel.h"

namespace tandem::detail {

struct MovingAverageRange {
  int64_t begin = 0, end = 0;  // floats of the parameter buffer, sorted, not overlapping
  double momentum = 0.99;
};

// `rule` everywhere except `ranges`, which get the moving-average update. No ranges: rule.
std::unique_ptr<OptimizerKernel> with_moving_averages(std::unique_ptr<OptimizerKernel> rule,
                                                      std::vector<MovingAverageRange> ranges);

}  // namespace tandem::detail
