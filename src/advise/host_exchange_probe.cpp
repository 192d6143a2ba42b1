#include "advise/host_exchange_probe.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "advise/at_once_probes.h"
#include "advise/step_run.h"
#include "core/aligned_buffer.h"
#include "optim/optimizer_kernel.h"
#include "parallel/buckets.h"
#include "parallel/device_group.h"
#include "parallel/shared_memory_communicator.h"
#include "profile/phase_timer.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

std::vector<HostExchangeSeconds> host_exchange(const std::vector<int64_t>& bytes, int devices,
                                               int threads, int repeats) {
  if (devices < 2) {
    throw Error("host_exchange: 2 or more devices, got " + std::to_string(devices));
  }
  const std::unique_ptr<OptimizerKernel> kernel = make_optimizer_kernel(RMSprop());
  DeviceGroup group(plan_devices(devices, threads));
  std::vector<HostExchangeSeconds> out;
  for (const int64_t size : bytes) {
    const int64_t n = std::max<int64_t>(size / 4, int64_t{16} * devices);
    // The host's weights, summed gradients and RMSprop accumulator; each device's weights
    // and gradients.
    AlignedBuffer weights(n), summed(n), state(n);
    std::fill(weights.data(), weights.data() + n, 0.5f);
    std::vector<AlignedBuffer> own, grads;
    std::vector<float*> sources;
    for (int d = 0; d < devices; ++d) {
      own.emplace_back(n);
      grads.emplace_back(n);
      std::fill(own[d].data(), own[d].data() + n, 0.5f);
      sources.push_back(grads[d].data());
    }
    std::vector<double> sum_each(devices), copy_each(devices), sinks(devices);
    std::vector<double> sum, copy;
    float* slots[] = {state.data()};
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      const int64_t iteration = r + 1;
      group.run([&](int d) {
        // Backward: a float of every weight line read, every gradient written (the devices'
        // values differ).
        double read = 0;
        for (int64_t i = 0; i < n; i += 16) read += own[d].data()[i];
        std::fill(grads[d].data(), grads[d].data() + n, 1e-4f * static_cast<float>(d + 1 + r));
        sinks[d] += read;
        group.barrier().wait();
        const auto [begin, end] = aligned_share(n, devices, d);
        const auto start = Clock::now();
        tree_sum(sources, summed.data(), begin, end);
        sum_each[d] = seconds_since(start);
        kernel->update(weights.data(), summed.data(), slots, begin, end, iteration, 1e-3, threads,
                       0);
      });
      group.run([&](int d) {
        const auto start = Clock::now();
        std::copy(weights.data(), weights.data() + n, own[d].data());
        copy_each[d] = seconds_since(start);
      });
      sum.push_back(mean_of(sum_each));
      copy.push_back(mean_of(copy_each));
    }
    // Every device holds the host's updated weights: the updates and the copies ran.
    double read = 0;
    for (const double v : sinks) read += v;
    bool copied = weights.data()[0] != 0.5f && weights.data()[n - 1] != 0.5f;
    for (int d = 0; d < devices; ++d) {
      for (const int64_t i : {int64_t{0}, n / 2, n - 1}) {
        copied = copied && own[d].data()[i] == weights.data()[i];
      }
    }
    if (!std::isfinite(read) || !copied) {
      throw Error("host_exchange: the devices' weights are not the host's updated weights");
    }
    out.push_back({4 * n, median_of(copy), median_of(sum)});
  }
  return out;
}

std::vector<int64_t> host_exchange_sizes(int64_t private_cache, int64_t shared_cache, int devices) {
  const int64_t smallest = int64_t{64} << 10;
  const int64_t shared_fits =
      std::max<int64_t>(shared_cache, 0) / (2 * int64_t{std::max(devices, 1)} + 3);
  const int64_t fits = std::max(private_cache > 0 ? private_cache : int64_t{1} << 20, shared_fits);
  // Whole 4 KiB pages, within [64 KiB, 16 MiB].
  return doubling_sizes(smallest, std::clamp(fits / 4096 * 4096, smallest, int64_t{16} << 20));
}

}  // namespace tandem::detail
