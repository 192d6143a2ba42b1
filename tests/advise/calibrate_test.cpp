// tandem calibrate's arithmetic: the dense rate it solves from 1-device steps is the one the
// cost model then predicts those steps with (the two sides of one formula), and a plan that
// cannot be measured is an error naming the option.
#include "advise/calibrate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "advise/allreduce_probe.h"
#include "advise/at_once_probes.h"
#include "advise/calibrate_dense.h"
#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/host_exchange_probe.h"
#include "advise/probes.h"
#include "advise/step_run.h"
#include "advise/weight_grad_probes.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

// The weight-gradient GEMMs are timed once per distinct row count, ascending, for each device
// count of 2 or more (ascending, once each), every pass taking time (warm, caches emptied and as
// a step runs them), the whole GEMMs the same for every count, the steps at once with where
// they ran; with no count of 2 or more there are no shards to time.
// Sets the process's wait for quiet windows for a scope (a probe on a loaded test machine
// polls a second at most, not a minute), and puts the default back however the scope ends.
struct QuietWaitFor {
  explicit QuietWaitFor(double seconds) { set_quiet_wait(seconds); }
  ~QuietWaitFor() { set_quiet_wait(kQuietWaitSeconds); }
  QuietWaitFor(const QuietWaitFor&) = delete;
  QuietWaitFor& operator=(const QuietWaitFor&) = delete;
};

TEST(Calibrate, WeightGradGemmsAreTimedAtEachDistinctRowCount) {
  const QuietWaitFor second(1);  // four polls per probe, two probes (2 and 4 devices)
  const auto timed = weight_grad_gemm_seconds({64, 48, 10}, {8, 4, 8}, {4, 1, 2, 4}, 1, 1);
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed[0].devices, 2);
  EXPECT_EQ(timed[1].devices, 4);
  for (const auto& w : timed) {
    ASSERT_EQ(w.points.size(), 2u);
    EXPECT_EQ(w.points[0].rows, 4);
    EXPECT_EQ(w.points[1].rows, 8);
    for (size_t i = 0; i < 2; ++i) {
      const auto& g = w.points[i];
      for (const double t : {g.whole, g.shard, g.whole_cold, g.shard_cold, g.whole_step,
                             g.shard_step, g.input_step}) {
        EXPECT_GT(t, 0);
        EXPECT_LT(t, 1);
      }
      EXPECT_EQ(g.whole, timed[0].points[i].whole);
      EXPECT_EQ(g.whole_cold, timed[0].points[i].whole_cold);
    }
    // The steps at once at the same rows, each of its round's (1) two row counts kept in a
    // window of its own, at most as many timed again.
    EXPECT_EQ(w.at_once_window.kept, 2);
    EXPECT_LE(w.at_once_window.redone, 2);
    EXPECT_GT(w.at_once_window.best_handoff, 0);
    EXPECT_GE(w.at_once_window.handoff, w.at_once_window.best_handoff);
    ASSERT_EQ(w.at_once.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const auto& a = w.at_once[i];
      EXPECT_EQ(a.rows, w.points[i].rows);
      for (const double t : {a.best.forward_alone, a.best.backward_alone, a.best.forward_shared,
                             a.best.backward_shared}) {
        EXPECT_GT(t, 0);
        EXPECT_LT(t, 1);
      }
      // The rounds' median, no faster than their best.
      ASSERT_TRUE(a.has_medians());
      EXPECT_GE(a.median.forward_alone, a.best.forward_alone);
      EXPECT_GE(a.median.backward_alone, a.best.backward_alone);
      EXPECT_GE(a.median.forward_shared, a.best.forward_shared);
      EXPECT_GE(a.median.backward_shared, a.best.backward_shared);
      EXPECT_LT(a.median.forward_alone + a.median.backward_alone, 1);
    }
  }
  EXPECT_TRUE(weight_grad_gemm_seconds({64, 48, 10}, {8}, {1}, 1, 1).empty());
}

