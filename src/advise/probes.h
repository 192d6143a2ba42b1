// Micro-benchmarks of one core's memory, of cores streaming memory at once, of a hand-off
// between two threads and of tandem's device threads' wake, join and barrier, for
// `tandem calibrate`. Each is the best of `repeats` passes (the machine's capability, not
// its noise) over a buffer of `bytes`, which should be well above the last-level cache.
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
// that each compute for twice kDeviceSpinSeconds, as a step's forward and backward outlast
// the caller's spin (wake and join: fork_join, the round less that time), and a task of
// barrier waits (each barrier: the extra time per wait over an empty task). Seconds,
// medians of `repeats` rounds.
struct DeviceSync {
  double fork_join = 0, barrier = 0;
};
DeviceSync device_sync(int devices, int repeats);

// The optimizer's update (RMSprop's kernel, `threads` threads per device) on a DeviceGroup of
// `devices` (2 or more) devices at once against device 0 alone, for parameters of each of
// `bytes` (ascending): before each timed update every device writes its gradients and reads
// the parameters it will update (as backward and forward leave them). Alone: device 0 updates
// one whole buffer. own: every device updates the whole of its own copy (the devices' mean
// timed, as the step's phases are), over alone. shard: every device reads one shared buffer whole,
// then updates its 1/n of it, over alone / n. Medians of `repeats` rounds, the three interleaved.
std::vector<UpdateContention> update_contention(const std::vector<int64_t>& bytes, int devices,
                                                int threads, int repeats);

// Deterministic mode's exchange in one process (mirrored.cpp, deterministic_gradients) on a
// DeviceGroup of `devices` (2 or more) devices at once, for gradients of each of `bytes`
// (ascending): every device reads its parameters and writes its gradients (as backward leaves
// them), copies them aside, and so for each of its `shards` micro-shards, then sums the copies
// in the fixed tree (tree_sum) into its gradient buffer; the devices start each timed part
// together. Seconds of one copy and of the tree, the devices' mean, medians of `repeats`
// rounds.
std::vector<ExchangeSeconds> deterministic_exchange(const std::vector<int64_t>& bytes, int devices,
                                                    int shards, int repeats);

// The gradient sizes calibrate times deterministic_exchange at for `devices` devices with
// `shards` micro-shards each: powers of two from 256 KiB up to the largest size whose
// parameters, gradients and copies on every device fit `shared_cache` bytes (devices x
// (shards + 2) x size), and that size itself; up to 4 MiB where the cache is unknown (0), and
// never over 256 MiB. Ascending.
std::vector<int64_t> exchange_sizes(int64_t shared_cache, int devices, int shards);

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
// sharded reducer's over one shared parameter buffer (steps_at_once.h; one device count after
// another, after the other timings' rounds). Best of `repeats` rounds, interleaved over the
// rows (the steps at once also their median); seconds summed over the layers; one entry per device
// count, ascending, each with the same whole GEMMs.
std::vector<WeightGradShards> weight_grad_gemm_seconds(const std::vector<int64_t>& widths,
                                                       const std::vector<int64_t>& rows,
                                                       const std::vector<int>& devices, int threads,
                                                       int repeats);

}  // namespace tandem::detail
