// The all-reduce reducer's exchange (grad_reducer.cpp, AllreduceReducer over
// shared_memory_communicator.cpp) timed on several CPU devices at once, for `tandem calibrate`:
// one bucket's gradients, which each device's backward has just written, all-reduced in shared
// memory.
#pragma once

#include <cstdint>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::detail {

// The all-reduce of one bucket on a DeviceGroup of `devices` (2 or more) one-thread devices at
// once, for buckets of each of `bytes` (ascending), as a step runs it: every device reads its
// copy of the parameters and writes its gradients (backward), then, the devices starting
// together, posts the bucket to a SharedMemoryCommunicator and waits for it (each sums its 1/n
// slice of the n buffers and copies the sum into the others: tree_sum_into_all). Seconds from
// the post to the end of the wait, the devices' mean, medians of `repeats` rounds. Throws if
// a device's gradients are not the devices' sum afterwards.
std::vector<AllreduceSeconds> allreduce_exchange(const std::vector<int64_t>& bytes, int devices,
                                                 int repeats);

// The bucket sizes calibrate times allreduce_exchange at: powers of two from 4 KiB (a small
// layer's bucket) to 64 MiB (beyond the largest layer of the validation's models, and beyond
// most shared caches). Ascending.
std::vector<int64_t> allreduce_sizes();

}  // namespace tandem::detail
