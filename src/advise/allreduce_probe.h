// The all-reduce reducer's exchange (grad_reducer.cpp, AllreduceReducer over
// shared_memory_communicator.cpp) timed on several CPU devices at once, for `tandem calibrate`:
// one bucket's gradients, which each device's backward has just written, all-reduced in shared
// memory.
#pragma once

#include <cstdint>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::detail {

// The all-reduce of one bucket on a DeviceGroup of `devices` (2 or more) devices of `threads`
// threads (placed as a run places them; the all-reduce runs on each device's calling thread) at
// once, for buckets of each of `bytes` (ascending; at least 16 floats per device, a size that
// gives no more floats than the one before skipped), as a step runs it: every device reads its
// copy of the parameters and writes its gradients (backward), then, the devices starting
// together, posts the bucket to a SharedMemoryCommunicator and waits for it (each sums its 1/n
// slice of the n buffers and copies the sum into the others: tree_sum_into_all). Seconds from
// the post to the end of the wait, the devices' mean, medians of `repeats` rounds. Throws if
// a device's gradients are not the devices' sum afterwards (at both ends of every device's
// slice).
std::vector<AllreduceSeconds> allreduce_exchange(const std::vector<int64_t>& bytes, int devices,
                                                 int threads, int repeats);

// The bucket sizes calibrate times allreduce_exchange at for `devices` devices: powers of two
// from 4 KiB (a small layer's bucket), or the first at least a cache line per device, to 64 MiB
// (beyond the largest layer of the validation's models, and beyond most shared caches).
// Ascending.
std::vector<int64_t> allreduce_sizes(int devices);

}  // namespace tandem::detail
