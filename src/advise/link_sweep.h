// The link between MPI ranks as `tandem calibrate` measures it under mpirun: float32
// all-reduces of growing sizes through the gradient communicator the hierarchical reducer
// uses (and the same with bf16 compression), every rank taking part, and the line the cost
// model's all-reduce inverts to.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "parallel/world.h"

namespace tandem::detail {

struct SweepPoint {
  int64_t floats = 0;
  double seconds = 0;       // float32, best of the repeats
  double bf16_seconds = 0;  // bf16 compression, best of the repeats
};

struct LinkSweep {
  int ranks = 1;
  std::vector<SweepPoint> points;
  // The cost model's ring all-reduce, 2(R-1) latency + 2(R-1)/R bytes / bandwidth: the
  // latency from the smallest float32 time, the bandwidth from the two largest.
  double bandwidth = 0, latency = 0;
};

// Collective: every rank of `world` calls it at the same point. Sizes 2^10 to 2^max_log2
// floats (max_log2 >= 12); the times are rank 0's.
LinkSweep sweep_allreduce(World& world, int max_log2, int repeats);

}  // namespace tandem::detail
