#include "advise/allreduce_probe.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "advise/at_once_probes.h"
#include "advise/step_run.h"
#include "core/aligned_buffer.h"
#include "parallel/buckets.h"
#include "parallel/device_group.h"
#include "parallel/shared_memory_communicator.h"
#include "profile/phase_timer.h"
#include "tandem/error.h"

namespace tandem::detail {

std::vector<AllreduceSeconds> allreduce_exchange(const std::vector<int64_t>& bytes, int devices,
                                                 int threads, int repeats) {
  if (devices < 2) {
    throw Error("allreduce_exchange: 2 or more devices, got " + std::to_string(devices));
  }
  DeviceGroup group(plan_devices(devices, threads));
  // As mirrored.cpp builds them for the all-reduce reducer.
  const auto comms = make_shared_memory_communicators(devices, &group.barrier());
  std::vector<AllreduceSeconds> out;
  for (const int64_t size : bytes) {
    const int64_t n = std::max<int64_t>(size / 4, int64_t{16} * devices);
    // Sizes under 16 floats per device time that many; each is timed once.
    if (!out.empty() && 4 * n <= out.back().bytes) continue;
    std::vector<AlignedBuffer> params, grads;
    for (int d = 0; d < devices; ++d) {
      params.emplace_back(n);
      grads.emplace_back(n);
      std::fill(params[d].data(), params[d].data() + n, 0.5f);
    }
    std::vector<double> each(devices), sinks(devices), seconds;
    // Device d's gradients in round r, whole numbers, so that their sum is exact in any order.
    const auto value = [](int d, int r) { return static_cast<float>(d + 1 + r % 8); };
    bool summed = true;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      group.run([&](int d) {
        // Backward: a float of every parameter line read, every gradient written.
        double read = 0;
        for (int64_t i = 0; i < n; i += 16) read += params[d].data()[i];
        std::fill(grads[d].data(), grads[d].data() + n, value(d, r));
        sinks[d] += read;
        group.barrier().wait();
        const auto start = Clock::now();
        comms[d]->wait(comms[d]->allreduce_async(grads[d].data(), n));
        each[d] = seconds_since(start);
      });
      seconds.push_back(mean_of(each));
      float expected = 0;
      for (int d = 0; d < devices; ++d) expected += value(d, r);
      // Every device holds the sum at the first and last float of every device's slice.
      for (int slice = 0; slice < devices; ++slice) {
        const auto [begin, end] = aligned_share(n, devices, slice);
        if (begin >= end) continue;
        for (int d = 0; d < devices; ++d) {
          summed =
              summed && grads[d].data()[begin] == expected && grads[d].data()[end - 1] == expected;
        }
      }
    }
    double read = 0;
    for (const double v : sinks) read += v;
    if (!std::isfinite(read) || !summed) {
      throw Error("allreduce_exchange: the devices' gradients are not their sum");
    }
    out.push_back({4 * n, median_of(seconds)});
  }
  return out;
}

std::vector<int64_t> allreduce_sizes(int devices) {
  // At least a cache line per device.
  int64_t smallest = int64_t{4} << 10;
  while (smallest < int64_t{64} * devices) smallest *= 2;
  return doubling_sizes(std::min(smallest, int64_t{64} << 20), int64_t{64} << 20);
}

}  // namespace tandem::detail
