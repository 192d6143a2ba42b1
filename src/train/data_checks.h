// Checks that data fits a model before any work starts, with errors that name both shapes.
#pragma once

#include <string>

#include "model/model_state.h"
#include "tandem/samples.h"

namespace tandem::detail {

// x's per-sample shape must equal the model's input shape.
void check_inputs(const ModelState& model, const Samples& x, const std::string& where);
// x and y line up, y fits the loss (one-hot width, or integer labels in range).
void check_targets(const ModelState& model, const Samples& x, const Samples& y,
                   const std::string& where);
void check_batch_size(int64_t batch_size, const std::string& where);

}  // namespace tandem::detail
