// The algorithms the cost model simulates, one function each, each mirroring the code that
// runs it (named in `mirrors`). A scenario (strategy, reducer, deterministic, ranks, and the
// kind of device) selects one as src/parallel selects the code: a CPU device of a profile
// from `tandem calibrate` (device.threads > 0) runs tandem's in-process algorithms, whose
// reductions take the device's own cores; a device without threads (a GPU profile) moves
// bytes over links, as NCCL rings and Keras's multi_gpu_model did.
#pragma once

#include <vector>

#include "advise/cost_model.h"

namespace tandem::detail {

enum class Algorithm {
  single_device,          // one replica, its own update
  weight_grad_shard,      // mirrored, sharded reducer, Dense stacks: no gradient summed
  sharded_buckets,        // mirrored, sharded reducer: sum, update and share 1/N of buckets
  bucket_allreduce,       // mirrored, all-reduce reducer: buckets all-reduced, N full updates
  deterministic_shards,   // mirrored, deterministic: fixed micro-shards, then its reducer's buckets
  host_copies,            // tandem's host strategy: whole copies, sum and update on the host
  keras_multi_gpu_model,  // Keras's multi_gpu_model on GPUs (TensorFlow's dataflow overlap)
  ring_allreduce,         // replicas on GPUs: buckets all-reduced in a ring over links
  hierarchical,           // MPI ranks: local sharded sums, one all-reduce per bucket across
};

struct AlgorithmModel {
  Algorithm algorithm;
  const char* name;
  // The code it mirrors: the factories and functions in src/parallel (a test checks that
  // every strategy and reducer factory there is named by one model).
  const char* mirrors;
};

const std::vector<AlgorithmModel>& algorithm_models();
const char* name_of(Algorithm algorithm);

// Which algorithm runs the scenario on the profile's devices (as make_strategy and the
// Mirrored constructor choose).
Algorithm algorithm_for(const HardwareProfile& hardware, const Scenario& scenario);

// Seconds the communication thread spends in the bfloat16 loops (parallel/bf16.h) for one
// all-reduce of `floats` floats across `ranks` ranks: packing them, unpacking the sum, and
// summing (ranks - 1) / ranks of them inside MPI's ring reduce-scatter. Each loop runs at its
// speed measured on the nearest buffer sizes (device.bf16_loops, interpolated in log size);
// a profile without those measurements charges its one round-trip figure 2.5 times.
double bf16_allreduce_loop_seconds(const DeviceProfile& device, double floats, int ranks);

// Seconds to all-reduce `floats` floats across `ranks` MPI ranks over `link` as
// mpi_world.cpp does: a ring's 2(R-1) latencies and 2(R-1)/R of the bytes each way; bf16
// halves the bytes and adds its loops.
double rank_allreduce_seconds(const LinkProfile& link, const DeviceProfile& device, double floats,
                              int ranks, bool bf16);

// Whether the link's all-reduce sweep applies to `ranks` ranks: it was measured on as many.
bool sweep_applies(const LinkProfile& link, int ranks);

// The same all-reduce with nothing else running, as calibrate's sweep timed it: the
// modelled seconds above times the sweep's measured-to-modelled ratio at `floats` (linear
// in log size between the two nearest measured sizes, the nearest end's ratio beyond them).
// The modelled seconds alone where the sweep does not apply (sweep_applies).
double rank_allreduce_alone_seconds(const LinkProfile& link, const DeviceProfile& device,
                                    double floats, int ranks, bool bf16);

// The same all-reduce posted while backward runs on the rank's cores: float32 on the line
// (rank_allreduce_seconds); bf16 too where no sweep applies, and where one does, the
// float32 line times the sweep's bf16-to-float32 ratio at `floats` (interpolated as above):
// what compression costs and saves on this link, measured rather than derived from halved
// bytes and the loops. (An all-reduce timed with the caches emptied first was tried here for
// a model larger than the core's cache and rejected on held-out runs: docs/SCALING.md.)
double rank_allreduce_in_backward_seconds(const LinkProfile& link, const DeviceProfile& device,
                                          double floats, int ranks, bool bf16);

// Seconds of one deterministic exchange of `floats` floats across `ranks` MPI ranks as
// mpi_world.cpp runs it once backward is done: MPI_Allgather of every rank's floats, then the
// fixed tree over the R copies. Modelled: transfers of the bytes over the ranks' link
// (device_device where none was measured) and R reads at the sum's rate. Where calibrate's
// sweep timed it on as many ranks, the modelled seconds times the sweep's measured-to-modelled
// ratio at `floats` (interpolated as above): its times with the caches emptied first
// (deterministic_cold_seconds) where `evicted` (the model's gradients have left the core's
// cache), its back-to-back times (deterministic_seconds) where not.
double rank_deterministic_seconds(const HardwareProfile& hardware, double floats, int ranks,
                                  bool evicted);

// A Dense layer's rate at `rows` rows per device: sustained_flops * r / (r + half_rows). From
// the device's line, or where the device carries the measured steps of the model predicted
// (row_points), from the tangent to that curve at `rows`: between two measured row counts
// the curve is a power law through both (steps grow less than in proportion to the rows
// there); beyond the largest, the line through the last two (the steps grow in proportion
// by then); below the smallest, the first two's power law. The tangent's intercept is the
// fixed part (at most the whole step, never negative), so one device's compute at `rows` is
// the curve's value there.
struct RowRate {
  double sustained_flops = 0, half_rows = 0;
};
RowRate dense_rate_at(const DeviceProfile& device, int64_t rows);
// One step of the scenario under `algorithm`: step_seconds, phases and busy times.
Prediction simulate(const HardwareProfile& hardware, const Scenario& scenario, Algorithm algorithm);

}  // namespace tandem::detail
