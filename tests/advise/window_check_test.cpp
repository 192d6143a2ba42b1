// Where a probe of devices at once ran (window_check.h): the hypervisor's steal read from
// /proc/stat's first line, the hand-off between the devices' cores, the units of a probe timed
// again while their windows were disturbed (edges scripted here, so every case is fixed), and
// the profile's windows that calibrate refuses and advise warns of.
#include "advise/window_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "advise/hardware_profile.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

// /proc/stat's first line: the eighth number is the steal, in clock ticks.
TEST(WindowCheck, StealIsTheEighthNumberOfTheCpuLine) {
  test::TempDir dir;
  const auto stat = [&](const std::string& text) {
    const std::string path = dir.file("stat");
    std::ofstream(path) << text;
    return path;
  };
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_DOUBLE_EQ(steal_seconds(stat("cpu  10 20 30 40 50 60 70 880 0 0\ncpu0 1 2 3\n")),
                   880 / hz);
  EXPECT_DOUBLE_EQ(steal_seconds(stat("cpu 1 2 3 4 5 6 7 0\n")), 0);
  // Missing, short, or not the machine's line: not known.
  EXPECT_LT(steal_seconds(dir.file("none")), 0);
  EXPECT_LT(steal_seconds(stat("cpu 1 2 3 4 5 6 7\n")), 0);
  EXPECT_LT(steal_seconds(stat("cpu0 1 2 3 4 5 6 7 8\n")), 0);
  EXPECT_LT(steal_seconds(stat("")), 0);
  // This machine's, where it has one: known and not negative.
  if (std::ifstream("/proc/stat")) {
    EXPECT_GE(steal_seconds(), 0);
  }
}

// The hand-off between two devices' cores takes time, well under a millisecond one way, and
// is noted as the fastest on 2 devices where it is; one device has no other core to hand to.
TEST(WindowCheck, TheHandoffIsTimedBetweenTheDevicesCores) {
  DeviceGroup two(plan_devices(2, 1));
  double fastest = 1;
  for (int i = 0; i < 3; ++i) {
    const double seconds = handoff_seconds(two);
    EXPECT_GT(seconds, 0);
    EXPECT_LT(seconds, 1e-3);
    fastest = std::min(fastest, seconds);
  }
  EXPECT_GT(best_handoff_seconds(2), 0);
  EXPECT_LE(best_handoff_seconds(2), fastest);
  DeviceGroup one(plan_devices(1, 1));
  EXPECT_EQ(handoff_seconds(one), 0);
  EXPECT_EQ(best_handoff_seconds(1), 0);
}

// A window between two edges: the slower hand-off, and the share of the CPUs' time stolen
// between them; disturbed when apart (over kApartHandoff times the fastest) or when its
// counted steal is over kQuietSteal, a tick or two of steal not counted.
TEST(WindowCheck, AWindowIsDisturbedWhenTheCoresAreApartOrTaken) {
  const Clock::time_point t0 = Clock::now();
  const auto at = [&](double s) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const Window near = window_between({25e-9, 10, at(0)}, {30e-9, 10, at(1)}, 2);
  EXPECT_DOUBLE_EQ(near.handoff, 30e-9);
  EXPECT_EQ(near.steal, 0);
  EXPECT_FALSE(near.disturbed({25e-9}));
  EXPECT_TRUE(near.disturbed({9e-9}));  // against a faster best: apart
  EXPECT_FALSE(near.disturbed({0}));    // no best yet
  const Window apart = window_between({170e-9, 10, at(0)}, {25e-9, 10, at(1)}, 2);
  EXPECT_TRUE(apart.disturbed({25e-9}));
  // 0.5 s of 2 CPUs' 2 s stolen: 25%.
  const Window taken = window_between({25e-9, 10, at(0)}, {25e-9, 10.5, at(1)}, 2);
  EXPECT_DOUBLE_EQ(taken.steal, 0.25);
  EXPECT_DOUBLE_EQ(taken.counted_steal(), 0.25);
  EXPECT_TRUE(taken.disturbed({25e-9}));
  // One tick (10 ms) of one CPU's 0.1 s: 10%, but under the floor.
  const Window tick = window_between({25e-9, 10, at(0)}, {25e-9, 10.01, at(0.1)}, 1);
  EXPECT_NEAR(tick.steal, 0.1, 1e-9);
  EXPECT_EQ(tick.counted_steal(), 0);
  EXPECT_FALSE(tick.disturbed({25e-9}));
  // Two ticks, whose seconds' difference rounds under 0.02: counted.
  const Window two = window_between({25e-9, 8.80, at(0)}, {25e-9, 8.82, at(0.1)}, 1);
  EXPECT_GT(two.counted_steal(), 0.19);
  EXPECT_TRUE(two.disturbed({25e-9}));
  // Steal unknown at either edge: none.
  EXPECT_EQ(window_between({25e-9, -1, at(0)}, {25e-9, 10, at(1)}, 2).steal, 0);
}

