#include "parallel/device_group.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <iostream>
#include <system_error>

#include "profile/phase_timer.h"
#include "profile/trace.h"
#include "tandem/config.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Spins (yielding after the first tries, so a thread that shares the core still runs)
// until done() or `limit` seconds. The clock is read before every yield: a yield to a
// thread on the same core returns after that thread's time slice (milliseconds), so a check
// every 64 yields kept a caller that shares its core with a device yielding through the
// whole of the seed's 80 ms step on 2 ranks (docs/PERFORMANCE.md, "A spin that ends on
// time").
template <class Done>
void spin_until(double limit, Done&& done) {
  const auto start = Clock::now();
  for (int spins = 0; !done(); ++spins) {
    if (spins < 64) continue;
    if (seconds_since(start) > limit) return;
    std::this_thread::yield();
  }
}

}  // namespace

void DeviceBarrier::wait() {
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    if (aborted()) throw AbortedError{};
    generation = generation_;
    if (++waiting_ == parties_) {
      waiting_ = 0;
      ++generation_;
      released_.store(generation_, std::memory_order_release);
      cv_.notify_all();
      return;
    }
  }
  spin_until(kDeviceSpinSeconds,
             [&] { return released_.load(std::memory_order_acquire) != generation || aborted(); });
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return generation_ != generation || aborted(); });
  if (generation_ == generation) throw AbortedError{};
}

void DeviceBarrier::abort() {
  std::lock_guard lock(mutex_);
  aborted_.store(true, std::memory_order_release);
  cv_.notify_all();
}

void DeviceBarrier::reset() {
  std::lock_guard lock(mutex_);
  aborted_.store(false, std::memory_order_release);
  waiting_ = 0;
}

DevicePlan plan_devices(int devices, int threads_per_device) {
  if (devices < 1) throw ConfigError("devices must be >= 1, got " + std::to_string(devices));
  std::vector<int> cores;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cores.push_back(c);
    }
  }
  if (cores.empty()) cores.push_back(0);
  DevicePlan plan;
  plan.devices = devices;
  const int available = static_cast<int>(cores.size());
  plan.threads_per_device =
      threads_per_device > 0 ? threads_per_device : std::max(1, available / devices);
  // Bounded by the machine: thousands of threads crashed OpenMP or hung thread creation.
  const int64_t threads = int64_t{devices} * plan.threads_per_device;
  if (threads > int64_t{kOversubscription} * available) {
    throw ConfigError(std::to_string(devices) + " devices x " +
                      std::to_string(plan.threads_per_device) + " threads is more than " +
                      std::to_string(kOversubscription) + " threads per core (" +
                      std::to_string(available) + " cores available here)");
  }
  plan.oversubscribed = devices * plan.threads_per_device > available;
  if (!plan.oversubscribed) {
    for (int d = 0; d < devices; ++d) {
      plan.cores.emplace_back(cores.begin() + d * plan.threads_per_device,
                              cores.begin() + (d + 1) * plan.threads_per_device);
    }
  }
  return plan;
}

DeviceGroup::DeviceGroup(const DevicePlan& plan) : plan_(plan), barrier_(plan.devices) {
  try {
    for (int d = 0; d < plan.devices; ++d) workers_.emplace_back([this, d] { worker_loop(d); });
  } catch (const std::system_error& e) {
    // The system refused a thread: stop the ones started (the destructor will not run).
    const size_t started = workers_.size();
    stop_workers();
    throw ConfigError("cannot start device thread " + std::to_string(started) + " of " +
                      std::to_string(plan.devices) + ": " + e.what() + "; use fewer devices");
  }
}

void DeviceGroup::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

DeviceGroup::~DeviceGroup() {
  stop_workers();
}

void DeviceGroup::worker_loop(int device) {
  Tracer::name_thread("device " + std::to_string(device));
  if (!plan_.cores.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : plan_.cores[device]) CPU_SET(c, &set);
    // Best effort: containers may forbid it; the device still works, unpinned.
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  omp_set_num_threads(plan_.threads_per_device);
  uint64_t seen = 0;
  for (;;) {
    Erased fn;
    void* task;
    spin_until(kDeviceSpinSeconds, [&] {
      return stopping_.load(std::memory_order_acquire) ||
             task_generation_.load(std::memory_order_acquire) != seen;
    });
    {
      std::unique_lock lock(mutex_);
      start_cv_.wait(lock, [&] { return stopping_ || task_generation_ != seen; });
      if (stopping_) return;
      seen = task_generation_;
      fn = task_fn_;
      task = task_;
    }
    try {
      fn(task, device);
    } catch (const AbortedError&) {
      // Another device failed first; its error is the one reported.
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) {
        error_ = std::current_exception();
        error_device_ = device;
      }
      barrier_.abort();
    }
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
}

void DeviceGroup::run_erased(Erased fn, void* task) {
  {
    std::lock_guard lock(mutex_);
    task_fn_ = fn;
    task_ = task;
    pending_ = size();
    error_ = nullptr;
    error_device_ = -1;
    ++task_generation_;
  }
  start_cv_.notify_all();
  spin_until(kCallerSpinSeconds, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  std::exception_ptr error;
  int device;
  {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    error = error_;
    device = error_device_;
  }
  barrier_.reset();
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const ConfigError& e) {
    throw ConfigError("device " + std::to_string(device) + ": " + e.what());
  } catch (const ShapeError& e) {
    throw ShapeError("device " + std::to_string(device) + ": " + e.what());
  } catch (const BackendError& e) {
    throw BackendError("device " + std::to_string(device) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error("device " + std::to_string(device) + ": out of memory");
  }
}

}  // namespace tandem::detail
