// Whether the cores were where a probe of devices at once started on, and its units of work
// timed again when they were not. A virtual machine's vCPUs are the host's threads, and the
// host moves them: on the Zen 4 of 2026-12-07 (bench/placement_bench, 599 samples over 300 s,
// held_out_windows_zen4's placement.json) two vCPUs pinned to devices 0 and 1 handed a cache
// line over in 24-53 ns in 89% of the samples and in 171-205 ns (5th-95th percentiles) in the
// other 11%, for up to 12 s at a time; apart, calibrate's shards' update at once (both devices
// each updating its half of one buffer both had read) took 10.75x half of one device's alone,
// near 2.80x (medians). Runs 2 of three held-out sets had timed it at
// 11.6-14.9x, the runs around them at 2.8-4.3x (docs/SCALING.md, "Where the host puts the two
// vCPUs"). What a unit's window reads at its edges: the devices' cores' hand-off
// (handoff_seconds), the CPU time the hypervisor took meanwhile (steal_seconds), and how fast
// the devices stream their cores' private caches at once (cache_seconds): with the cores near
// and nothing stolen, a core's cache shared with another guest's thread still slows a step
// whose model lives in it (hardware_profile.h, kCrowdedCache). The first two disturb a window;
// the third is recorded only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "advise/hardware_profile.h"
#include "parallel/device_group.h"
#include "profile/phase_timer.h"

