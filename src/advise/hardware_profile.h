// Hardware profiles for the cost model: one JSON file per system (profiles/*.json), each
// figure with its source in the file's "sources". A system is N identical devices, the
// links between them and the host, and the host's memory.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace tandem::detail {

// Floats RMSprop (StepRun's optimizer, the update timed in calibrate's steps) reads and writes
// per parameter (cost_model.h's update_passes).
inline constexpr int kMeasuredUpdatePasses = 5;

// One row count of a dense model's 1-device steps: their median less the update (and, in
// profiles since 2026-12-03, less the gathering of the batch's rows, the cost model's input
// phase), seconds; and (since then) the update's own seconds in those steps, 0 where not
// measured: RMSprop over the model's parameters, at the speed the caches give it after
// forward and backward at those rows.
struct DenseRowsSeconds {
  int64_t rows = 0;
  double compute_seconds = 0;
  double update_seconds = 0;
};

// A dense model's weight-gradient GEMMs timed alone on one core at `rows` rows per device
// (weight_grad_probes.h, weight_grad_gemm_seconds): as one device runs them (each kernel's whole
// gradient over its rows) and as one of several devices runs its part under weight-gradient
// sharding (grad_reducer.cpp, WeightGradShardReducer: 1/N of each kernel's input rows, one GEMM per
// replica's rows, the first writing and the others accumulating), with the caches warm and
// emptied first; and (profiles since 2026-12-05) as a step runs them: after the update and
// forward's read of every parameter, each layer's input-gradient GEMM before its weight
// gradient, a shard's update after its GEMMs (`*_step`; 0 in profiles before). Seconds, summed
// over the model's Dense layers.
struct WeightGradGemmSeconds {
  int64_t rows = 0;
  double whole = 0, shard = 0, whole_cold = 0, shard_cold = 0;
  double whole_step = 0, shard_step = 0, input_step = 0;

  bool timed_as_step() const { return whole_step > 0; }
  // The share of the backward GEMMs (input and whole weight gradients) a device's shards save.
  double step_saved_share() const { return (whole_step - shard_step) / (whole_step + input_step); }
};
// A dense model's forward and backward GEMMs at `rows` rows per device as device 0 alone runs a
// step and as the devices, all at once, run mirrored's sharded reducer over one shared
// parameter buffer (steps_at_once.h, StepsAtOnce), seconds summed over the model's Dense layers.
// And (profiles since 2026-12-06; 0: not timed) as the devices, all at once, run deterministic
// mode's micro-shards over that buffer (StepsAtOnce::micro_shards), seconds per micro-shard.
// And (profiles since 2026-12-07; 0: not timed) as the devices, all at once, run a step each
// over its own copy of the parameters (StepsAtOnce::own), with the devices' mean of how long
// the last device's backward ended after their own (`wait_own`, 0 or more); and (profiles since
// 2026-12-07, later; 0: not timed) the devices' mean from their backward's end to the end of
// the all-reduce of their gradients as one bucket (`exchange_own`), each of the four then the
// mean of StepsAtOnce::kOwnTimedPasses passes (before: one pass).
struct StepsAtOnceTimes {
  double forward_alone = 0, backward_alone = 0, forward_shared = 0, backward_shared = 0;
  double forward_micro = 0, backward_micro = 0;
  double forward_own = 0, backward_own = 0, wait_own = 0, exchange_own = 0;

  // A device's forward and backward under the sharded reducer, all devices at once, over one
  // device's alone.
  double shared_over_alone() const {
    return (forward_shared + backward_shared) / (forward_alone + backward_alone);
  }
  bool has_micro() const { return forward_micro > 0; }
  // A device's micro-shard, all devices at once, over one device's step alone at its rows.
  double micro_over_alone() const {
    return (forward_micro + backward_micro) / (forward_alone + backward_alone);
  }
  bool has_own() const { return forward_own > 0; }
  bool has_exchange() const { return exchange_own > 0; }
  // A device's step over its own copy, all devices at once, over one device's step alone.
  double own_over_alone() const {
    return (forward_own + backward_own) / (forward_alone + backward_alone);
  }
};
struct StepsAtOnceSeconds {
  int64_t rows = 0;
  StepsAtOnceTimes best;  // the best of the rounds
  // Their median (profiles since 2026-12-05, morning; all 0: not recorded).
  StepsAtOnceTimes median;

