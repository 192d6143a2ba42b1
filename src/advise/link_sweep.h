// The link between MPI ranks as `tandem calibrate` measures it under mpirun: float32
// all-reduces of growing sizes through the gradient communicator the hierarchical reducer
// uses (and the same with bf16 compression, and deterministic: all-gathered, then summed in
// a fixed tree), every rank taking part, and the line the cost model's all-reduce inverts to.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "parallel/world.h"

namespace tandem::detail {

// One size, through the three communicators: float32, bf16 compression, and deterministic
// (MPI_Allgather of every rank's floats and the fixed tree over the copies, mpi_world.cpp).
// Each the best of its repeats timed back to back; the deterministic one also with every
// rank's caches emptied before each (what it meets after backward and the micro-shards' sum
// have streamed a model larger than the cache).
struct SweepPoint {
  int64_t floats = 0;
  double seconds = 0, bf16_seconds = 0, deterministic_seconds = 0, deterministic_cold_seconds = 0;
};

struct LinkSweep {
  int ranks = 1;
  std::vector<SweepPoint> points;
  // The cost model's ring all-reduce, 2(R-1) latency + 2(R-1)/R bytes / bandwidth: the
  // latency from the smallest float32 time, the bandwidth from the two largest.
  double bandwidth = 0, latency = 0;
};

// Collective: every rank of `world` calls it at the same point. Sizes 2^10 to 2^max_log2
// floats (max_log2 >= 12), `repeats` back to back and `cold_repeats` cold; the times are
// rank 0's.
LinkSweep sweep_allreduce(World& world, int max_log2, int repeats, int cold_repeats);

}  // namespace tandem::detail
