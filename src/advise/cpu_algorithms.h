// The cost model's simulations of tandem's algorithms on CPU devices in one process, one
// function each; the comment on each definition names the code in src/parallel it mirrors.
// deterministic_start is also the first part of the MPI ranks' deterministic step.
#pragma once

#include "advise/cost_model.h"

namespace tandem::detail {

Prediction single_device(const HardwareProfile& hardware, const Scenario& scenario);

Prediction weight_grad_shard(const HardwareProfile& hardware, const Scenario& scenario);

Prediction sharded_buckets(const HardwareProfile& hardware, const Scenario& scenario);

Prediction bucket_allreduce(const HardwareProfile& hardware, const Scenario& scenario);

Prediction deterministic_start(const HardwareProfile& hardware, const Scenario& scenario);

Prediction deterministic_shards(const HardwareProfile& hardware, const Scenario& scenario);

Prediction host_copies(const HardwareProfile& hardware, const Scenario& scenario);

}  // namespace tandem::detail
