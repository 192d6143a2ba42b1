#include "advise/link_sweep.h"

#include <algorithm>

#include "advise/probes.h"
#include "core/aligned_buffer.h"
#include "profile/phase_timer.h"

namespace tandem::detail {
namespace {

// Best of `repeats` all-reduces of `floats` through `comm`, each started together (a barrier
// first), as rank 0 sees it; with an evictor, every rank's caches emptied before each. The
// values start small again each time (each all-reduce doubles them on 2 ranks; far from
// overflow for the sweep's few repeats).
double best_allreduce(World& world, Communicator& comm, AlignedBuffer& data, int64_t floats,
                      int repeats, CacheEvictor* evictor = nullptr) {
  std::fill(data.data(), data.data() + floats, 1e-6f);
  double best = 1e300;
  comm.allreduce(data.data(), floats);  // warm: buffers registered, paths chosen
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    if (evictor) evictor->evict();
    world.barrier();
    const auto start = Clock::now();
    comm.allreduce(data.data(), floats);
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

LinkSweep sweep_allreduce(World& world, int max_log2, int repeats, int cold_repeats) {
  LinkSweep sweep;
  sweep.ranks = world.size();
  const auto f32 = world.gradient_communicator({});
  const auto bf16 = world.gradient_communicator({.bf16 = true});
  const auto deterministic = world.gradient_communicator({.deterministic = true});
  AlignedBuffer data(int64_t{1} << max_log2);
  CacheEvictor evictor;
  for (int e = 10; e <= max_log2; e += 2) {
    const int64_t floats = int64_t{1} << e;
    SweepPoint p{.floats = floats};
    p.seconds = best_allreduce(world, *f32, data, floats, repeats);
    p.bf16_seconds = best_allreduce(world, *bf16, data, floats, repeats);
    p.deterministic_seconds = best_allreduce(world, *deterministic, data, floats, repeats);
    p.deterministic_cold_seconds =
        best_allreduce(world, *deterministic, data, floats, cold_repeats, &evictor);
    sweep.points.push_back(p);
  }
  // The latency from the smallest all-reduce, the bandwidth from the slope between the two
  // largest (a least-squares line over all sizes let one slow middle size move both).
  const double r = sweep.ranks;
  const SweepPoint& small = sweep.points.front();
  const SweepPoint& big = sweep.points.back();
  const SweepPoint& below = sweep.points[sweep.points.size() - 2];
  sweep.latency = small.seconds / (2.0 * (r - 1));
  const double slope =
      (big.seconds - below.seconds) / (4.0 * static_cast<double>(big.floats - below.floats));
  if (slope > 0) sweep.bandwidth = 2.0 * (r - 1) / r / slope;
  return sweep;
}

}  // namespace tandem::detail
