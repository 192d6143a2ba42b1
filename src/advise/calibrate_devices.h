// What several CPU devices share or pay per step, measured by `tandem calibrate` without
// training on them (probes.h, at_once_probes.h, host_exchange_probe.h, allreduce_probe.h):
// memory streamed by every device's core at once, GEMMs computed at once, the device threads'
// wake, join and barrier, the bf16 loops of MPI gradient compression, the update on every device
// at once, deterministic mode's exchange, the host strategy's copies and the all-reduce
// reducer's exchange; and how the profile holds each figure, with its source.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"
#include "advise/probes.h"

namespace tandem::detail {

struct DeviceProbes {
  int devices = 1, threads = 1;
  int64_t probe_bytes = 0;  // the buffers of the memory share's passes
  double share = 1, compute_share = 1;
  DeviceSync sync;
  DeviceProfile bf16;                        // its bf16_loops
  std::vector<UpdateContention> contention;  // none for one device
  ProbeWindow contention_window;             // where it ran
  int64_t shared_cache = 0;                  // bytes; 0 where the system reports none
  std::vector<ExchangeSeconds> exchange;     // none for one device
  int exchange_shards = 1;                   // each device's share of the default micro-shards
  int64_t private_cache = 0;                 // bytes; 0 where the system reports none
  std::vector<HostExchangeSeconds> host;     // none for one device
  std::vector<AllreduceSeconds> allreduce;   // none for one device
};

// Measures the probes for `devices` devices of `threads` threads (the shares, the
// synchronisation, the update, the exchange, the host's copies and the all-reduce only for 2 or
// more), a line of each to `log`.
DeviceProbes probe_devices(int devices, int threads, int64_t probe_bytes, std::ostream& log);

// Writes the probes' figures into profile["device"] and their sources into `sources`.
void add_device_probes(const DeviceProbes& probes, nlohmann::json& profile,
                       nlohmann::json& sources);

}  // namespace tandem::detail
