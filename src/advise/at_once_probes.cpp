#include "advise/at_once_probes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>

#include "advise/step_run.h"
#include "advise/window_check.h"
#include "core/aligned_buffer.h"
#include "optim/optimizer_kernel.h"
#include "parallel/device_group.h"
#include "parallel/shared_memory_communicator.h"
#include "profile/phase_timer.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

UpdateAtOnce::UpdateAtOnce(DeviceGroup& group, int64_t bytes, int threads)
    : group_(group),
      devices_(group.plan().devices),
      threads_(threads),
      n_(std::max<int64_t>(bytes / 4, int64_t{16} * devices_)),
      kernel_(make_optimizer_kernel(RMSprop())),
      shared_(n_),
      shared_state_(n_),
      each_(devices_),
      sinks_(devices_) {
  for (int d = 0; d < devices_; ++d) {
    params_.emplace_back(n_);
    state_.emplace_back(n_);
    grads_.emplace_back(n_);
    std::fill(params_[d].data(), params_[d].data() + n_, 0.5f);
    std::fill(state_[d].data(), state_[d].data() + n_, 0.f);
  }
  std::fill(shared_.data(), shared_.data() + n_, 0.5f);
  std::fill(shared_state_.data(), shared_state_.data() + n_, 0.f);
}

// Backward's gradients, then forward's read of the parameters: a float of every line.
void UpdateAtOnce::prepare(int d, const float* read) {
  std::fill(grads_[d].data(), grads_[d].data() + n_, value_);
  double sum = 0;
  for (int64_t i = 0; i < n_; i += 16) sum += read[i];
  sinks_[d] += sum;
}

// Device d's update of w[begin, end) with its gradients, timed into each_[d].
void UpdateAtOnce::timed_update(int d, float* w, float* s, int64_t begin, int64_t end) {
  float* slots[] = {s};
  const auto start = Clock::now();
  kernel_->update(w, grads_[d].data(), slots, begin, end, iteration_, 1e-3, threads_, 0);
  each_[d] = seconds_since(start);
}

void UpdateAtOnce::next_round() {
  value_ = -value_;
  ++iteration_;
}

double UpdateAtOnce::alone() {
  group_.run([&](int d) {
    if (d != 0) return;
    prepare(0, params_[0].data());
    timed_update(0, params_[0].data(), state_[0].data(), 0, n_);
  });
  return each_[0];
}

double UpdateAtOnce::own() {
  group_.run([&](int d) {
    prepare(d, params_[d].data());
    group_.barrier().wait();
    timed_update(d, params_[d].data(), state_[d].data(), 0, n_);
  });
  return mean_of(each_);
}

double UpdateAtOnce::shard() {
  group_.run([&](int d) {
    prepare(d, shared_.data());
    group_.barrier().wait();
    timed_update(d, shared_.data(), shared_state_.data(), n_ * d / devices_,
                 n_ * (d + 1) / devices_);
  });
  return mean_of(each_);
}

void UpdateAtOnce::check_finite() const {
  double read = 0;
  for (const double v : sinks_) read += v;
  if (!std::isfinite(read)) throw Error("update_contention: the parameters read back non-finite");
}

std::vector<UpdateContention> update_contention(const std::vector<int64_t>& bytes, int devices,
                                                int threads, int repeats, ProbeWindow& window) {
  if (devices < 2) {
    throw Error("update_contention: 2 or more devices, got " + std::to_string(devices));
  }
  DeviceGroup group(plan_devices(devices, threads));
  std::vector<UpdateContention> out;
  for (const int64_t size : bytes) {
    UpdateAtOnce update(group, size, threads);
    // A round: alone, own and shard.
    const auto round = [&](int) {
      update.next_round();
      const double alone = update.alone(), own = update.own();
      return std::array<double, 3>{alone, own, update.shard()};
    };
    std::vector<double> alone, own, shard;
    for (const auto& t : in_quiet_windows(group, std::max(repeats, 1), round, window)) {
      alone.push_back(t[0]);
      own.push_back(t[1]);
      shard.push_back(t[2]);
    }
    update.check_finite();
    const double a = median_of(alone);
    out.push_back({4 * update.floats(), median_of(own) / a, median_of(shard) * devices / a});
  }
  return out;
}