// A window's cache reading is the slower of its edges' (none where either edge has none),
// crowded over kCrowdedCache times the fastest; recorded, not judged: a crowded window with the
// cores near and nothing stolen is not disturbed.
TEST(WindowCheck, AWindowsCacheReadingIsRecordedNotJudged) {
  const Clock::time_point now = Clock::now();
  const Window w = window_between({25e-9, -1, now, 5e-6}, {25e-9, -1, now, 7.5e-6}, 2);
  EXPECT_DOUBLE_EQ(w.cache, 7.5e-6);
  EXPECT_TRUE(w.crowded(5e-6));  // 1.5x
  EXPECT_FALSE(w.disturbed({25e-9, 5e-6}));
  EXPECT_FALSE(w.crowded(5.5e-6));  // 1.36x
  EXPECT_FALSE(w.crowded(0));       // no fastest yet
  EXPECT_EQ(window_between({25e-9, -1, now, 5e-6}, {25e-9, -1, now}, 2).cache, 0);
  // The fastest readings an edge brings.
  Fastest fastest{30e-9, 6e-6};
  fastest.note({25e-9, -1, now, 7e-6});
  EXPECT_DOUBLE_EQ(fastest.handoff, 25e-9);
  EXPECT_DOUBLE_EQ(fastest.cache, 6e-6);
  fastest.note({40e-9, -1, now, 5e-6});
  EXPECT_DOUBLE_EQ(fastest.handoff, 25e-9);
  EXPECT_DOUBLE_EQ(fastest.cache, 5e-6);
  Fastest none;
  none.note({0, -1, now, 0});
  EXPECT_EQ(none.handoff, 0);
  EXPECT_EQ(none.cache, 0);
}

// The devices' cache reading on real devices: every device streams its own buffers; the
// slowest device's best pass, noted as the fastest for that many devices. (That the devices'
// passes overlap, which a barrier before them ensures, no test can see.)
TEST(WindowCheck, TheCacheReadingTimesEveryDevice) {
  for (const int devices : {1, 2}) {
    DeviceGroup group(plan_devices(devices, 1));
    double fastest = 1;
    for (int i = 0; i < 3; ++i) {
      const double seconds = cache_seconds(group);
      EXPECT_GT(seconds, 0);
      EXPECT_LT(seconds, 1);
      fastest = std::min(fastest, seconds);
    }
    EXPECT_GT(best_cache_seconds(devices), 0);
    EXPECT_LE(best_cache_seconds(devices), fastest);
    const WindowEdge edge = window_edge(group);
    EXPECT_GT(edge.cache, 0);
    EXPECT_EQ(edge.handoff > 0, devices > 1);
    // Every device streams, each its own best pass.
    const std::vector<double> each = cache_seconds_each(group);
    ASSERT_EQ(each.size(), static_cast<size_t>(devices));
    for (const double seconds : each) {
      EXPECT_GT(seconds, 0);
      EXPECT_LT(seconds, 1);
    }
  }
}

// The same reading over buffers asked of the kernel on huge pages (bench/reader_bench
// --huge-pages): every device reads, and the reading counts toward the fastest.
TEST(WindowCheck, TheCacheReadingOnHugePagesTimesEveryDevice) {
  for (const int devices : {1, 2}) {
    DeviceGroup group(plan_devices(devices, 1));
    const std::vector<double> each = cache_seconds_each(group, CacheBuffers::kHugePages);
    ASSERT_EQ(each.size(), static_cast<size_t>(devices));
    for (const double seconds : each) {
      EXPECT_GT(seconds, 0);
      EXPECT_LT(seconds, 1);
    }
    const double seconds = cache_seconds(group, CacheBuffers::kHugePages);
    EXPECT_GT(seconds, 0);
    EXPECT_GT(best_cache_seconds(devices), 0);
    EXPECT_LE(best_cache_seconds(devices), seconds);
  }
}

