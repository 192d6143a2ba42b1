#include "advise/link_sweep.h"

#include <algorithm>

#include "core/aligned_buffer.h"
#include "profile/phase_timer.h"

namespace tandem::detail {
namespace {

// Best of `repeats` all-reduces of `floats` through `comm`, each started together (a barrier
// first), as rank 0 sees it.
double best_allreduce(World& world, Communicator& comm, AlignedBuffer& data, int64_t floats,
                      int repeats) {
  double best = 1e300;
  comm.allreduce(data.data(), floats);  // warm: buffers registered, paths chosen
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    world.barrier();
    const auto start = Clock::now();
    comm.allreduce(data.data(), floats);
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

LinkSweep sweep_allreduce(World& world, int max_log2, int repeats) {
  LinkSweep sweep;
  sweep.ranks = world.size();
  const auto f32 = world.gradient_communicator({});
  const auto bf16 = world.gradient_communicator({.bf16 = true});
  AlignedBuffer data(int64_t{1} << max_log2);
  std::fill(data.data(), data.data() + (int64_t{1} << max_log2), 1e-6f);
  for (int e = 10; e <= max_log2; e += 2) {
    const int64_t floats = int64_t{1} << e;
    sweep.points.push_back({floats, best_allreduce(world, *f32, data, floats, repeats),
                            best_allreduce(world, *bf16, data, floats, repeats)});
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