std::vector<ExchangeSeconds> deterministic_exchange(const std::vector<int64_t>& bytes, int devices,
                                                    int shards, int repeats) {
  if (devices < 2 || shards < 1) {
    throw Error("deterministic_exchange: 2 or more devices and 1 or more shards, got " +
                std::to_string(devices) + " and " + std::to_string(shards));
  }
  DeviceGroup group(plan_devices(devices, 1));
  std::vector<ExchangeSeconds> out;
  for (const int64_t size : bytes) {
    const int64_t n = std::max<int64_t>(size / 4, 16);
    // Each device's parameters, gradients and shard copies.
    std::vector<AlignedBuffer> params, grads;
    std::vector<std::vector<AlignedBuffer>> copies(devices);
    std::vector<std::vector<float*>> sources(devices);
    for (int d = 0; d < devices; ++d) {
      params.emplace_back(n);
      grads.emplace_back(n);
      std::fill(params[d].data(), params[d].data() + n, 0.5f);
      for (int j = 0; j < shards; ++j) {
        copies[d].emplace_back(n);
        sources[d].push_back(copies[d].back().data());
      }
    }
    std::vector<double> copy_each(devices), tree_each(devices), sinks(devices);
    std::vector<double> copy, tree;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      group.run([&](int d) {
        double seconds = 0, sum = 0;
        for (int j = 0; j < shards; ++j) {
          // Backward: a float of every parameter line read, every gradient written.
          for (int64_t i = 0; i < n; i += 16) sum += params[d].data()[i];
          std::fill(grads[d].data(), grads[d].data() + n, 1e-3f * static_cast<float>(j + r));
          group.barrier().wait();
          const auto start = Clock::now();
          std::copy(grads[d].data(), grads[d].data() + n, sources[d][j]);
          seconds += seconds_since(start);
        }
        group.barrier().wait();
        const auto start = Clock::now();
        tree_sum(sources[d], grads[d].data(), 0, n);
        tree_each[d] = seconds_since(start);
        copy_each[d] = seconds / shards;
        sinks[d] += sum + grads[d].data()[n - 1];
      });
      copy.push_back(mean_of(copy_each));
      tree.push_back(mean_of(tree_each));
    }
    double read = 0;
    for (const double v : sinks) read += v;
    if (!std::isfinite(read)) throw Error("deterministic_exchange: the sums read back non-finite");
    out.push_back({4 * n, median_of(copy), median_of(tree)});
  }
  return out;
}

std::vector<int64_t> exchange_sizes(int64_t shared_cache, int devices, int shards) {
  const int64_t smallest = int64_t{256} << 10;
  const int64_t fits = shared_cache > 0
                           ? shared_cache / (std::max(devices, 1) * (std::max(shards, 1) + 2))
                           : int64_t{4} << 20;
  // Whole 4 KiB pages, within [256 KiB, 256 MiB].
  return doubling_sizes(smallest, std::clamp(fits / 4096 * 4096, smallest, int64_t{256} << 20));
}

std::vector<int64_t> doubling_sizes(int64_t smallest, int64_t largest) {
  if (smallest <= 0 || smallest > largest || largest > (int64_t{1} << 60)) {
    throw Error("doubling_sizes: needs 0 < smallest <= largest <= 2^60, got " +
                std::to_string(smallest) + " and " + std::to_string(largest));
  }
  std::vector<int64_t> sizes;
  for (int64_t b = smallest; b <= largest; b *= 2) sizes.push_back(b);
  if (sizes.back() < largest) sizes.push_back(largest);
  return sizes;
}

}  // namespace tandem::detail