namespace tandem::detail {

// The devices' cores' hand-off on `group` (2 or more devices): device 0 and each other device
// in turn pass a cache line back and forth kHandoffTrips times, each spinning for it (yielding
// only after microseconds), after an untimed trip that finds both awake; seconds one way, the
// slowest pair's. 0 for one device. The whole takes 50-110 us with the Zen 4's two cores near,
// 340-410 us apart.
inline constexpr int kHandoffTrips = 1000;
double handoff_seconds(DeviceGroup& group);

// The fastest handoff_seconds this process measured on groups of `devices` devices (0 before
// the first): their cores as near as the host puts them. Where devices always sit apart (two
// sockets), it is slow too, and the windows compare with it, not with a constant; groups of
// another size may span cores further apart, and keep their own.
double best_handoff_seconds(int devices);

// The devices' private caches at once on `group` (1 or more devices): every device, after a
// barrier that finds all awake, sums b += a over two float buffers of its own, a quarter of its
// core's private cache each (private_cache_bytes(); 1 MiB where the system reports none),
// kCachePasses passes back to back (the first brings them into the cache); each device's best
// pass, seconds. cache_seconds: the slowest device's, noted for best_cache_seconds.
// Where the two buffers live: kOwnPages, vectors of the device thread, on 4 KiB pages wherever
// the allocator finds them (the tools' readings); kHugePages, one region of the device thread
// aligned to 2 MiB that the kernel is asked to back with huge pages (madvise MADV_HUGEPAGE; a
// huge page is contiguous memory, so every set of the cache holds as many of its lines; where
// the kernel refuses, 4 KiB pages again). bench/reader_bench compares the two. Both count
// toward best_cache_seconds alike, so a process compares readings of one kind only.
inline constexpr int kCachePasses = 3;
enum class CacheBuffers { kOwnPages, kHugePages };
std::vector<double> cache_seconds_each(DeviceGroup& group,
                                       CacheBuffers buffers = CacheBuffers::kOwnPages);
double cache_seconds(DeviceGroup& group, CacheBuffers buffers = CacheBuffers::kOwnPages);

// The fastest cache_seconds this process measured on groups of `devices` devices (0 before
// the first).
double best_cache_seconds(int devices);

// A cache reading crowded: over kCrowdedCache times `fastest_cache` (none before a fastest).
inline bool cache_crowded(double cache, double fastest_cache) {
  return fastest_cache > 0 && cache > kCrowdedCache * fastest_cache;
}

// The CPU time the hypervisor ran something else on this machine's CPUs since boot, seconds
// summed over the CPUs: the eighth number (steal, in clock ticks) of `proc_stat`'s first line;
// negative where the file or the number is missing.
double steal_seconds(const std::string& proc_stat = "/proc/stat");

// One window's readings at an edge.
struct WindowEdge {
  double handoff = 0;  // handoff_seconds
  double steal = -1;   // steal_seconds() (negative: not known)
  Clock::time_point at;
  double cache = 0;  // cache_seconds (0: not read)
};

// The fastest readings so far, which a window is judged against (0: none yet).
struct Fastest {
  double handoff = 0, cache = 0;
  // Keeps each of the edge's readings that is faster.
  void note(const WindowEdge& edge);
};

// The edge now on `group`'s devices: the hand-off, then the cache reading, then the steal.
WindowEdge window_edge(DeviceGroup& group);

// The window between two edges: the slower hand-off of the two, the share of the `cpus` CPUs'
// time stolen between them (0 where either steal is unknown), and the slower cache reading (0
// where either edge has none).
struct Window {
  double handoff = 0, steal = 0, stolen_seconds = 0, cache = 0;
  // The steal as a probe's window records it: 0 under two ticks (kStealFloorSeconds).
  double counted_steal() const { return stolen_seconds >= kStealFloorSeconds ? steal : 0; }
  // The cores' caches crowded: the cache reading over kCrowdedCache times `fastest_cache`
  // (recorded, not judged).
  bool crowded(double fastest_cache) const;
  // Apart (over apart_handoff() times the fastest hand-off so far) or counted_steal over
  // kQuietSteal.
  bool disturbed(const Fastest& fastest) const;
};
Window window_between(const WindowEdge& before, const WindowEdge& after, int cpus);

// The CPUs the system has online (1 or more).
int online_cpus();

// Runs unit(0), unit(1), ... unit(units - 1), each between two edges read by `edge()` (the edge
// after one unit is the edge before the next), and times a unit again while its window was
// disturbed against the fastest readings so far (`fastest`, or a faster edge's); then, as the
// fastest may have come after them (or during those timed again), judges the kept units again
// against it, and times those disturbed again, until none is or the budget is spent. `units`
// more at most in all (a probe takes at most twice its time, and its polls). Before each unit
// timed again, waits for a quiet window: `pause()`, then an edge, until the window between the
// last two edges is not disturbed or the probe's polls (`window.waits`) reach `wait_polls`
// (quiet_wait_polls(): kQuietWaitSeconds / kQuietPollSeconds unless set); once they have, a
// unit is timed again at once. Returns what each kept unit returned with its window, in order,
// and in `window` the units kept and timed again, the polls, the kept windows' slowest
// hand-off, highest counted steal (over `cpus` CPUs) and slowest cache reading, the fastest
// readings at the end, and the kept units of this and earlier calls into `window` crowded
// against the fastest cache reading then. A unit that runs again runs as it ran the first
// time (the caller's buffers as the last unit left them).
template <class Unit, class Edge, class Pause>
auto quiet_windows(int units, Unit&& unit, Edge&& edge, Pause&& pause, int cpus, Fastest fastest,
                   ProbeWindow& window, int wait_polls = quiet_wait_polls()) {
  using Kept = decltype(unit(0));
  const auto read = [&] {
    const WindowEdge e = edge();
    fastest.note(e);
    return e;
  };
  WindowEdge before = read();
  // Unit k in a window of its own: what it returned, and the window.
  const auto timed = [&](int k) {
    Kept value = unit(k);
    const WindowEdge after = read();
    const Window w = window_between(before, after, cpus);
    before = after;
    return std::pair<Kept, Window>(std::move(value), w);
  };
  // Polls until the window between the last two edges is quiet, or the probe's polls are spent.
  const auto wait_quiet = [&] {
    while (window.waits < wait_polls) {
      pause();
      ++window.waits;
      const WindowEdge e = read();
      const bool quiet = !window_between(before, e, cpus).disturbed(fastest);
      before = e;
      if (quiet) return;
    }
  };
  int again = units;
  // Unit k's result, timed again in a quiet window while disturbed and the budget lasts;
  // whether it was.
  const auto settle = [&](int k, std::pair<Kept, Window>& result) {
    bool redone = false;
    while (result.second.disturbed(fastest) && again > 0) {
      --again;
      ++window.redone;
      wait_quiet();
      result = timed(k);
      redone = true;
    }
    return redone;
  };
  std::vector<std::pair<Kept, Window>> results;
  for (int k = 0; k < units; ++k) {
    results.push_back(timed(k));
    settle(k, results.back());
  }
  // Judged again until a pass finds every kept unit quiet against the fastest so far (a unit
  // timed again, or its polls, may bring a faster one) or the budget is spent.
  for (bool again_judged = true; again_judged && again > 0;) {
    again_judged = false;
    for (int k = 0; k < units && again > 0; ++k) again_judged |= settle(k, results[k]);
  }
  for (const auto& [value, w] : results) {
    window.kept += 1;
    window.handoff = std::max(window.handoff, w.handoff);
    window.steal = std::max(window.steal, w.counted_steal());
    window.cache = std::max(window.cache, w.cache);
    if (w.cache > 0) window.kept_caches.push_back(w.cache);
  }
  window.best_handoff = fastest.handoff;
  window.best_cache = window.cache > 0 ? fastest.cache : 0;
  if (window.best_cache > 0) {
    window.crowded = 0;
    for (const double cache : window.kept_caches) {
      window.crowded += cache_crowded(cache, window.best_cache);
    }
  }
  return results;
}

// quiet_windows' kept values alone.
template <class Unit, class Edge, class Pause>
auto quiet_units(int units, Unit&& unit, Edge&& edge, Pause&& pause, int cpus, Fastest fastest,
                 ProbeWindow& window, int wait_polls = quiet_wait_polls()) {
  auto results = quiet_windows(units, std::forward<Unit>(unit), std::forward<Edge>(edge),
                               std::forward<Pause>(pause), cpus, fastest, window, wait_polls);
  std::vector<typename decltype(results)::value_type::first_type> kept;
  for (auto& result : results) kept.push_back(std::move(result.first));
  return kept;
}

// One repetition of each of `units` runs, each in a quiet window (quiet_windows): time(k)
// times a repetition of run k; before run k is timed again, forget(k) takes out its last
// repetition, the one its disturbed window held (each run is timed once per call, so its last
// is that one whatever ran between). Each run's kept window, and the times it was timed again.
struct Repetition {
  Window window;
  int redone = 0;
};
template <class Time, class Forget, class Edge, class Pause>
std::vector<Repetition> repetitions_in_quiet_windows(int units, Time&& time, Forget&& forget,
                                                     Edge&& edge, Pause&& pause, int cpus,
                                                     Fastest fastest, ProbeWindow& window) {
  std::vector<int> calls(static_cast<size_t>(units), 0);
  const auto kept = quiet_windows(
      units,
      [&](int k) {
        if (calls[static_cast<size_t>(k)]++ > 0) forget(k);
        time(k);
        return k;
      },
      std::forward<Edge>(edge), std::forward<Pause>(pause), cpus, fastest, window);
  std::vector<Repetition> out;
  for (size_t k = 0; k < kept.size(); ++k) out.push_back({kept[k].second, calls[k] - 1});
  return out;
}

// The edges of `group`'s devices' cores (window_edge), kQuietPollSeconds of sleep between
// polls, this machine's CPUs and the fastest readings this process measured on as many devices,
// for quiet_windows and quiet_units.
struct GroupEdges {
  DeviceGroup& group;
  WindowEdge operator()() const { return window_edge(group); }
  static void pause() {
    std::this_thread::sleep_for(std::chrono::duration<double>(kQuietPollSeconds));
  }
  Fastest fastest() const {
    const int devices = group.plan().devices;
    return {best_handoff_seconds(devices), best_cache_seconds(devices)};
  }
};

// quiet_units on GroupEdges.
template <class Unit>
auto in_quiet_windows(DeviceGroup& group, int units, Unit&& unit, ProbeWindow& window) {
  const GroupEdges edges{group};
  return quiet_units(units, std::forward<Unit>(unit), edges, &GroupEdges::pause, online_cpus(),
                     edges.fastest(), window);
}

}  // namespace tandem::detail
