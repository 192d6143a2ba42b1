// DeviceGroup: N CPU "devices", each a worker thread pinned to its own group of cores and
// running oneDNN/OpenMP with that many threads. run() executes a task on every device and
// waits; an exception on any device aborts the shared barrier (so no device waits forever)
// and is rethrown to the caller, naming the device.
//
// Every wait spins before it sleeps: a device at the barrier and a device between tasks for
// up to kDeviceSpinSeconds, the caller of run() for its devices up to kCallerSpinSeconds. On a
// virtual machine a sleeping thread's idle vCPU halts, and a round of tasks that woke its devices
// cost 45-77 us (tandem calibrate's fork_join before these spins), more than a small model's whole
// step; a step's tasks follow each other within microseconds, so a spinning device catches
// the next one (docs/PERFORMANCE.md, "Devices that spin for their next task").
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace tandem::detail {

// How long a waiting thread spins before it sleeps: longer than a wake-up costs on a
// virtual machine, short enough that a spinning thread does not hold a core for long.
inline constexpr double kDeviceSpinSeconds = 200e-6;

// How long the caller of run() spins for its devices before it sleeps: longer than a small
// model's rounds of tasks (the host strategy's step of 784-256-256-10, three rounds, takes
// 0.4 to 2.3 ms at batches 32 to 512: docs/PERFORMANCE.md, "A caller that spins through a
// round"), so a round under it costs no wake-up, and one over it pays one (50-77 us on a
// virtual machine: docs/SCALING.md), at most 4% of it. The caller has no core of its own:
// where it shares one with a device its spin yields, and a yield returns after the device's
// time slice, so there it sleeps after one or a few yields, as with the devices' spin
// (device_group.cpp). Where its core is otherwise idle it spins up to 2 ms per round (a
// core's SMT sibling, where a device runs, is slowed meanwhile).
inline constexpr double kCallerSpinSeconds = 2e-3;

// A reusable barrier for the devices of one group. wait() throws AbortedError once any
// participant called abort(), so a failing device releases the others. A device that
// arrives early spins a little before it sleeps (above).
class DeviceBarrier {
 public:
  explicit DeviceBarrier(int parties) : parties_(parties) {}
  void wait();
  void abort();
  void reset();  // clears an abort, between tasks
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

 private:
  const int parties_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> released_{0};  // generation_, readable without the mutex
  std::atomic<bool> aborted_{false};
};

// Thrown from DeviceBarrier::wait on the devices that did not fail themselves.
struct AbortedError {};

struct DevicePlan {
  int devices = 1;
  int threads_per_device = 1;
  std::vector<std::vector<int>> cores;  // per device; empty: no pinning
  bool oversubscribed = false;          // more threads than available cores
};

// Splits the cores this process may use into `devices` groups of threads_per_device (<= 0:
// an equal share, at least one).
DevicePlan plan_devices(int devices, int threads_per_device);

class DeviceGroup {
 public:
  explicit DeviceGroup(const DevicePlan& plan);
  ~DeviceGroup();
  DeviceGroup(const DeviceGroup&) = delete;
  DeviceGroup& operator=(const DeviceGroup&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  const DevicePlan& plan() const { return plan_; }
  DeviceBarrier& barrier() { return barrier_; }

  // Runs task(device) on every device's thread and waits for all. The first exception (not
  // counting AbortedError) is rethrown with the device index added when it is a tandem
  // Error; the barrier is aborted so the other devices return.
  // Any callable taking the device index; it is borrowed, not copied (no allocation).
  template <class Task>
  void run(Task&& task) {
    run_erased(&call<std::remove_reference_t<Task>>, &task);
  }

 private:
  void stop_workers();  // joins every started worker
  using Erased = void (*)(void* task, int device);
  template <class Task>
  static void call(void* task, int device) {
    (*static_cast<Task*>(task))(device);
  }
  void run_erased(Erased fn, void* task);
  void worker_loop(int device);

  DevicePlan plan_;
  DeviceBarrier barrier_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  Erased task_fn_ = nullptr;
  void* task_ = nullptr;
  // Written under mutex_; atomic so that a waiting thread can spin on them without it.
  std::atomic<uint64_t> task_generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;
  int error_device_ = -1;
};

}  // namespace tandem::detail