  bool has_medians() const { return median.forward_alone > 0; }
  // What the cost model takes: the medians where recorded, else the best. The sharded step's
  // forward and backward (weight_grad_shard, cpu_algorithms.cpp): the shared pass's seconds
  // below kRatioFromRows rows per device, one device's times the shared pass over the alone
  // pass from there (weight_grad_costs.h); calibrate's summary prints the ratio too.
  double modelled_shared_seconds() const {
    const StepsAtOnceTimes& t = has_medians() ? median : best;
    return t.forward_shared + t.backward_shared;
  }
  double modelled_shared_over_alone() const {
    return (has_medians() ? median : best).shared_over_alone();
  }
  double modelled_micro_over_alone() const {
    return (has_medians() ? median : best).micro_over_alone();
  }
};
// A probe's unit of work ran with the devices' cores apart when a hand-off at its edges took
// over apart_handoff() times the fastest the process measured on as many devices, and with its
// time taken when the hypervisor took over kQuietSteal of the CPUs' time, counting steal of
// two clock ticks of /proc/stat at 100 Hz or more (kStealFloorSeconds, between one tick and
// two: the ticks arrive as seconds, whose differences round either way) (window_check.h).
inline constexpr double kApartHandoff = 3.0;  // apart_handoff()'s default
inline constexpr double kQuietSteal = 0.05;
inline constexpr double kStealFloorSeconds = 0.015;
// Before a disturbed unit is timed again, edges are read every kQuietPollSeconds until the
// window between the last two is quiet, and the unit's window starts at the last
// (window_check.h, quiet_units). Apart runs lasted up to 12 s in held_out_windows_zen4's
// placement run; timed again at once, a unit fell in the same run, and three of that set's
// refits in bench validate spent their whole budget so. kQuietWaitSeconds / kQuietPollSeconds
// polls at most per probe (its ProbeWindow, over every call that records into it), a minute,
// unless set (quiet_wait_polls); once spent, a unit is timed again at once.
inline constexpr double kQuietPollSeconds = 0.25;
inline constexpr double kQuietWaitSeconds = 60;
// A unit of work ran with the cores' caches crowded when the devices' cache reading at its
// edges (window_check.h, cache_seconds: every device at once streaming half its core's private
// cache) took over kCrowdedCache times the fastest the process measured on as many devices.
// Recorded, not judged: on the Zen 4 of 2026-12-07 (held_out_crowded_zen4's placement.json,
// 2200 samples over 600 s) 75% of the samples with the cores near were crowded, and
// 784-256-256-10's sharded step of 2 devices at 32 took 0.393 ms in them against 0.330 in the
// others (medians); timed again as disturbed (90f01fd), calibrate's probes spent their minute of
// polls waiting for the other state and kept crowded units all the same (docs/SCALING.md,
// "Crowded caches").
inline constexpr double kCrowdedCache = 1.4;
// How many times the fastest hand-off counts as apart, for the whole process (calibrate and
// bench validate --apart-handoff): kApartHandoff unless set, 1 or more.
double apart_handoff();
void set_apart_handoff(double times);
// The polls a probe makes at most waiting for quiet windows, for the whole process (calibrate
// and bench validate --quiet-wait SECONDS): kQuietWaitSeconds / kQuietPollSeconds unless set;
// seconds from 0 (none: timed again at once) to an hour, the whole polls within them.
int quiet_wait_polls();
void set_quiet_wait(double seconds);

