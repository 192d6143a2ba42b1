// A dense model's weight-gradient GEMMs timed as weight-gradient sharding runs them, and its
// forward and backward with every device at once over one shared parameter buffer, for
// `tandem calibrate` and `tandem bench validate` (the profile's weight_grad_gemms).
#pragma once

#include <cstdint>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::detail {

// A dense model's weight-gradient GEMMs (Input(widths[0]) -> Dense(widths[1]) -> ...) on one
// device of `threads` threads at each of `rows` rows: every kernel's whole gradient over the
// rows (what one device computes), and for each of `devices` (2 or more; others ignored) the
// shard device 0 of that many computes under weight-gradient sharding (WeightGradShardReducer:
// the first 1/N of the kernel's input rows, one GEMM per replica's `rows` rows, the first
// writing and the others accumulating; the replicas' operands are one buffer here, so the
// others' come from this core's cache, where in a step another core wrote them), layers in
// backward order; each pass warm (right after the same pass) and with the caches emptied
// before it; and as a step runs them (`*_step`): after the update of every parameter and
// forward's read of them, each layer's input-gradient GEMM before its weight gradient, each
// replica's operands its own buffer, a shard's update after its GEMMs; and the model's forward
// and backward GEMMs as device 0 alone runs a step and as the n devices at once run the
// sharded reducer's over one shared parameter buffer, and as they run deterministic mode's
// micro-shards over it (steps_at_once.h, as many per device as the default 4 over all devices
// give; for a power of two of devices only), and as they run a step each over its own copy
// of the parameters, with the wait for the last device's backward and the all-reduce of the
// gradients after it (one device count after
// another, after the other timings' rounds). Best of `repeats` rounds, interleaved over the rows
// (the steps at once also their median); seconds summed over the layers; one entry per device
// count, ascending, each with the same whole GEMMs.
std::vector<WeightGradShards> weight_grad_gemm_seconds(const std::vector<int64_t>& widths,
                                                       const std::vector<int64_t>& rows,
                                                       const std::vector<int>& devices, int threads,
                                                       int repeats);

}  // namespace tandem::detail
