#include "advise/rank_algorithms.h"

#include <algorithm>

#include "advise/cpu_algorithms.h"
#include "advise/step_costs.h"

namespace tandem::detail {
namespace {

// One loop's seconds per float at `floats`, from its measurements at the nearest sizes.
double per_float_at(const std::vector<Bf16LoopSeconds>& loops, double floats,
                    double Bf16LoopSeconds::*loop) {
  return at_size(loops, floats, [loop](const Bf16LoopSeconds& l) { return l.*loop; });
}

}  // namespace

// hierarchical_reducer.cpp over mpi_world.cpp (several MPI ranks, `devices` local devices
// each sharing one parameter buffer): each local device sums its 1/L shard of every bucket
// over the local replicas; the communication thread all-reduces each bucket across the
// ranks (float32 with MPI_SUM; bf16: packed, reduced with a bfloat16 sum, unpacked;
// deterministic: all-gathered and tree-summed), sharing the ranks' cores; then each local
// device updates 1/L of the parameters. A bucket posted while backward still runs costs the
// link's line (its bandwidth from calibrate's two largest, out-of-cache all-reduces): it
// shares the core with backward, which has just streamed the layers through the cache. The
// last bucket, posted when backward is done, runs alone as calibrate's sweep timed it
// (docs/SCALING.md: a one-bucket model's all-reduce took 0.22 ms in the step, 0.17 ms in the
// sweep, 0.55 ms on the line). With bf16, a bucket posted during backward costs the float32
// line times what compression measured against float32 in the sweep at its size (on shared
// memory it lost at 2^20 floats and above, and at some smaller sizes).
Prediction hierarchical(const HardwareProfile& hw, const Scenario& s) {
  const int local = s.devices, ranks = s.ranks;
  Prediction p;
  if (s.deterministic) {
    p = deterministic_start(hw, s);
  } else {
    const int64_t rows = rows_per_device(s);
    p = cpu_step_start(hw, s, rows);
    p.phases["compute"] += backward_seconds(hw.device, s.model, rows, devices_share(hw, s));
  }
  const LinkProfile& link = hw.rank_rank.bandwidth > 0 ? hw.rank_rank : hw.device_device;
  // Every rank's devices on one machine stream memory at once (the ranks of one host).
  const int streams = std::min(local * ranks, std::max(hw.max_devices, local));
  const std::vector<ModelBucket> buckets = model_buckets(s);
  for (size_t i = 0; i < buckets.size(); ++i) {
    const ModelBucket& b = buckets[i];
    const double bytes = 4.0 * b.params;
    if (local > 1) {
      p.phases["allreduce"] += hw.device_device.latency +
                               bytes / (hw.device_device.bandwidth * memory_share(hw, streams));
    }
    if (s.deterministic) {
      // The buckets are handed over one after another once backward is done (mirrored.cpp).
      p.phases["allreduce"] +=
          rank_deterministic_seconds(hw, b.params, ranks, gradients_evicted(hw.device, s.model));
    } else if (i + 1 < buckets.size()) {
      p.phases["allreduce"] +=
          rank_allreduce_in_backward_seconds(link, hw.device, b.params, ranks, s.bf16);
    } else {
      p.phases["allreduce"] +=
          rank_allreduce_alone_seconds(link, hw.device, b.params, ranks, s.bf16);
    }
  }
  p.phases["optimizer"] = update_seconds(hw, s, static_cast<double>(s.model.params()) / local);
  p.phases["overhead"] += 2 * hw.device.barrier;
  return finish_prediction(p);
}

double bf16_allreduce_loop_seconds(const DeviceProfile& d, double floats, int ranks) {
  const double others = static_cast<double>(ranks - 1) / ranks;
  if (d.bf16_loops.empty()) {
    // The older profiles' one figure: a pack and unpack round trip per float, and the sum of
    // each received part (two unpacks and a pack: 1.5 round trips) per other rank.
    return floats * d.bf16_seconds_per_float * (1.0 + 1.5 * (ranks - 1));
  }
  const auto& l = d.bf16_loops;
  return floats * (per_float_at(l, floats, &Bf16LoopSeconds::pack) +
                   per_float_at(l, floats, &Bf16LoopSeconds::unpack) +
                   others * per_float_at(l, floats, &Bf16LoopSeconds::sum));
}

double rank_allreduce_seconds(const LinkProfile& link, const DeviceProfile& d, double floats,
                              int ranks, bool bf16) {
  const double r = ranks, wire = (bf16 ? 2.0 : 4.0) * floats;
  double seconds = 2.0 * (r - 1) * link.latency + 2.0 * (r - 1) / r * wire / link.bandwidth;
  if (bf16) seconds += bf16_allreduce_loop_seconds(d, floats, ranks);
  return seconds;
}

double rank_deterministic_seconds(const HardwareProfile& hw, double floats, int ranks,
                                  bool evicted) {
  const LinkProfile& link = hw.rank_rank.bandwidth > 0 ? hw.rank_rank : hw.device_device;
  const auto modelled = [&](double n) {
    return (ranks - 1) * transfer_seconds(link, 4.0 * n) +
           ranks * 4.0 * n / hw.device_device.bandwidth;
  };
  if (!sweep_applies(link, ranks) || !(link.alone.front().deterministic_seconds > 0) ||
      !(floats > 0)) {
    return modelled(floats);
  }
  return modelled(floats) * at_size(link.alone, floats, [&](const AllreduceAlone& a) {
           return (evicted ? a.deterministic_cold_seconds : a.deterministic_seconds) /
                  modelled(static_cast<double>(a.floats));
         });
}

bool sweep_applies(const LinkProfile& link, int ranks) {
  return !link.alone.empty() && ranks >= 2 && link.alone_ranks == ranks;
}

double rank_allreduce_alone_seconds(const LinkProfile& link, const DeviceProfile& d, double floats,
                                    int ranks, bool bf16) {
  const double modelled = rank_allreduce_seconds(link, d, floats, ranks, bf16);
  if (!sweep_applies(link, ranks) || !(floats > 0)) return modelled;
  return modelled * at_size(link.alone, floats, [&](const AllreduceAlone& a) {
           return (bf16 ? a.bf16_seconds : a.seconds) /
                  rank_allreduce_seconds(link, d, static_cast<double>(a.floats), ranks, bf16);
         });
}

double rank_allreduce_in_backward_seconds(const LinkProfile& link, const DeviceProfile& d,
                                          double floats, int ranks, bool bf16) {
  if (!bf16 || !sweep_applies(link, ranks) || !(floats > 0)) {
    return rank_allreduce_seconds(link, d, floats, ranks, bf16);
  }
  return rank_allreduce_seconds(link, d, floats, ranks, false) *
         at_size(link.alone, floats,
                 [](const AllreduceAlone& a) { return a.bf16_seconds / a.seconds; });
}

}  // namespace tandem::detail