// Where a probe of devices at once ran (window_check.h, in_quiet_windows): the units of work it
// kept and those it timed again because the devices' cores were apart or the hypervisor took
// their time; the kept units' slowest hand-off between the devices' cores (seconds one way) and
// highest share of the CPUs' time stolen (Window::counted_steal); and the fastest hand-off the
// process had measured on as many devices when the probe ended (the cores near). (Profiles
// since 2026-12-07, evening; kept 0: not recorded.) And (profiles since 2026-12-07, night; 0
// before) the polls it made waiting for a quiet window before timing a unit again
// (window_check.h, kQuietPollSeconds apart).
struct ProbeWindow {
  int kept = 0, redone = 0;
  double handoff = 0, steal = 0, best_handoff = 0;
  int waits = 0;
  // The kept units' slowest cache reading and the fastest the process had measured on as many
  // devices, seconds (profiles since 90f01fd; 0 before: not read), and the kept units whose
  // window was crowded against that fastest (Window::crowded; recorded, not judged; negative:
  // not counted, as in 90f01fd's profiles). While a probe runs, every kept unit's reading, so
  // that each call recounts them all against the fastest then (not in a profile).
  double cache = 0, best_cache = 0;
  int crowded = -1;
  std::vector<double> kept_caches;

  bool recorded() const { return kept > 0; }
  // A kept unit ran with the cores apart, or with its time stolen (window_check.h's
  // thresholds).
  bool disturbed() const;
  // In words, for the logs: "3 units, 1 timed again after 0.50 s waiting for quiet; hand-off
  // 28 ns (fastest 25 ns), steal 0.0%; cache 7.1 us (fastest 4.9 us), 1 of 3 crowded" (no
  // wait: "3 units, 0 timed again; ...").
  std::string words() const;
};
// As a profile holds one, under `window` ({kept, redone, handoff, steal, best_handoff, waits,
// cache, best_cache, crowded}); and read back, a ConfigError naming `where` and the field
// unless kept is a whole number >= 1, redone one from 0 to kept, the hand-offs > 0 (the kept
// one no faster than the fastest), the steal a share from 0 to 1, waits (absent: 0) a whole
// number >= 0, 0 where redone is, cache and best_cache both absent (0) or both > 0 (the kept
// one no faster than the fastest), and crowded (absent: not counted) only with them, a whole
// number from 0 to kept.
nlohmann::json probe_window_json(const ProbeWindow& window);
ProbeWindow read_probe_window(const nlohmann::json& j, const std::string& where);

// Those timings with the shards of one of `devices` devices, ascending in rows; and the steps
// at once of that many devices (empty: not timed), ascending in rows, at rows of their own:
// calibrate times them at the points' rows; a profile may hold more (the rejected grid of
// docs/SCALING.md, "Steps at once at thirds of an octave"). Profiles of 2026-12-05 hold them as
// the points' four fields `forward_alone`, `backward_alone`, `forward_shared` and
// `backward_shared`, later ones as the array `steps_at_once`.
struct WeightGradShards {
  int devices = 0;
  std::vector<WeightGradGemmSeconds> points;
  std::vector<StepsAtOnceSeconds> at_once;
  int micro_shards = 0;        // per device, in the `*_micro` timings (0: none)
  ProbeWindow at_once_window;  // where the steps at once ran
};

// A dense model's own rate curve, measured on it (its layers' GEMM shapes run at their own
// rates: a Dense(10) after 8192 units uses the cores less than the seed's layers): the line
// through its steps, and (profiles since 2026-12-03) the steps themselves, ascending in rows,
// which the cost model follows piecewise (the rate is no line at few rows: docs/SCALING.md).
struct DenseRateCurve {
  std::vector<int64_t> widths;  // input, hidden..., output
  double sustained_flops = 0, half_rows = 0;
  std::vector<DenseRowsSeconds> points;  // empty: the line
  // The same steps measured on rank 0 while each of `ranks` MPI ranks of one host ran its own
  // at once (bench validate under mpirun): what a rank computes at with the others computing
  // too, which the model of `ranks` ranks of one device each follows instead of `points`.
  std::vector<DenseRowsSeconds> ranks_points;
  int ranks = 0;
  // Its weight-gradient GEMMs at the same rows, the shards as one device computes them, for
  // each device count timed, ascending (profiles since 2026-12-03, evening; empty: not
  // measured).
  std::vector<WeightGradShards> weight_grad_gemms;
};

