// Loss and metrics over a whole dataset, in batches, without training.
#pragma once

#include "model/model_state.h"
#include "parallel/strategy.h"
#include "train/progress.h"

namespace tandem::detail {

// {"loss": mean loss, "accuracy": mean accuracy (when compiled with it)}.
Logs evaluate_batches(Strategy& strategy, const Compiled& compiled, const Samples& x,
                      const Samples& y, int64_t batch_size, Progress* progress = nullptr);

}  // namespace tandem::detail