// Edges read in order from a script of hand-offs and, where given, cache readings (steal not
// known; past their end, their last), the units' calls, and the pauses between polls.
struct Script {
  std::vector<double> handoffs;
  std::vector<double> caches = {};
  size_t next = 0;
  std::vector<int> calls;
  int pauses = 0;

  WindowEdge edge() {
    const size_t at = next++;
    const double cache = caches.empty() ? 0 : caches.at(std::min(at, caches.size() - 1));
    return {handoffs.at(std::min(at, handoffs.size() - 1)), -1, Clock::now(), cache};
  }
};

std::vector<int> run(Script& s, int units, ProbeWindow& window, double fastest = 0) {
  int call = 0;
  return quiet_units(
      units,
      [&](int k) {
        s.calls.push_back(k);
        return 100 * k + call++;  // which call of which unit
      },
      [&] { return s.edge(); }, [&] { ++s.pauses; }, 2, {fastest}, window);
}

TEST(WindowCheck, UnitsInQuietWindowsAreKeptInOrder) {
  Script s{{25e-9, 26e-9, 25e-9, 30e-9}};
  ProbeWindow window;
  EXPECT_EQ(run(s, 3, window), (std::vector<int>{0, 101, 202}));
  EXPECT_EQ(window.kept, 3);
  EXPECT_EQ(window.redone, 0);
  EXPECT_EQ(window.waits, 0);
  EXPECT_EQ(s.pauses, 0);
  EXPECT_DOUBLE_EQ(window.handoff, 30e-9);
  EXPECT_DOUBLE_EQ(window.best_handoff, 25e-9);
  EXPECT_FALSE(window.disturbed());
}

