// The cost model's simulations of replicas on devices that move bytes over links (a GPU
// profile's devices, which have no CPU threads): NCCL-style bucketed all-reduce, and Keras's
// multi_gpu_model with its weights on the host.
#pragma once

#include "advise/cost_model.h"

namespace tandem::detail {

Prediction ring_allreduce(const HardwareProfile& hardware, const Scenario& scenario);

Prediction keras_multi_gpu_model(const HardwareProfile& hardware, const Scenario& scenario);

}  // namespace tandem::detail
