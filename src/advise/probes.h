// Micro-benchmarks of one core's memory, of cores streaming memory at once, of a hand-off
// between two threads and of tandem's device threads' wake, join and barrier, for
// `tandem calibrate`. Each is the best of `repeats` passes (the machine's capability, not
// its noise) over a buffer of `bytes`, which should be well above the last-level cache.
// Also the bf16 loops and the convolution shapes alone. The update and the deterministic
// exchange on every device at once are at_once_probes.h's; the host strategy's copies
// host_exchange_probe.h's; a dense model's weight-gradient GEMMs and steps at once
// weight_grad_probes.h's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"
#include "core/aligned_buffer.h"

namespace tandem::detail {

// A buffer of twice the last-level cache (1 GiB where the system does not say; 256 MiB to
// 4 GiB), written one float per cache line to push what the caches hold out to memory.
class CacheEvictor {
 public:
  CacheEvictor();
  void evict();
  static int64_t floats();  // the buffer's

 private:
  AlignedBuffer buffer_;
};

// One core's private cache (its L2) in bytes as the system reports it; 0 when it does not.
int64_t private_cache_bytes();

// The level 3 cache (the last level, which the cores share) in bytes, as sysfs describes cpu0's
// caches under `cpu0_cache` (index0, index1, ... each with level and size, "32768K"); 0 where
// it describes none or a size it cannot read.
int64_t shared_cache_bytes(const std::string& cpu0_cache = "/sys/devices/system/cpu/cpu0/cache");

// warm: passes back to back over the same buffers (in the cache as far as they fit);
// evicted: the caches emptied before each pass, as a step's gradient exchange finds them
// after backward and the micro-shards have streamed the whole model.
enum class Caches { warm, evicted };

// memcpy of `bytes` on one thread: bytes copied per second.
double copy_bandwidth(int64_t bytes, int repeats, Caches caches = Caches::warm);
// b[i] += a[i] over `bytes` of floats on one thread: bytes read and written per second
// (3 x bytes per pass), the measure the host strategy's gradient sum is modelled in.
double sum_bandwidth(int64_t bytes, int repeats, Caches caches = Caches::warm);
// One thread hands a flag to another and waits for it back (spinning, as tandem's device
// barrier does): seconds one way, the median of `repeats` rounds of many round trips.
double handoff_latency(int repeats);

// `threads` threads each run b += a over their own `bytes` at once: the share of one
// thread's sum_bandwidth that each gets (1: no contention), best of `repeats` rounds.
double concurrent_memory_share(int threads, int64_t bytes, int repeats);

// `threads` one-thread oneDNN GEMMs (the seed's 4096 x 2048 layer at 256 rows) at once: the
// share of one alone's speed that the slowest gets (1: no slowdown; below 1 when cores that
// all run AVX-512 clock down or share a power budget), best of `repeats` rounds.
double concurrent_compute_share(int threads, int repeats);

// What tandem's device threads cost per step: a DeviceGroup of `devices` devices runs tasks
// that each compute for twice kDeviceSpinSeconds, longer than the devices' spin and shorter
// than the caller's, as a small model's rounds do (wake and join: fork_join, the round less
// that time), and a task of barrier waits (each barrier: the extra time per wait over an
// empty task). Seconds, medians of `repeats` rounds.
struct DeviceSync {
  double fork_join = 0, barrier = 0;
};
DeviceSync device_sync(int devices, int repeats);

// The bfloat16 loops of MPI gradient compression (parallel/bf16.h, the functions the
// communication thread calls) over `floats` floats on one thread: seconds per float of each,
// best of `repeats`.
Bf16LoopSeconds bf16_loop_seconds(int64_t floats, int repeats);

// Each distinct convolution shape among `shapes` (batch ignored) timed on a CPU backend of
// `threads` threads at `batch` samples: the forward (with bias), backward-data and
// backward-weights primitives tandem's Conv2D calls (created outside the timing), best of
// `repeats` each, in seconds per sample.
std::vector<ConvShapeSeconds> conv_shape_seconds(const std::vector<Window2d>& shapes, int threads,
                                                 int64_t batch, int repeats);

}  // namespace tandem::detail
