#include "advise/window_check.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "advise/probes.h"

namespace tandem::detail {
namespace {

// The fastest hand-off and cache reading so far per device count (none yet: absent).
std::mutex fastest_mutex;
std::map<int, double> fastest_handoff, fastest_cache;

void note_fastest(std::map<int, double>& fastest, int devices, double seconds) {
  const std::lock_guard<std::mutex> lock(fastest_mutex);
  const auto [at, added] = fastest.try_emplace(devices, seconds);
  if (!added) at->second = std::min(at->second, seconds);
}

double fastest_of(const std::map<int, double>& fastest, int devices) {
  const std::lock_guard<std::mutex> lock(fastest_mutex);
  const auto at = fastest.find(devices);
  return at == fastest.end() ? 0 : at->second;
}

// Floats in each of a device's two buffers for cache_seconds: a quarter of the private cache.
int64_t cache_floats() {
  static const int64_t floats = [] {
    const int64_t cache = private_cache_bytes();
    return std::max<int64_t>(
        1024, (cache > 0 ? cache : int64_t{1} << 20) / 4 / static_cast<int64_t>(sizeof(float)));
  }();
  return floats;
}

// The calling thread's two buffers of `n` floats for cache_seconds (a of zeros, b of ones),
// kept between readings: a buffer's first touch would time the page faults. `n` is the same
// on every call (cache_floats).
std::pair<float*, float*> own_buffers(size_t n) {
  thread_local std::vector<float> a, b;
  if (a.size() != n) {
    a.assign(n, 0.0f);
    b.assign(n, 1.0f);
  }
  return {a.data(), b.data()};
}

// The same in one region aligned to and sized in 2 MiB, which the kernel is asked to back with
// huge pages (with transparent huge pages off, or none free, it keeps 4 KiB pages).
std::pair<float*, float*> huge_page_buffers(size_t n) {
  constexpr size_t kHugePage = size_t{2} << 20;
  struct Region {
    float* floats = nullptr;
    size_t n = 0;  // at the first call; cache_floats() never changes
    ~Region() { std::free(floats); }
  };
  thread_local Region region;
  if (region.floats != nullptr && region.n != n) {
    throw std::logic_error("cache reading: buffers of another size asked on one thread");
  }
  if (region.floats == nullptr) {
    region.n = n;
    const size_t bytes = (2 * n * sizeof(float) + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, bytes);
    if (memory == nullptr) throw std::bad_alloc();
    madvise(memory, bytes, MADV_HUGEPAGE);  // a request: refused, the pages stay small
    region.floats = static_cast<float*>(memory);
    std::fill(region.floats, region.floats + n, 0.0f);
    std::fill(region.floats + n, region.floats + 2 * n, 1.0f);
  }
  return {region.floats, region.floats + n};
}

// Spins until `ball` holds `value`, yielding after kSpins tries (a few microseconds, far
// above a hand-off between two cores; where two devices share a core, the other then runs). A
// yield after a few tries, as the devices' barrier makes, would time the yield (a system call,
// about 1 us on a virtual machine), not the hand-off.
void wait_for(const std::atomic<int>& ball, int value) {
  constexpr int kSpins = 1 << 14;
  for (int spins = 0; ball.load(std::memory_order_acquire) != value; ++spins) {
    if (spins > kSpins) std::this_thread::yield();
  }
}

}  // namespace

double handoff_seconds(DeviceGroup& group) {
  const int devices = group.plan().devices;
  if (devices < 2) return 0;
  // Its own line, so nothing else the devices touch shares it.
  struct alignas(64) Line {
    std::atomic<int> ball{0};
  };
  Line line;
  double slowest = 0;
  for (int other = 1; other < devices; ++other) {
    line.ball.store(0);
    double seconds = 0;
    // Trip 0 untimed: both devices awake and at it (a device asleep between tasks wakes in
    // tens of microseconds on a virtual machine, as much as the whole timed trips near).
    group.run([&](int d) {
      if (d == other) {
        for (int i = 0; i <= kHandoffTrips; ++i) {
          wait_for(line.ball, 2 * i + 1);
          line.ball.store(2 * i + 2, std::memory_order_release);
        }
      } else if (d == 0) {
        Clock::time_point start;
        for (int i = 0; i <= kHandoffTrips; ++i) {
          if (i == 1) start = Clock::now();
          line.ball.store(2 * i + 1, std::memory_order_release);
          wait_for(line.ball, 2 * i + 2);
        }
        seconds = seconds_since(start) / (2.0 * kHandoffTrips);
      }
    });
    slowest = std::max(slowest, seconds);
  }
  note_fastest(fastest_handoff, devices, slowest);
  return slowest;
}

double best_handoff_seconds(int devices) {
  return fastest_of(fastest_handoff, devices);
}

std::vector<double> cache_seconds_each(DeviceGroup& group, CacheBuffers buffers) {
  std::vector<double> best(static_cast<size_t>(group.plan().devices));
  group.run([&](int d) {
    const auto n = static_cast<size_t>(cache_floats());
    const auto [a, b] = buffers == CacheBuffers::kHugePages ? huge_page_buffers(n) : own_buffers(n);
    group.barrier().wait();  // every device awake: the passes run at once
    double fastest = 0;
    for (int pass = 0; pass < kCachePasses; ++pass) {
      const Clock::time_point start = Clock::now();
      for (size_t i = 0; i < n; ++i) b[i] += a[i];
      const double seconds = seconds_since(start);
      if (pass == 0 || seconds < fastest) fastest = seconds;
    }
    best[static_cast<size_t>(d)] = fastest;
  });
  return best;
}

double cache_seconds(DeviceGroup& group, CacheBuffers buffers) {
  const std::vector<double> each = cache_seconds_each(group, buffers);
  const double slowest = *std::max_element(each.begin(), each.end());
  note_fastest(fastest_cache, group.plan().devices, slowest);
  return slowest;
}

double best_cache_seconds(int devices) {
  return fastest_of(fastest_cache, devices);
}

double steal_seconds(const std::string& proc_stat) {
  std::ifstream in(proc_stat);
  std::string line, cpu;
  if (!std::getline(in, line)) return -1;
  std::istringstream fields(line);
  fields >> cpu;
  if (cpu != "cpu") return -1;
  long long ticks = 0;
  for (int i = 0; i < 8; ++i) {
    if (!(fields >> ticks)) return -1;  // user nice system idle iowait irq softirq steal
  }
  const long hz = sysconf(_SC_CLK_TCK);
  return ticks >= 0 && hz > 0 ? static_cast<double>(ticks) / static_cast<double>(hz) : -1;
}

int online_cpus() {
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

WindowEdge window_edge(DeviceGroup& group) {
  const double handoff = handoff_seconds(group);
  const double cache = cache_seconds(group);
  return {handoff, steal_seconds(), Clock::now(), cache};
}

void Fastest::note(const WindowEdge& edge) {
  if (edge.handoff > 0 && (handoff <= 0 || edge.handoff < handoff)) handoff = edge.handoff;
  if (edge.cache > 0 && (cache <= 0 || edge.cache < cache)) cache = edge.cache;
}

Window window_between(const WindowEdge& before, const WindowEdge& after, int cpus) {
  Window w;
  w.handoff = std::max(before.handoff, after.handoff);
  if (before.cache > 0 && after.cache > 0) w.cache = std::max(before.cache, after.cache);
  if (before.steal >= 0 && after.steal >= before.steal) {
    w.stolen_seconds = after.steal - before.steal;
    const double cpu_seconds =
        std::chrono::duration<double>(after.at - before.at).count() * std::max(cpus, 1);
    w.steal = cpu_seconds > 0 ? std::min(1.0, w.stolen_seconds / cpu_seconds) : 0;
  }
  return w;
}

bool Window::crowded(double fastest_cache) const {
  return cache_crowded(cache, fastest_cache);
}

bool Window::disturbed(const Fastest& fastest) const {
  return (fastest.handoff > 0 && handoff > apart_handoff() * fastest.handoff) ||
         counted_steal() > kQuietSteal;
}

}  // namespace tandem::detail