// Seconds per float of the bfloat16 loops (parallel/bf16.h) over buffers of `floats` floats,
// one thread: packing float32, unpacking, and the MPI sum of two bfloat16 buffers.
struct Bf16LoopSeconds {
  int64_t floats = 0;
  double pack = 0, unpack = 0, sum = 0;
};

// The optimizer's update (RMSprop's kernel) on several CPU devices at once against one device
// alone, for parameters of `bytes` float32 bytes (calibrate's update_contention): `own`, each
// device updating the whole of its own copy (mirrored's all-reduce: every replica's update),
// over the time alone; `shard`, each device updating its 1/n of one buffer that every device
// has just read (the sharded reducers over shared parameters, host's update on the devices'
// cores), over 1/n of the time alone. Both 1 where devices do not slow each other. The model
// takes `shard` where the buffers fit the shared cache; `own` is kept as measured, unused:
// its updates start together behind a barrier and overstated the steps' (docs/SCALING.md, "The
// update on several devices at once").
struct UpdateContention {
  int64_t bytes = 0;
  double own = 1, shard = 1;
};

// Deterministic mode's exchange inside one process (mirrored.cpp, deterministic_gradients)
// timed on several CPU devices at once for gradients of `bytes` float32 bytes (calibrate's
// deterministic_exchange): `copy`, one micro-shard's gradients copied aside right after the
// device wrote them, and `tree`, the fixed tree of the device's shard copies summed into its
// gradient buffer; seconds, the devices' mean.
struct ExchangeSeconds {
  int64_t bytes = 0;
  double copy = 0, tree = 0;
};

// The host strategy's copies (host.cpp) timed on several CPU devices at once for parameters
// of `bytes` float32 bytes (calibrate's host_exchange): `copy`, a device's copy of the host's
// whole weights right after every device's core updated its share of them, and `sum`, a
// device's tree_sum of its 1/n of the devices' gradients right after their backward wrote
// them; seconds, the devices' mean.
struct HostExchangeSeconds {
  int64_t bytes = 0;
  double copy = 0, sum = 0;
};

// The all-reduce reducer's exchange (grad_reducer.cpp, AllreduceReducer) timed on several CPU
// devices at once for one bucket of `bytes` float32 bytes (calibrate's allreduce_exchange): the
// bucket posted and waited for right after every device's backward wrote it; seconds, the
// devices' mean.
struct AllreduceSeconds {
  int64_t bytes = 0;
  double seconds = 0;
};

// One convolution shape (per sample: batch 1) timed on one device by calibrate: oneDNN's
// forward, backward-data and backward-weights primitives (CpuBackend's conv2d_*), seconds
// per sample at `batch` samples.
struct ConvShapeSeconds {
  Window2d window;
  int64_t batch = 0;
  double forward = 0, backward_data = 0, backward_weights = 0;
};
bool same_conv_shape(const Window2d& a, const Window2d& b);  // all but the batch
// As device.conv_shapes holds it: input, output, kernel, strides, dilation, padding (top,
// bottom, left, right), batch and the three primitives' seconds per sample.
nlohmann::json conv_shape_to_json(const ConvShapeSeconds& shape);