// The update on several devices at once: one entry per size asked, ascending, in whole
// floats, both ratios positive and finite (a broken timer would give 0 or inf); where its
// rounds ran: each of the 3 rounds of both sizes kept, at most as many timed again, each after
// a wait for quiet, the hand-offs measured; fewer than 2 devices have nothing to contend with and
// are refused.
TEST(Calibrate, UpdateContentionIsMeasuredAtEachSize) {
  ProbeWindow window;
  const QuietWaitFor second(1);
  const auto contention = update_contention({4096, 65539}, 2, 1, 3, window);
  EXPECT_EQ(window.kept, 6);
  EXPECT_LE(window.redone, 6);
  // A round timed again waited for a quiet window first (at least one poll), and only then;
  // four polls at most (a quiet machine times nothing again: both 0).
  EXPECT_EQ(window.redone > 0, window.waits > 0) << window.words();
  EXPECT_LE(window.waits, 4);
  EXPECT_GT(window.best_handoff, 0);
  EXPECT_GE(window.handoff, window.best_handoff);
  ASSERT_EQ(contention.size(), 2u);
  EXPECT_EQ(contention[0].bytes, 4096);
  EXPECT_EQ(contention[1].bytes, 65536);  // 65539 bytes: 16384 whole floats
  for (const auto& u : contention) {
    for (const double ratio : {u.own, u.shard}) {
      EXPECT_GT(ratio, 0);
      EXPECT_TRUE(std::isfinite(ratio));
    }
  }
  test::expect_error<Error>([&] { update_contention({4096}, 1, 1, 1, window); },
                            {"2 or more devices"});
}

// A profile whose update at once kept a round with the cores apart: calibrate refuses it,
// naming the probe and the file it did not write, unless allowed, then warns; a quiet one
// passes without a word.
TEST(Calibrate, ADisturbedProbeFailsCalibrateUnlessAllowed) {
  std::ifstream in(profiles_directory() + "/this-machine-cpu.json");
  json profile = json::parse(in);
  profile["device"]["update_contention"] = {{{"bytes", 262144}, {"own", 1.0}, {"shard", 3.0}}};
  profile["device"]["update_contention_devices"] = 2;
  profile["device"]["update_contention_window"] = {
      {"kept", 7}, {"redone", 7}, {"handoff", 170e-9}, {"steal", 0}, {"best_handoff", 25e-9}};
  std::ostringstream log;
  test::expect_error<Error>(
      [&] { check_windows(profile, false, "p.json", log); },
      {"update_contention", "170 ns", "--allow-disturbed", "p.json was not written"});
  check_windows(profile, true, "p.json", log);
  EXPECT_NE(log.str().find("warning"), std::string::npos) << log.str();
  std::ostringstream quiet;
  profile["device"]["update_contention_window"]["handoff"] = 30e-9;
  check_windows(profile, false, "p.json", quiet);
  EXPECT_EQ(quiet.str(), "");
}

// Deterministic mode's exchange on several devices at once: one entry per size asked,
// ascending, in whole floats, the copy's and the tree's seconds positive and finite; fewer
// than 2 devices, or no copies, are refused.
TEST(Calibrate, TheDeterministicExchangeIsMeasuredAtEachSize) {
  const auto exchange = deterministic_exchange({4096, 65539}, 2, 2, 3);
  ASSERT_EQ(exchange.size(), 2u);
  EXPECT_EQ(exchange[0].bytes, 4096);
  EXPECT_EQ(exchange[1].bytes, 65536);
  for (const auto& e : exchange) {
    for (const double seconds : {e.copy, e.tree}) {
      EXPECT_GT(seconds, 0);
      EXPECT_TRUE(std::isfinite(seconds));
    }
  }
  test::expect_error<Error>([] { deterministic_exchange({4096}, 1, 2, 1); }, {"2 or more devices"});
  test::expect_error<Error>([] { deterministic_exchange({4096}, 2, 0, 1); }, {"1 or more shards"});
}

// The host strategy's copies on several devices at once: one entry per size asked, ascending,
// in whole floats (at least 16 per device), the copy's and the sum's seconds positive and
// finite; fewer than 2 devices are refused.
TEST(Calibrate, TheHostsCopiesAreMeasuredAtEachSize) {
  const auto host = host_exchange({4096, 65539, 1 << 20}, 2, 1, 3);
  ASSERT_EQ(host.size(), 3u);
  EXPECT_EQ(host[0].bytes, 4096);
  EXPECT_EQ(host[1].bytes, 65536);
  EXPECT_EQ(host[2].bytes, 1 << 20);
  for (const auto& e : host) {
    for (const double seconds : {e.copy, e.sum}) {
      EXPECT_GT(seconds, 0);
      EXPECT_TRUE(std::isfinite(seconds));
    }
  }
  EXPECT_EQ(host_exchange({8}, 3, 1, 1).at(0).bytes, 4 * 16 * 3);
  test::expect_error<Error>([] { host_exchange({4096}, 1, 1, 1); }, {"2 or more devices"});
}