// A unit whose window had an edge with the cores apart is timed again once a poll's window is
// quiet (two near edges): what is kept is its later call, whose window starts at the last
// poll; the next unit's window is not tainted by the apart edge either.
TEST(WindowCheck, AUnitWhoseCoresWereApartIsTimedAgain) {
  Script s{{25e-9, 25e-9, 170e-9, 25e-9, 25e-9, 25e-9, 25e-9}};
  ProbeWindow window;
  const std::vector<int> kept = run(s, 3, window);
  EXPECT_EQ(s.calls, (std::vector<int>{0, 1, 1, 2}));
  EXPECT_EQ(kept, (std::vector<int>{0, 102, 203}));
  EXPECT_EQ(window.kept, 3);
  EXPECT_EQ(window.redone, 1);
  EXPECT_EQ(window.waits, 2);  // [170, 25] apart, then [25, 25]
  EXPECT_EQ(s.pauses, 2);
  EXPECT_DOUBLE_EQ(window.handoff, 25e-9);
  EXPECT_FALSE(window.disturbed());
  // The first edges apart, the fastest comes later: the first unit passes against the fastest
  // so far (itself), and is judged again, and timed again, once the faster one came.
  Script late{{170e-9, 170e-9, 25e-9, 25e-9, 25e-9, 25e-9, 25e-9}};
  ProbeWindow first;
  EXPECT_EQ(run(late, 2, first), (std::vector<int>{3, 102}));
  EXPECT_EQ(late.calls, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(first.redone, 2);
  EXPECT_EQ(first.waits, 2);
  EXPECT_DOUBLE_EQ(first.handoff, 25e-9);
  EXPECT_DOUBLE_EQ(first.best_handoff, 25e-9);
  EXPECT_FALSE(first.disturbed());
}

// A unit timed again at the end may bring a faster hand-off, against which a unit the same
// pass already found quiet is apart: the kept units are judged again until every one is quiet.
TEST(WindowCheck, UnitsAreJudgedAgainUntilAllAreQuietAgainstTheFastest) {
  // Unit 1's window (60, 150) passes against 60 ns; unit 2's ends at 40 ns and is timed again
  // at once. The end's pass finds unit 0 (60) quiet against 40 and unit 1 (150) apart; the
  // poll before it is timed again reads 15 ns, so unit 0 is apart too: a second pass.
  Script s{{60e-9, 60e-9, 150e-9, 40e-9, 40e-9, 40e-9, 15e-9, 15e-9, 15e-9, 15e-9}};
  ProbeWindow window;
  const std::vector<int> kept = run(s, 3, window);
  EXPECT_EQ(s.calls, (std::vector<int>{0, 1, 2, 2, 1, 0}));
  EXPECT_EQ(kept, (std::vector<int>{5, 104, 203}));
  EXPECT_EQ(window.redone, 3);
  EXPECT_EQ(window.waits, 3);
  EXPECT_DOUBLE_EQ(window.best_handoff, 15e-9);
  EXPECT_DOUBLE_EQ(window.handoff, 40e-9);
  EXPECT_FALSE(window.disturbed()) << window.words();
}

// Repetitions of runs in quiet windows: a run timed again forgets its own last repetition,
// even when the end's judging times it again after other runs were timed (as in the test
// above: unit 0 again after units 2 and 1), so that each run keeps exactly its last one.
TEST(WindowCheck, ARepetitionTimedAgainReplacesItsOwnRunsLast) {
  Script s{{60e-9, 60e-9, 150e-9, 40e-9, 40e-9, 40e-9, 15e-9, 15e-9, 15e-9, 15e-9}};
  ProbeWindow window;
  std::vector<std::vector<int>> timed(3);
  int call = 0;
  const std::vector<Repetition> kept = repetitions_in_quiet_windows(
      3, [&](int k) { timed[static_cast<size_t>(k)].push_back(call++); },
      [&](int k) { timed[static_cast<size_t>(k)].pop_back(); }, [&] { return s.edge(); },
      [&] { ++s.pauses; }, 2, {}, window);
  // Calls in order: 0, 1, 2, 2 again, 1 again, 0 again.
  EXPECT_EQ(timed, (std::vector<std::vector<int>>{{5}, {4}, {3}}));
  ASSERT_EQ(kept.size(), 3u);
  for (const Repetition& r : kept) EXPECT_EQ(r.redone, 1);
  EXPECT_DOUBLE_EQ(kept[0].window.handoff, 15e-9);
  EXPECT_DOUBLE_EQ(kept[2].window.handoff, 40e-9);
  EXPECT_EQ(window.redone, 3);
}

// The cores apart for a while: the unit is not timed again until they are near again, so one
// apart run costs one unit of the budget, however long it lasts.
TEST(WindowCheck, AUnitIsTimedAgainOnlyOnceTheCoresAreNear) {
  Script s{{25e-9, 170e-9, 170e-9, 170e-9, 180e-9, 25e-9, 25e-9, 25e-9}};
  ProbeWindow window;
  EXPECT_EQ(run(s, 1, window), (std::vector<int>{1}));
  EXPECT_EQ(s.calls, (std::vector<int>{0, 0}));
  EXPECT_EQ(window.redone, 1);
  EXPECT_EQ(window.waits, 5);  // three apart, [180, 25] apart, [25, 25] quiet
  EXPECT_EQ(s.pauses, 5);
  EXPECT_FALSE(window.disturbed());
  EXPECT_NE(window.words().find("after 1.25 s waiting for quiet"), std::string::npos)
      << window.words();
  // The polls are the probe's, over every call recording into its window: one left, then none.
  Script more{{25e-9, 170e-9, 170e-9, 25e-9, 25e-9}};
  ProbeWindow spent;
  spent.waits = quiet_wait_polls() - 1;
  run(more, 1, spent);
  EXPECT_EQ(more.pauses, 1);
  EXPECT_EQ(spent.waits, quiet_wait_polls());
  EXPECT_EQ(more.calls, (std::vector<int>{0, 0}));
  EXPECT_TRUE(spent.disturbed());  // timed again at once after one poll: [170, 25]
}

// Apart for good: the probe polls until its polls are spent, then times each unit again
// until it has spent as many again as it has units, keeps the rest as they come, and the
// record says it was disturbed.
TEST(WindowCheck, APersistentlyDisturbedProbeStopsTimingAgainAndSaysSo) {
  Script s{std::vector<double>(20, 170e-9)};
  s.handoffs[0] = 25e-9;
  ProbeWindow window;
  const std::vector<int> kept = run(s, 3, window);
  EXPECT_EQ(kept.size(), 3u);
  EXPECT_EQ(s.calls.size(), 6u);  // 3 units, 3 again
  EXPECT_EQ(window.kept, 3);
  EXPECT_EQ(window.redone, 3);
  EXPECT_EQ(window.waits, quiet_wait_polls());
  EXPECT_EQ(s.pauses, quiet_wait_polls());
  EXPECT_DOUBLE_EQ(window.handoff, 170e-9);
  EXPECT_TRUE(window.disturbed());
  EXPECT_NE(window.words().find("apart or taken"), std::string::npos) << window.words();
  // A faster hand-off measured before the probe judges its first window too.
  Script before{{30e-9, 30e-9, 30e-9}};
  ProbeWindow w;
  run(before, 1, w, 5e-9);
  EXPECT_EQ(w.redone, 1);
  EXPECT_TRUE(w.disturbed());
}

// With the cores near and nothing stolen, a unit whose cache reading was crowded is kept as it
// came; the record keeps the kept windows' slowest reading, the fastest, and how many kept
// units were crowded against it, over every call into it. A unit timed again because its cores
// were apart counts by its kept window only.
TEST(WindowCheck, CrowdedUnitsAreKeptAndCounted) {
  Script s{{25e-9}, {5e-6, 5.1e-6, 9e-6, 5.2e-6}};
  ProbeWindow window;
  EXPECT_EQ(run(s, 3, window), (std::vector<int>{0, 101, 202}));
  EXPECT_EQ(window.redone, 0);
  EXPECT_EQ(window.waits, 0);
  EXPECT_DOUBLE_EQ(window.cache, 9e-6);
  EXPECT_DOUBLE_EQ(window.best_cache, 5e-6);
  EXPECT_EQ(window.crowded, 2);  // [5.1, 9] and [9, 5.2]
  EXPECT_FALSE(window.disturbed()) << window.words();
  EXPECT_NE(window.words().find("steal 0.0%; cache 9.0 us (fastest 5.0 us), 2 of 3 crowded"),
            std::string::npos)
      << window.words();
  // A second call into the same record counts every kept unit again against its fastest (5.2
  // us here, the script's own): [5.2, 9] is crowded, and so are the first call's two.
  Script more{{25e-9}, {5.2e-6, 9e-6}};
  run(more, 1, window);
  EXPECT_EQ(window.kept, 4);
  EXPECT_EQ(window.crowded, 3);
  // Timed again for its cores apart: the kept window's reading counts, not the first one's.
  Script apart{{25e-9, 170e-9, 25e-9, 25e-9, 25e-9}, {5e-6, 9e-6, 5e-6, 5e-6, 5e-6}};
  ProbeWindow again;
  run(apart, 1, again);
  EXPECT_EQ(again.redone, 1);
  EXPECT_EQ(again.crowded, 0);
  EXPECT_DOUBLE_EQ(again.cache, 5e-6);
  // Edges without a cache reading record none, and count none.
  Script plain{{25e-9}};
  ProbeWindow none;
  run(plain, 1, none);
  EXPECT_EQ(none.cache, 0);
  EXPECT_EQ(none.best_cache, 0);
  EXPECT_LT(none.crowded, 0);
  EXPECT_EQ(none.words().find("cache"), std::string::npos) << none.words();
}

// How many times the fastest counts as apart is one setting for the process (calibrate
// --apart-handoff), 1 or more; the windows and the records are judged with it.
TEST(WindowCheck, TheApartFactorIsSetForTheProcess) {
  EXPECT_EQ(apart_handoff(), kApartHandoff);
  const Window w = window_between({25e-9, -1, Clock::now()}, {60e-9, -1, Clock::now()}, 2);
  const ProbeWindow record{1, 0, 60e-9, 0, 25e-9};
  EXPECT_FALSE(w.disturbed({25e-9}));
  EXPECT_FALSE(record.disturbed());
  set_apart_handoff(2);
  EXPECT_TRUE(w.disturbed({25e-9}));
  EXPECT_TRUE(record.disturbed());
  set_apart_handoff(kApartHandoff);
  for (const double bad : {0.5, -1.0, std::nan("")}) {
    test::expect_error<ConfigError>([&] { set_apart_handoff(bad); }, {"--apart-handoff"});
  }
  EXPECT_EQ(apart_handoff(), kApartHandoff);
}

// How long a probe waits for quiet windows at most is one setting for the process too
// (--quiet-wait): a minute of polls unless set; 0 times again at once.
TEST(WindowCheck, TheWaitForQuietIsSetForTheProcess) {
  EXPECT_EQ(quiet_wait_polls(), 240);
  set_quiet_wait(1);
  EXPECT_EQ(quiet_wait_polls(), 4);
  Script s{{25e-9, 170e-9, 170e-9}};
  ProbeWindow window;
  run(s, 1, window);
  EXPECT_EQ(s.pauses, 4);
  set_quiet_wait(0);
  Script at_once{{25e-9, 170e-9, 25e-9, 25e-9}};
  ProbeWindow none;
  EXPECT_EQ(run(at_once, 1, none), (std::vector<int>{1}));
  EXPECT_EQ(at_once.pauses, 0);
  EXPECT_EQ(none.redone, 1);  // [25, 170], then at once [170, 25]: apart again
  EXPECT_TRUE(none.disturbed());
  set_quiet_wait(kQuietWaitSeconds);
  for (const double bad : {-1.0, 3601.0, std::nan("")}) {
    test::expect_error<ConfigError>([&] { set_quiet_wait(bad); }, {"--quiet-wait"});
  }
  EXPECT_EQ(quiet_wait_polls(), 240);
}

// A profile's windows: each probe's recorded one, judged against the fastest hand-off of all
// of them on as many devices; a profile without windows has none disturbed.
TEST(WindowCheck, AProfilesDisturbedWindowsAreNamed) {
  HardwareProfile hw;
  EXPECT_TRUE(disturbed_windows(hw).empty());
  hw.device.update_contention_devices = 2;
  hw.device.update_contention_window = {7, 2, 60e-9, 0, 30e-9};
  DenseRateCurve c;
  c.widths = {784, 256, 10};
  WeightGradShards w;
  w.devices = 2;
  w.at_once_window = {10, 0, 30e-9, 0.01, 20e-9};
  c.weight_grad_gemms.push_back(w);
  hw.device.dense_rates.push_back(c);
  // 60 ns: 2x the update's own fastest, 3x the steps' (20 ns): disturbed only against all.
  EXPECT_FALSE(hw.device.update_contention_window.disturbed());
  hw.device.update_contention_window.handoff = 61e-9;
  const std::vector<std::string> named = disturbed_windows(hw);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_NE(named[0].find("update_contention"), std::string::npos) << named[0];
  EXPECT_NE(named[0].find("61 ns"), std::string::npos) << named[0];
  // Stolen time disturbs the steps' window too.
  hw.device.dense_rates[0].weight_grad_gemms[0].at_once_window.steal = 0.2;
  const std::vector<std::string> both = disturbed_windows(hw);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NE(both[1].find("784-256-10 on 2 devices"), std::string::npos) << both[1];
  // 4 devices' steps, whose cores are further apart: judged against their own fastest only.
  WeightGradShards four;
  four.devices = 4;
  four.at_once_window = {10, 0, 200e-9, 0, 100e-9};
  hw.device.dense_rates[0].weight_grad_gemms.push_back(four);
  EXPECT_EQ(disturbed_windows(hw).size(), 2u);
  hw.device.dense_rates[0].weight_grad_gemms[1].at_once_window.handoff = 301e-9;
  EXPECT_EQ(disturbed_windows(hw).size(), 3u);
  // Cache readings are recorded, not judged: a crowded window is not named for it, and says its
  // reading against its own fastest, the one its units were counted against, when it is.
  hw.device.update_contention_window.handoff = 30e-9;
  hw.device.dense_rates[0].weight_grad_gemms[0].at_once_window.steal = 0.01;
  hw.device.dense_rates[0].weight_grad_gemms[1].at_once_window.handoff = 200e-9;
  ASSERT_TRUE(disturbed_windows(hw).empty());
  hw.device.update_contention_window.cache = 9e-6;
  hw.device.update_contention_window.best_cache = 6e-6;
  hw.device.update_contention_window.crowded = 3;
  hw.device.dense_rates[0].weight_grad_gemms[0].at_once_window.cache = 5e-6;
  hw.device.dense_rates[0].weight_grad_gemms[0].at_once_window.best_cache = 5e-6;
  EXPECT_TRUE(disturbed_windows(hw).empty());
  hw.device.update_contention_window.handoff = 61e-9;
  const std::vector<std::string> crowded = disturbed_windows(hw);
  ASSERT_EQ(crowded.size(), 1u);
  EXPECT_NE(crowded[0].find("apart or taken; cache 9.0 us (fastest 6.0 us), 3 of 7 crowded"),
            std::string::npos)
      << crowded[0];
}

}  // namespace
}  // namespace tandem::detail