struct DeviceProfile {
  std::string name;
  // Sustained FLOP/s of the GEMMs of a dense layer with many rows; with r rows per device a
  // layer runs at sustained_flops * r / (r + half_rows) (small batches use the device less).
  double sustained_flops = 0;
  double half_rows = 0;
  std::vector<DenseRateCurve> dense_rates;  // used for exactly these models
  // The measured steps of the model being predicted (its dense_rates entry's points, set by
  // predict) and its FLOPs per sample: when set, a Dense layer at r rows takes the rate of
  // that curve at r (dense_rate_at, step_costs.h) instead of the line above.
  std::vector<DenseRowsSeconds> row_points;
  double row_points_flops = 0;
  // That model's parameters: where its points hold the update's seconds, an update of p of
  // them takes those seconds times p / row_points_params (update_seconds, step_costs.cpp).
  double row_points_params = 0;
  // And its weight-gradient GEMMs (its dense_rates entry's weight_grad_gemms, set by predict):
  // what a device keeps of the weight-gradient pass when it computes only its shard
  // (weight_grad_shard, cpu_algorithms.cpp), for the device counts timed.
  std::vector<WeightGradShards> row_weight_grad_gemms;
  // FLOP/s of convolutions (their GEMM rows are samples x output pixels, so they keep their
  // rate at small batches); 0: sustained_flops.
  double conv_flops = 0;
  // Convolutions of a measured shape take their primitives' measured time times
  // conv_step_scale (their time inside a training step over their time alone: caches
  // other layers left, the weights' reorders), both from calibrate; other convolutions run
  // at conv_flops. conv_step_scale 0: the shapes are not used.
  std::vector<ConvShapeSeconds> conv_shapes;
  double conv_step_scale = 0;
  double memory_bandwidth = 0;  // bytes/s: the optimizer update, memory-bound layers
  // One core's memcpy (bytes copied) and sum b += a (bytes read and written) per second with
  // the caches emptied first: deterministic mode's copies and sums of the micro-shards'
  // gradients, which follow a whole backward, for a model larger than private_cache_bytes.
  // 0: not measured (the warm host_device and device_device figures serve).
  double cold_copy_bandwidth = 0, cold_sum_bandwidth = 0;
  // Bytes of one core's private cache (its L2) as the system reports it: a model whose
  // parameters fit keeps its gradients there through a step, and the warm rates serve it.
  // 0: not known (the cold rates serve every model).
  int64_t private_cache_bytes = 0;
  // Bytes of the last-level cache the devices' cores share (the L3) as the system reports it
  // (profiles since 2026-12-04): where the devices' update buffers outgrow it, the update
  // streams from memory, whose bandwidth the devices share (update_seconds, step_costs.cpp).
  // 0: not known (an update takes its time alone however many devices update at once).
  int64_t shared_cache_bytes = 0;
  // Pooling layers (the backend's pooling kernels) take their bytes at memory_bandwidth
  // times this: their time inside calibrate's convnet step over that (1: not measured).
  double pool_scale = 1;
  double layer_overhead = 0;  // seconds per layer and pass (kernel launches)
  double step_overhead = 0;   // seconds per step (the framework's own work)
  // Communication takes the device's own cores (CPU devices, MPI ranks of one core), so it
  // cannot overlap compute.
  bool comm_uses_compute = false;
  // Waking every device for a step and joining them (DeviceGroup::run), and one barrier
  // between them (DeviceBarrier::wait), seconds; CPU devices only.
  double fork_join = 0, barrier = 0;
  // The share of memory_bandwidth, and of its GEMM speed, that each device keeps when
  // max_devices devices stream memory, or compute, at once (1: no contention).
  double concurrent_memory_share = 1, concurrent_compute_share = 1;
  // MPI gradient compression: the bfloat16 loops measured at several buffer sizes (the
  // communication thread's buckets, in cache or not), ascending in floats. Profiles older
  // than these measurements give one figure instead: seconds per float to pack a float32
  // into bfloat16 and unpack it, on a buffer far above the cache.
  std::vector<Bf16LoopSeconds> bf16_loops;
  double bf16_seconds_per_float = 0;
  // The update on update_contention_devices devices at once at several model sizes,
  // ascending in bytes (profiles since 2026-12-04; empty: not measured, and an update takes
  // its time alone however many devices update at once).
  std::vector<UpdateContention> update_contention;
  int update_contention_devices = 0;
  ProbeWindow update_contention_window;  // where it ran
  // Deterministic mode's copies and tree on deterministic_exchange_devices devices at once,
  // each summing deterministic_exchange_shards copies, at gradient sizes that fit the shared
  // cache, ascending in bytes (profiles since 2026-12-04, later; empty: not measured, and the
  // copies and tree take the rates of memory or of the warm probes).
  std::vector<ExchangeSeconds> deterministic_exchange;
  int deterministic_exchange_devices = 0, deterministic_exchange_shards = 0;
  // The host strategy's weight copy and gradient sum on host_exchange_devices devices at once,
  // at parameter sizes up to the core's private cache (profiles since 2026-12-07, night: or,
  // where larger, the shared cache's share, host_exchange_sizes), ascending in bytes (profiles
  // since 2026-12-06; empty: not measured). Kept as measured, unused: host_copies takes the rates
  // of the warm probes or of memory, whose overstated copies cancel an understated rest of the
  // small model's host step (docs/SCALING.md, "The host's copies timed at once").
  std::vector<HostExchangeSeconds> host_exchange;
  int host_exchange_devices = 0;
  // The all-reduce reducer's exchange of one bucket on allreduce_exchange_devices devices at
  // once, at bucket sizes up to 64 MiB (allreduce_sizes), ascending in bytes (profiles since
  // 2026-12-06, evening; empty: not measured). Kept as measured, unused: the model's all-reduce
  // takes the rates of the sum and copy probes (docs/SCALING.md, "The all-reduce timed at
  // once").
  std::vector<AllreduceSeconds> allreduce_exchange;
  int allreduce_exchange_devices = 0;
  // A CPU device: the threads it runs (what tandem train --devices 1 --threads-per-device N
  // runs); 0: not one (a GPU).
  int threads = 0;
};