// The all-reduce of one bucket on several devices at once: one entry per size asked, ascending,
// in whole floats (at least 16 per device; a size that gives no more floats than the one before
// is timed once), its seconds positive and finite (the probe checks the sums itself); fewer than
// 2 devices are refused. Timed from 4 KiB, or the first power of two with a cache line per
// device, to 64 MiB, doubling.
TEST(Calibrate, TheAllreduceIsMeasuredAtEachBucketSize) {
  const auto allreduce = allreduce_exchange({4096, 65539, 1 << 20}, 2, 1, 3);
  ASSERT_EQ(allreduce.size(), 3u);
  EXPECT_EQ(allreduce[0].bytes, 4096);
  EXPECT_EQ(allreduce[1].bytes, 65536);
  EXPECT_EQ(allreduce[2].bytes, 1 << 20);
  for (const auto& e : allreduce) {
    EXPECT_GT(e.seconds, 0);
    EXPECT_TRUE(std::isfinite(e.seconds));
  }
  const auto three = allreduce_exchange({8, 16, 4096}, 3, 1, 2);
  ASSERT_EQ(three.size(), 2u);
  EXPECT_EQ(three[0].bytes, 4 * 16 * 3);
  EXPECT_EQ(three[1].bytes, 4096);
  test::expect_error<Error>([] { allreduce_exchange({4096}, 1, 1, 1); }, {"2 or more devices"});
  const std::vector<int64_t> sizes = allreduce_sizes(2);
  ASSERT_EQ(sizes.size(), 15u);
  EXPECT_EQ(sizes.front(), 4096);
  EXPECT_EQ(sizes.back(), int64_t{64} << 20);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], 2 * sizes[i - 1]);
  EXPECT_EQ(allreduce_sizes(64).front(), 4096);
  EXPECT_EQ(allreduce_sizes(65).front(), 8192);
  EXPECT_EQ(allreduce_sizes(128).front(), 8192);
  EXPECT_EQ(allreduce_sizes(1000).front(), 65536);
  EXPECT_EQ(allreduce_sizes(1000).back(), int64_t{64} << 20);
}

// The host's copies are timed from 64 KiB up to the core's private cache (1 MiB where unknown)
// or, where larger, the largest size whose buffers fit the shared cache, that size included
// (whole pages); never over 16 MiB.
TEST(Calibrate, TheHostsCopiesAreTimedUpToTheCoresOrTheSharedCache) {
  const int64_t KiB = 1024, MiB = KiB * KiB;
  const std::vector<int64_t> to_2mib = {64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, MiB, 2 * MiB};
  EXPECT_EQ(host_exchange_sizes(2 * MiB, 0, 2), to_2mib);
  EXPECT_EQ(host_exchange_sizes(0, 0, 2), std::vector<int64_t>(to_2mib.begin(), to_2mib.end() - 1));
  // Zen 4's 1 MiB; a 1.25 MiB L2 (some Intel cores) after the powers of two; not a whole page.
  EXPECT_EQ(host_exchange_sizes(MiB, 0, 2).back(), MiB);
  std::vector<int64_t> odd(to_2mib.begin(), to_2mib.end() - 1);
  odd.push_back(MiB + 256 * KiB);
  EXPECT_EQ(host_exchange_sizes(MiB + 256 * KiB, 0, 2), odd);
  EXPECT_EQ(host_exchange_sizes(MiB + 4096 + 100, 0, 2).back(), MiB + 4096);
  // A cache under 64 KiB still times 64 KiB; a huge one stops at 16 MiB.
  EXPECT_EQ(host_exchange_sizes(32 * KiB, 0, 2), std::vector<int64_t>{64 * KiB});
  EXPECT_EQ(host_exchange_sizes(int64_t{1} << 30, 0, 2).back(), 16 * MiB);
  // Beyond the private cache, up to the largest whose 2 x devices + 3 buffers fit the shared
  // cache: the Zen 4's 1 MiB L2 and 32 MiB L3, 2 devices: 7 buffers of 4.57 MiB, whole pages.
  const std::vector<int64_t> zen4 = host_exchange_sizes(MiB, 32 * MiB, 2);
  std::vector<int64_t> to_4mib(to_2mib);
  to_4mib.push_back(4 * MiB);
  to_4mib.push_back(32 * MiB / 7 / 4096 * 4096);
  EXPECT_EQ(zen4, to_4mib);
  // 4 devices: 11 buffers of 2.9 MiB; a shared cache whose share is smaller than the private
  // cache leaves the private cache's sizes; only a shared cache known: up to its share, or 1
  // MiB where that is less.
  EXPECT_EQ(host_exchange_sizes(MiB, 32 * MiB, 4).back(), 32 * MiB / 11 / 4096 * 4096);
  EXPECT_EQ(host_exchange_sizes(2 * MiB, 7 * MiB, 2), to_2mib);
  EXPECT_EQ(host_exchange_sizes(0, 14 * MiB, 2), to_2mib);
  EXPECT_EQ(host_exchange_sizes(0, 4 * MiB, 2).back(), MiB);
  // The Xeon's 480 MiB: 16 MiB at most.
  EXPECT_EQ(host_exchange_sizes(2 * MiB, 480 * MiB, 2).back(), 16 * MiB);
}

