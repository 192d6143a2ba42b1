// Micro-benchmarks of one core's memory and of a hand-off between two threads, for
// `tandem calibrate`. Each is the best of `repeats` passes (the machine's capability, not
// its noise) over a buffer of `bytes`, which should be well above the last-level cache.
#pragma once

#include <cstdint>

namespace tandem::detail {

// memcpy of `bytes` on one thread: bytes copied per second.
double copy_bandwidth(int64_t bytes, int repeats);
// b[i] += a[i] over `bytes` of floats on one thread: bytes read and written per second
// (3 x bytes per pass), the measure the host strategy's gradient sum is modelled in.
double sum_bandwidth(int64_t bytes, int repeats);
// One thread hands a flag to another and waits for it back (spinning, as tandem's device
// barrier does): seconds one way, the median of `repeats` rounds of many round trips.
double handoff_latency(int repeats);

}  // namespace tandem::detail