// One all-reduce size of calibrate's sweep between MPI ranks, timed with nothing else running
// (its buffers warm): float32, with bf16 compression, and deterministic (all-gathered, summed
// in a fixed tree), the last also with every rank's caches emptied first; seconds, best of its
// repeats. Profiles from before calibrate measured the deterministic times hold 0 for them.
struct AllreduceAlone {
  int64_t floats = 0;
  double seconds = 0, bf16_seconds = 0, deterministic_seconds = 0, deterministic_cold_seconds = 0;
};

struct LinkProfile {
  double bandwidth = 0;      // bytes/s per link and direction
  double latency = 0;        // seconds per message
  int devices_per_link = 1;  // devices sharing one link (a PCIe switch, a K80 board)
  // rank_rank only: the sweep the line was fitted to, ascending in floats (the profile's
  // measurements.allreduce_sweep), and the ranks it ran on (allreduce_sweep_ranks); empty
  // in profiles without both.
  std::vector<AllreduceAlone> alone;
  int alone_ranks = 0;
};

struct HardwareProfile {
  std::string name, description, path;
  int max_devices = 1;
  DeviceProfile device;
  double host_memory_bandwidth = 0;  // bytes/s the host's gradient sum reaches
  double host_update_bandwidth = 0;  // bytes/s the host's optimizer update reaches
  LinkProfile host_device;           // weights and gradients of the `host` strategy, input
  LinkProfile device_device;         // the all-reduce ring
  LinkProfile rank_rank;  // MPI between processes (bandwidth 0: none measured; device_device)
  nlohmann::json sources;
  nlohmann::json document;  // the profile as read (for results that record what they used)
};

// The probes of `hw` whose windows were disturbed (ProbeWindow::disturbed, against the fastest
// hand-off of all its probes on as many devices), each in words naming the probe, where the
// profile holds its window, and its figures; empty where none was (or none recorded).
std::vector<std::string> disturbed_windows(const HardwareProfile& hw);

// `name` is a file in the profiles directory (without .json) or a path to a JSON file.
// ConfigError naming the profile and field on anything missing or out of range (a zero
// bandwidth, a negative latency), listing the known profiles for an unknown name.
HardwareProfile load_hardware_profile(const std::string& name);
HardwareProfile parse_hardware_profile(const nlohmann::json& j, const std::string& origin);
std::vector<std::string> known_hardware_profiles();
std::string profiles_directory();

}  // namespace tandem::detail