// A probe's sizes: the doublings of the smallest within the largest, then the largest where
// they miss it; one size where the two are equal; refused out of order, at 0 or beyond 2^60.
TEST(Calibrate, DoublingSizesEndAtTheLargest) {
  EXPECT_EQ(doubling_sizes(4, 16), (std::vector<int64_t>{4, 8, 16}));
  EXPECT_EQ(doubling_sizes(4, 20), (std::vector<int64_t>{4, 8, 16, 20}));
  EXPECT_EQ(doubling_sizes(5, 5), (std::vector<int64_t>{5}));
  for (const auto& [smallest, largest] :
       {std::pair<int64_t, int64_t>{8, 4}, {0, 4}, {-4, 4}, {4, (int64_t{1} << 60) + 1}}) {
    test::expect_error<Error>([&] { doubling_sizes(smallest, largest); },
                              {"0 < smallest <= largest"});
  }
}

// The exchange is timed from 256 KiB up to the largest gradients whose buffers on every device
// (parameters, gradients, a copy per micro-shard) fit the shared cache, that size included;
// up to 4 MiB where the cache is unknown; whole pages, never over 256 MiB.
TEST(Calibrate, TheDeterministicExchangeIsTimedUpToTheSharedCache) {
  const auto pow2 = [](int64_t from, int64_t to) {
    std::vector<int64_t> v;
    for (int64_t b = from; b <= to; b *= 2) v.push_back(b);
    return v;
  };
  const int64_t KiB = 1024, MiB = KiB * KiB;
  // A 32 MiB cache over 2 devices x (2 copies + 2): 4 MiB, a power of two.
  EXPECT_EQ(exchange_sizes(32 * MiB, 2, 2), pow2(256 * KiB, 4 * MiB));
  EXPECT_EQ(exchange_sizes(0, 2, 2), pow2(256 * KiB, 4 * MiB));
  // 480 MiB: 60 MiB, after the powers of two to 32 MiB.
  std::vector<int64_t> xeon = pow2(256 * KiB, 32 * MiB);
  xeon.push_back(60 * MiB);
  EXPECT_EQ(exchange_sizes(480 * MiB, 2, 2), xeon);
  // 4 devices with 1 copy each: 480 MiB / 12 = 40 MiB.
  EXPECT_EQ(exchange_sizes(480 * MiB, 4, 1).back(), 40 * MiB);
  // Not a whole page: rounded down to one.
  EXPECT_EQ(exchange_sizes(24 * MiB + 8 * 4096 * 8 + 100, 2, 2).back(), 3 * MiB + 32 * KiB);
  // A cache smaller than 256 KiB per buffer still times 256 KiB; a huge one stops at 256 MiB.
  EXPECT_EQ(exchange_sizes(1 * MiB, 2, 2), std::vector<int64_t>{256 * KiB});
  EXPECT_EQ(exchange_sizes(int64_t{16} << 30, 2, 2).back(), 256 * MiB);
}

