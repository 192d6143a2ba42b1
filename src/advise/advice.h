// The advice `tandem advise` and `tandem bench scaling` print: from the cost model's
// predictions, in plain words, what limits the largest configuration and the smallest change
// that makes N devices pay.
#pragma once

#include <string>
#include <vector>

#include "advise/cost_model.h"

namespace tandem::detail {

// Plain-words advice: what limits the largest configuration and the smallest change that
// makes N devices pay (per-device batch, strategy, bucket size, compression, interconnect).
std::vector<std::string> advise(const HardwareProfile& hardware, const Scenario& scenario,
                                const std::vector<Prediction>& predictions);

}  // namespace tandem::detail
