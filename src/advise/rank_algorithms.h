// MPI ranks in the cost model: an all-reduce or deterministic exchange across ranks, as
// mpi_world.cpp runs it and calibrate's sweep timed it, and the ranks' hierarchical step.
#pragma once

#include "advise/cost_model.h"

namespace tandem::detail {

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

Prediction hierarchical(const HardwareProfile& hardware, const Scenario& scenario);

}  // namespace tandem::detail