// The shared cache's size is sysfs's level 3 entry among cpu0's caches, in K or M; none, or a
// size it cannot read, is 0 (the model then keeps its rules without it).
TEST(Calibrate, TheSharedCacheIsSysfsLevelThree) {
  test::TempDir dir;
  const auto entry = [&](int index, const std::string& level, const std::string& size) {
    const std::filesystem::path d = dir.path() / ("index" + std::to_string(index));
    std::filesystem::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "size") << size << "\n";
  };
  const std::string cache = dir.path().string();
  EXPECT_EQ(shared_cache_bytes(cache), 0);  // no entries
  entry(0, "1", "32K");
  entry(1, "2", "1024K");
  EXPECT_EQ(shared_cache_bytes(cache), 0);  // no level 3
  entry(2, "3", "32768K");
  EXPECT_EQ(shared_cache_bytes(cache), int64_t{32} << 20);
  entry(2, "3", "105M");
  EXPECT_EQ(shared_cache_bytes(cache), int64_t{105} << 20);
  entry(2, "3", "lots");
  EXPECT_EQ(shared_cache_bytes(cache), 0);
  entry(2, "3", "12G");
  EXPECT_EQ(shared_cache_bytes(cache), 0);
}

// Each timed repetition keeps its own phases per step, which calibrate takes medians of: one
// entry per time() call, the update taking time in each and less than its step, and together
// the phases over everything timed (the settling steps left out).
TEST(Calibrate, EachRepetitionKeepsItsOwnPhases) {
  StrategyOptions one;
  one.devices = 1;
  one.threads_per_device = 1;
  StepRun run(dense_stack({16, 8, 4}), 8, one);
  uint64_t seed = 1;
  for (int i = 0; i < 3; ++i) {
    run.settle(seed);
    run.time(2, seed);
  }
  const std::vector<double> updates = run.phase_per_step_each(Phase::optimizer);
  ASSERT_EQ(updates.size(), 3u);
  double sum = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    EXPECT_GT(updates[i], 0);
    EXPECT_LT(updates[i], run.seconds()[i]);
    sum += 2 * updates[i];
  }
  EXPECT_NEAR(sum / 6, run.phase_seconds().at(phase_name(Phase::optimizer)), 1e-12);
  EXPECT_EQ(run.phase_per_step_each(Phase::data).size(), 3u);
}

// A repetition forgotten (one timed again in a quiet window replaces it) leaves the seconds,
// the phases of each repetition and the phases over everything timed as they were before it;
// the next repetition counts as usual; nothing timed, nothing to forget.
TEST(Calibrate, AForgottenRepetitionLeavesNoTrace) {
  StrategyOptions one;
  one.devices = 1;
  one.threads_per_device = 1;
  StepRun run(dense_stack({16, 8, 4}), 8, one);
  test::expect_error<Error>([&] { run.forget_last(); }, {"forget_last", "nothing timed"});
  uint64_t seed = 1;
  run.settle(seed);
  run.time(3, seed);
  const std::vector<double> seconds = run.seconds();
  const std::vector<double> updates = run.phase_per_step_each(Phase::optimizer);
  const std::map<std::string, double> phases = run.phase_seconds();
  run.settle(seed);
  run.time(5, seed);
  ASSERT_EQ(run.seconds().size(), 2u);
  run.forget_last();
  EXPECT_EQ(run.seconds(), seconds);
  EXPECT_EQ(run.phase_per_step_each(Phase::optimizer), updates);
  for (const auto& [name, value] : phases) {
    EXPECT_NEAR(run.phase_seconds().at(name), value, 1e-9 * std::max(value, 1e-6)) << name;
  }
  run.time(2, seed);
  const std::vector<double> kept = run.phase_per_step_each(Phase::optimizer);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NEAR((3 * kept[0] + 2 * kept[1]) / 5, run.phase_seconds().at(phase_name(Phase::optimizer)),
              1e-12);
}

// Shards are timed for 2, 4, 8, ... devices below the profile's and for its own count.
TEST(Calibrate, ShardsAreTimedForPowersOfTwoAndTheProfilesDevices) {
  EXPECT_EQ(shard_device_counts(1), std::vector<int>{});
  EXPECT_EQ(shard_device_counts(2), std::vector<int>({2}));
  EXPECT_EQ(shard_device_counts(6), std::vector<int>({2, 4, 6}));
  EXPECT_EQ(shard_device_counts(8), std::vector<int>({2, 4, 8}));
  EXPECT_EQ(shard_device_counts(9), std::vector<int>({2, 4, 8, 9}));
}

