// The host strategy's copies (host.cpp) timed on several CPU devices at once, for `tandem
// calibrate`: the weights every device copies from the host's buffer, which the update on
// every device's core has just written, and the sum of the devices' gradient buffers, which
// each device's backward has just written, into the host's.
#pragma once

#include <cstdint>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::detail {

// host.cpp's exchange on a DeviceGroup of `devices` (2 or more) devices of `threads` threads
// at once, for parameters of each of `bytes` (ascending), as a step runs it: every device
// reads its copy of the weights and writes its gradients (backward), then sums its 1/n of the
// n gradient buffers into the host's (tree_sum over aligned_share, timed: `sum`) and updates
// the host's weights there (RMSprop's kernel); then, in the next DeviceGroup::run as the next
// step, every device copies the host's whole weights into its own (timed: `copy`). Seconds,
// the devices' mean, medians of `repeats` rounds. Throws if a device's weights are not the
// host's updated weights afterwards.
std::vector<HostExchangeSeconds> host_exchange(const std::vector<int64_t>& bytes, int devices,
                                               int threads, int repeats);

// The parameter sizes calibrate times host_exchange at for `devices` devices: powers of two from
// 64 KiB up to the larger of the core's private cache (`private_cache` bytes; 1 MiB where
// unknown, 0) and the largest size whose buffers fit the shared cache (`shared_cache` bytes,
// 0 where unknown: the host's weights, summed gradients and RMSprop accumulator and every
// device's weights and gradients, 2 x devices + 3 buffers), in whole 4 KiB pages, and that
// size itself; never over 16 MiB. Ascending. A model between the two caches (784-256-256-10's
// 1.08 MB on the Zen 4's 1 MiB L2 and 32 MiB L3) is copied in the shared cache, which the
// private cache's sizes left untimed (measured, not used by the model: docs/SCALING.md, "Quiet
// windows, and the host's copies up to the shared cache").
std::vector<int64_t> host_exchange_sizes(int64_t private_cache, int64_t shared_cache, int devices);

}  // namespace tandem::detail