TEST(Calibrate, FitLineIsLeastSquares) {
  const auto [slope, intercept] = fit_line({1, 2, 3, 4}, {3, 5, 7, 9});
  EXPECT_DOUBLE_EQ(slope, 2);
  EXPECT_DOUBLE_EQ(intercept, 1);
  // Off the line: the least-squares answer, not an endpoint's.
  const auto [s2, i2] = fit_line({0, 1, 2}, {0, 2, 1});
  EXPECT_DOUBLE_EQ(s2, 0.5);
  EXPECT_DOUBLE_EQ(i2, 0.5);
}

// Compute times made by the cost model from a known device: calibration recovers the
// device, and the profile predicts the 1-device steps it was solved from.
TEST(Calibrate, DenseRateInvertsTheCostModel) {
  HardwareProfile hw = parse_hardware_profile(
      {{"max_devices", 2},
       {"device", {{"sustained_flops", 2.5e11}, {"half_rows", 24}, {"memory_bandwidth", 3e10}}},
       {"host", {{"memory_bandwidth", 1e10}}},
       {"host_device", {{"bandwidth", 1e10}}},
       {"device_device", {{"bandwidth", 1e10}}}},
      "synthetic");
  Scenario s;
  s.model = ModelCost::dense({784, 512, 256, 10});
  std::vector<double> rows, compute;
  for (int64_t r : {8, 32, 128, 512}) {
    s.batch = r;
    const Prediction p = predict(hw, s);
    rows.push_back(static_cast<double>(r));
    compute.push_back(p.phases.at("compute"));
  }
  const DenseRate d = dense_rate_from_steps(s.model.step_flops(1), rows, compute);
  EXPECT_NEAR(d.sustained_flops / 2.5e11, 1.0, 1e-9);
  EXPECT_NEAR(d.half_rows, 24.0, 1e-6);
  // A rate that does not grow with the rows is no rate.
  EXPECT_EQ(dense_rate_from_steps(1e6, {8, 16}, {0.01, 0.01}).sustained_flops, 0);
}

// bench validate's refit keeps a model's weight-gradient timings for other device counts and
// replaces those for the count it timed again, in the profile and in its document.
TEST(Calibrate, ARefitReplacesOnlyTheDeviceCountTimedAgain) {
  const std::vector<int64_t> widths = {784, 64, 10};
  const json old_two = {
      {"devices", 2},
      {"points",
       {{{"rows", 8}, {"whole", 1.0}, {"shard", 1.0}, {"whole_cold", 1.0}, {"shard_cold", 1.0}}}}};
  json old_four = old_two;
  old_four["devices"] = 4;
  HardwareProfile hw = parse_hardware_profile({{"max_devices", 4},
                                               {"device",
                                                {{"sustained_flops", 2.5e11},
                                                 {"memory_bandwidth", 3e10},
                                                 {"dense_rates",
                                                  {{{"widths", widths},
                                                    {"sustained_flops", 1e11},
                                                    {"weight_grad_gemms", {old_two, old_four}}}}}}},
                                               {"host", {{"memory_bandwidth", 1e10}}},
                                               {"host_device", {{"bandwidth", 1e10}}},
                                               {"device_device", {{"bandwidth", 1e10}}}},
                                              "synthetic");
  StrategyOptions one_device;
  one_device.threads_per_device = 1;
  std::vector<std::unique_ptr<StepRun>> runs;
  uint64_t seed = 1;
  for (const int64_t rows : {8, 2048}) {
    runs.push_back(std::make_unique<StepRun>(dense_stack(widths), rows, one_device));
    runs.back()->time(1, seed);
  }
  // Best: forward and backward alone 1 and 2, shared 1.5 each, micro-shards 2.4 and 0.6, own
  // copies 1.2 and 2.1 with a wait of 0.3 and an all-reduce of 0.7; median: 2, 2, 1.5, 1.5, 4,
  // 2, 2.5, 2.5, 0.5, 0.9.
  const WeightGradShards two{2,
                             {{8, 2.0, 1.0, 4.0, 3.0}},
                             {{8,
                               {1.0, 2.0, 1.5, 1.5, 2.4, 0.6, 1.2, 2.1, 0.3, 0.7},
                               {2.0, 2.0, 1.5, 1.5, 4.0, 2.0, 2.5, 2.5, 0.5, 0.9}}},
                             2};
  refit_dense_rate(hw, widths, runs, {}, 0, {two});
  const auto& timed = hw.device.dense_rates.at(0).weight_grad_gemms;
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed[0].devices, 2);
  EXPECT_EQ(timed[0].points.at(0).shard_cold, 3.0);
  ASSERT_EQ(timed[0].at_once.size(), 1u);  // the steps at once kept, in the document too
  EXPECT_EQ(timed[0].at_once[0].best.shared_over_alone(), 1.0);
  EXPECT_EQ(timed[0].at_once[0].median.shared_over_alone(), 0.75);  // and their medians
  EXPECT_EQ(timed[0].micro_shards, 2);                              // and the micro-shards'
  EXPECT_EQ(timed[0].at_once[0].best.micro_over_alone(), 1.0);
  EXPECT_EQ(timed[0].at_once[0].modelled_micro_over_alone(), 1.5);  // (4 + 2) / (2 + 2)
  EXPECT_EQ(timed[1].devices, 4);
  EXPECT_EQ(timed[1].points.at(0).shard_cold, 1.0);
  const json& document = hw.document["device"]["dense_rates"][0]["weight_grad_gemms"];
  ASSERT_EQ(document.size(), 2u);
  EXPECT_EQ(document[0]["points"][0]["shard_cold"], 3.0);
  ASSERT_EQ(document[0]["steps_at_once"].size(), 1u);
  EXPECT_EQ(document[0]["steps_at_once"][0]["forward_shared"], 1.5);
  EXPECT_EQ(document[0]["steps_at_once"][0]["median"]["forward_alone"], 2.0);
  EXPECT_EQ(document[0]["steps_at_once"][0]["forward_micro"], 2.4);
  EXPECT_EQ(document[0]["steps_at_once"][0]["median"]["backward_micro"], 2.0);
  EXPECT_EQ(document[0]["micro_shards"], 2);
  EXPECT_EQ(document[0]["steps_at_once"][0]["backward_own"], 2.1);  // and the own copies'
  EXPECT_EQ(document[0]["steps_at_once"][0]["wait_own"], 0.3);
  EXPECT_EQ(document[0]["steps_at_once"][0]["median"]["wait_own"], 0.5);
  EXPECT_EQ(document[0]["steps_at_once"][0]["exchange_own"], 0.7);
  EXPECT_EQ(document[0]["steps_at_once"][0]["median"]["exchange_own"], 0.9);
  EXPECT_EQ(timed[0].at_once[0].median.own_over_alone(), 1.25);  // (2.5 + 2.5) / (2 + 2)
  EXPECT_EQ(document[1]["devices"], 4);
  EXPECT_FALSE(document[1].contains("steps_at_once"));
  // Nothing timed (a run on MPI ranks): both kept.
  refit_dense_rate(hw, widths, runs);
  EXPECT_EQ(hw.device.dense_rates.at(0).weight_grad_gemms.size(), 2u);
}

TEST(Calibrate, PlansThatCannotBeMeasuredAreNamed) {
  CalibrationPlan p;
  p.widths = {784, 16, 10};
  p.rows = {8, 16};
  check_plan(p);
  auto bad = [&](auto edit, const char* fragment) {
    CalibrationPlan q = p;
    edit(q);
    test::expect_error<ConfigError>([&] { check_plan(q); }, {fragment});
  };
  bad([](CalibrationPlan& q) { q.rows = {8, 8}; }, "--rows needs at least two different");
  bad([](CalibrationPlan& q) { q.rows = {0, 8}; }, "--rows");
  bad([](CalibrationPlan& q) { q.threads_per_device = 0; }, "--threads-per-device");
  bad([](CalibrationPlan& q) { q.widths = {784}; }, "--layers");
  bad([](CalibrationPlan& q) { q.conv_model = "minigooglenet", q.conv_batch = 0; }, "--conv-batch");
  bad([](CalibrationPlan& q) { q.conv_model = "seed-mlp"; }, "has no Conv2D layer");
  bad([](CalibrationPlan& q) { q.conv_model = "no-such-net"; }, "not a built-in convnet");
}

}  // namespace
}  // namespace tandem::detail
