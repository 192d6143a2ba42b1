// The cost model simulates what src/parallel runs: every strategy and reducer factory there is
// named by an algorithm model, each scenario selects the algorithm the strategy code selects,
// and the algorithms differ where the code does.
#include "advise/algorithms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "advise/advice.h"
#include "advise/cost_model.h"
#include "advise/rank_algorithms.h"
#include "advise/step_costs.h"
#include "tandem/zoo.h"

namespace tandem::detail {
namespace {

namespace fs = std::filesystem;

// A strategy or reducer factory's declaration; group 2 is its name.
const std::regex& factory_declaration() {
  static const std::regex pattern(R"(std::unique_ptr<(Strategy|GradReducer)>\s+(make_\w+)\s*\()");
  return pattern;
}

// Whether some algorithm model names `factory` as code it mirrors.
bool modelled(const std::string& factory) {
  for (const auto& m : algorithm_models()) {
    if (std::regex_search(m.mirrors, std::regex("\\b" + factory + "\\b"))) return true;
  }
  return false;
}

// `make_X_strategy` and `make_X_reducer` factories declared in src/parallel's headers.
std::set<std::string> parallel_factories() {
  const fs::path dir = fs::path(TANDEM_TEST_DATA_DIR) / "../../src/parallel";
  const std::regex& factory = factory_declaration();
  std::set<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".h") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), factory); it != std::sregex_iterator();
         ++it) {
      out.insert((*it)[2].str());
    }
  }
  return out;
}

TEST(Algorithms, EveryStrategyAndReducerInSrcParallelHasAModel) {
  const auto factories = parallel_factories();
  // The dispatchers that choose among the others are not algorithms themselves.
  EXPECT_TRUE(factories.count("make_mirrored_strategy"));
  EXPECT_GE(factories.size(), 6u) << "the factory search found too little to check";
  for (const std::string& f : factories) {
    if (f == "make_strategy") continue;
    EXPECT_TRUE(modelled(f)) << f << " in src/parallel has no cost model (advise/algorithms.cpp)";
  }
}

TEST(Algorithms, TheCheckFindsAFactoryWithoutAModel) {
  // The same search over a header that declares a new reducer finds a name no model has.
  const std::string header = "std::unique_ptr<GradReducer> make_ring_reducer(Communicator& c);";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(header, m, factory_declaration()));
  EXPECT_EQ(m[2].str(), "make_ring_reducer");
  EXPECT_FALSE(modelled(m[2].str()));
  EXPECT_TRUE(modelled("make_allreduce_reducer"));
}

HardwareProfile cpu_profile() {
  HardwareProfile hw;
  hw.max_devices = 2;
  hw.device.threads = 1;
  hw.device.sustained_flops = 100e9;
  hw.device.half_rows = 16;
  hw.device.memory_bandwidth = 40e9;
  hw.device.comm_uses_compute = true;
  hw.device.fork_join = 20e-6;
  hw.device.barrier = 5e-6;
  hw.device.concurrent_memory_share = 0.7;
  hw.device.bf16_seconds_per_float = 0.5e-9;
  hw.host_memory_bandwidth = 30e9;
  hw.host_update_bandwidth = 40e9;
  hw.host_device = {.bandwidth = 10e9, .latency = 0.3e-6};
  hw.device_device = {.bandwidth = 30e9, .latency = 0.3e-6};
  return hw;
}

Scenario seed(int devices) {
  Scenario s;
  s.model = ModelCost::dense({784, 4096, 2048, 512, 64, 10});
  s.devices = devices;
  return s;
}

TEST(Algorithms, ScenariosSelectWhatTheStrategyCodeRuns) {
  const HardwareProfile cpu = cpu_profile();
  Scenario s = seed(1);
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::single_device);
  s.devices = 2;
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::weight_grad_shard);
  s.shared_parameters = false;
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::sharded_buckets);
  s.shared_parameters = true;
  s.model = ModelCost::of(zoo::mnist_convnet());
  EXPECT_FALSE(s.model.dense_used_once);
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::sharded_buckets);
  s = seed(2);
  s.reducer = ReducerKind::allreduce;
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::bucket_allreduce);
  s = seed(2);
  s.deterministic = true;
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::deterministic_shards);
  s.devices = 1;  // deterministic on one device still runs its micro-shards
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::deterministic_shards);
  s = seed(2);
  s.strategy = StrategyKind::host;
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::host_copies);
  s.ranks = 2;
  s.strategy = StrategyKind::mirrored;
  EXPECT_EQ(algorithm_for(cpu, s), Algorithm::hierarchical);
  // GPUs: Keras's multi_gpu_model and a ring over links.
  HardwareProfile gpu = cpu;
  gpu.device.threads = 0;
  gpu.device.comm_uses_compute = false;
  s = seed(4);
  EXPECT_EQ(algorithm_for(gpu, s), Algorithm::ring_allreduce);
  s.strategy = StrategyKind::host;
  EXPECT_EQ(algorithm_for(gpu, s), Algorithm::keras_multi_gpu_model);
  s.devices = 1;
  EXPECT_EQ(algorithm_for(gpu, s), Algorithm::single_device);
}

TEST(Algorithms, EachAlgorithmCostsWhatItsCodeDoes) {
  const HardwareProfile hw = cpu_profile();
  const auto step = [&](const Scenario& s) { return simulate(hw, s, algorithm_for(hw, s)); };
  Scenario s = seed(2);
  const Prediction shard = step(s);
  // No gradient is summed: only a hand-off per layer; the update is split in two, and so is
  // the weight-gradient GEMMs' fixed cost (half_rows).
  EXPECT_NEAR(shard.phases.at("allreduce"), 5 * hw.device_device.latency, 1e-12);
  const double full_update = 5 * 4.0 * s.model.params() / hw.device.memory_bandwidth;
  EXPECT_NEAR(shard.phases.at("optimizer"), full_update / 2, 1e-9);
  s.reducer = ReducerKind::allreduce;
  const Prediction allreduce = step(s);
  // The weight-gradient GEMMs' fixed part: forward FLOPs x h / S, streamed while the other
  // device streams too (memory share 0.7).
  double weight_grad_fixed = 0;
  for (const auto& l : s.model.layers) weight_grad_fixed += l.forward_flops * 16 / 100e9 / 0.7;
  EXPECT_NEAR(allreduce.phases.at("compute") - shard.phases.at("compute"), weight_grad_fixed / 2,
              1e-9);
  // Every device updates the whole model, and every bucket is summed and copied.
  EXPECT_NEAR(allreduce.phases.at("optimizer"), full_update, 1e-9);
  EXPECT_GT(allreduce.phases.at("allreduce"), 4.0 * s.model.params() / 30e9);
  EXPECT_GT(allreduce.step_seconds, shard.step_seconds);
  s = seed(2);
  s.deterministic = true;
  const Prediction deterministic = step(s);
  // Two micro-shards of 32 rows, one after another, run at the 32-row rate.
  EXPECT_GT(deterministic.phases.at("compute"), shard.phases.at("compute"));
  EXPECT_GT(deterministic.step_seconds, allreduce.step_seconds);
  // Its reducer after the micro-shards: each device's half of the update under the sharded
  // reducer; with the all-reduce reducer, the all-reduce's buckets and the whole update on each
  // device's own copy, after the same copies aside and tree sums (2 shards per device, at the
  // warm rates of a profile without the cold ones).
  EXPECT_NEAR(deterministic.phases.at("optimizer"), full_update / 2, 1e-9);
  s.reducer = ReducerKind::allreduce;
  const Prediction deterministic_allreduce = step(s);
  const double bytes = 4.0 * s.model.params();
  EXPECT_NEAR(deterministic_allreduce.phases.at("optimizer"), full_update, 1e-9);
  EXPECT_NEAR(
      deterministic_allreduce.phases.at("allreduce"),
      2 * bytes / (10e9 * 0.7) + 2 * bytes / (30e9 * 0.7) + allreduce.phases.at("allreduce"), 1e-9);
  s = seed(2);
  s.strategy = StrategyKind::host;
  const Prediction host = step(s);
  // The whole weights copied to each device, and the sum of both gradients on one thread.
  EXPECT_NEAR(host.phases.at("weights_to_devices"), 4.0 * s.model.params() / (10e9 * 0.7) + 0.3e-6,
              1e-9);
  EXPECT_NEAR(host.phases.at("gradients_to_host"), 3 * 4.0 * s.model.params() / 2 / (30e9 * 0.7),
              1e-9);
  EXPECT_GT(host.phases.at("overhead"), 3 * hw.device.fork_join - 1e-12);
  // With the cold rates measured and a core's cache the model outgrows, the copy and the sum
  // run at them (the update and backward streamed the whole model before each); a model that
  // fits the core's cache keeps the warm rates.
  HardwareProfile cold = hw;
  cold.device.cold_copy_bandwidth = 5e9;
  cold.device.cold_sum_bandwidth = 15e9;
  cold.device.private_cache_bytes = 2 << 20;
  const Prediction host_cold = simulate(cold, s, Algorithm::host_copies);
  EXPECT_NEAR(host_cold.phases.at("weights_to_devices"),
              4.0 * s.model.params() / (5e9 * 0.7) + 0.3e-6, 1e-9);
  EXPECT_NEAR(host_cold.phases.at("gradients_to_host"),
              3 * 4.0 * s.model.params() / 2 / (15e9 * 0.7), 1e-9);
  Scenario small = s;
  small.model = ModelCost::dense({784, 256, 256, 10});  // 1.07 MB: fits the 2 MiB cache
  const Prediction small_cold = simulate(cold, small, Algorithm::host_copies);
  EXPECT_NEAR(small_cold.phases.at("weights_to_devices"),
              4.0 * small.model.params() / (10e9 * 0.7) + 0.3e-6, 1e-12);
  EXPECT_NEAR(small_cold.phases.at("gradients_to_host"),
              3 * 4.0 * small.model.params() / 2 / (30e9 * 0.7), 1e-12);
  // bf16 across ranks pays packing: on a link as fast as memory it is slower than float32.
  s = seed(1);
  s.ranks = 2;
  HardwareProfile fast_link = hw;
  fast_link.rank_rank = {.bandwidth = 30e9, .latency = 1e-6};
  const double f32 = simulate(fast_link, s, Algorithm::hierarchical).step_seconds;
  s.bf16 = true;
  EXPECT_GT(simulate(fast_link, s, Algorithm::hierarchical).step_seconds, f32);
  // ... and faster on a slow one.
  HardwareProfile slow_link = hw;
  slow_link.rank_rank = {.bandwidth = 1e9, .latency = 30e-6};
  s.bf16 = false;
  const double slow_f32 = simulate(slow_link, s, Algorithm::hierarchical).step_seconds;
  s.bf16 = true;
  EXPECT_LT(simulate(slow_link, s, Algorithm::hierarchical).step_seconds, slow_f32);
}

// Weight-gradient sharding's pass follows the model's GEMMs as calibrate timed them: the
// shards' time over the whole kernels' at the device's rows (in log rows between two timed row
// counts) is what a device keeps of its weight-gradient seconds; caches emptied for a model
// larger than the core's cache, warm for one that fits; the profile's own rule where the GEMMs
// were timed for another number of devices or not at all.
TEST(Algorithms, ShardedWeightGradientsKeepWhatTheirTimedGemmsKeep) {
  HardwareProfile hw = cpu_profile();
  hw.device.private_cache_bytes = 2 << 20;  // the seed's 51 MB of parameters do not fit
  Scenario s = seed(2);
  s.batch = 32;  // 16 rows per device
  const auto compute = [&](const HardwareProfile& h) {
    return simulate(h, s, Algorithm::weight_grad_shard).phases.at("compute");
  };
  const double untimed = compute(hw);
  // Cold shards keep 1 (no gain), 1/2 and 1/4 of the whole GEMMs at every row count; the
  // warm figures (1/10) do not apply to this model.
  const auto timed = [&](double kept) {
    HardwareProfile h = hw;
    h.device.row_weight_grad_gemms = {
        {2, {{8, 1e-3, 1e-4, 1.0, kept}, {64, 1e-3, 1e-4, 2.0, 2 * kept}}}};
    return h;
  };
  const double none = compute(timed(1)), half = compute(timed(0.5)), quarter = compute(timed(0.25));
  ASSERT_GT(none - half, 0);
  EXPECT_NEAR((none - quarter) / (none - half), 1.5, 1e-12);
  // The weight-gradient part is every Dense layer's backward seconds times forward over
  // backward FLOPs: at 16 rows on the line (100 GFLOP/s, half_rows 16, the fixed part streamed
  // at the 2 devices' memory share 0.7), (16 + 16 / 0.7) x forward FLOPs per row / 100e9.
  double weight_grad = 0;
  for (const auto& l : s.model.layers) weight_grad += (16 + 16 / 0.7) * l.forward_flops / 100e9;
  EXPECT_NEAR(none - half, weight_grad / 2, 1e-12);
  // Between two timed row counts: 8 rows keep 1/2 and 32 rows keep all, so 16 rows keep 3/4.
  HardwareProfile between = hw;
  between.device.row_weight_grad_gemms = {
      {2, {{8, 1e-3, 1e-4, 1.0, 0.5}, {32, 1e-3, 1e-4, 1.0, 1.0}}}};
  EXPECT_NEAR((none - compute(between)) / (none - half), 0.5, 1e-12);
  // A model that fits in the core's cache takes the warm figures: 1/10 kept.
  HardwareProfile warm = timed(1);
  warm.device.private_cache_bytes = int64_t{1} << 30;
  EXPECT_NEAR((none - compute(warm)) / (none - half), 0.9 / 0.5, 1e-12);
  // A core's cache of unknown size: the figures with the caches emptied.
  HardwareProfile unknown = timed(0.5);
  unknown.device.private_cache_bytes = 0;
  EXPECT_EQ(compute(unknown), half);
  // Timed for 4 devices, or not at all: the fixed part's 1/N, as before; timed for 2 and 4:
  // the 2 devices' figures.
  HardwareProfile four = timed(0.5);
  four.device.row_weight_grad_gemms[0].devices = 4;
  EXPECT_EQ(compute(four), untimed);
  HardwareProfile both = timed(0.5);
  both.device.row_weight_grad_gemms.push_back(timed(1).device.row_weight_grad_gemms[0]);
  both.device.row_weight_grad_gemms[1].devices = 4;
  EXPECT_EQ(compute(both), half);
  EXPECT_NE(untimed, half);
}

// The seed on 2 devices at 16 rows each, whose 51 MB of parameters outgrow the core's 2 MiB
// cache, and the phases of its sharded step.
HardwareProfile sharded_profile() {
  HardwareProfile hw = cpu_profile();
  hw.device.private_cache_bytes = 2 << 20;
  return hw;
}

Scenario sharded_at_16_rows() {
  Scenario s = seed(2);
  s.batch = 32;
  return s;
}

std::map<std::string, double> sharded_phases(const HardwareProfile& hw, const Scenario& s) {
  return simulate(hw, s, Algorithm::weight_grad_shard).phases;
}

// Timed as a step runs them, the GEMMs say what share of a device's backward its shards save:
// (whole - shard) / (whole + input gradients), interpolated in log rows, in place of the
// warm or cold share of the weight-gradient part; a share below zero (shards slower than the
// whole) adds to the backward.
TEST(Algorithms, ShardedWeightGradientsSaveWhatTheirStepTimedGemmsSave) {
  const HardwareProfile hw = sharded_profile();
  const Scenario s = sharded_at_16_rows();
  const auto phases = [&](const HardwareProfile& h) { return sharded_phases(h, s); };
  // The warm and cold figures (kept 1/10) are not used where the step timings are there.
  const auto timed = [&](double whole, double shard, double input) {
    HardwareProfile h = hw;
    WeightGradGemmSeconds at8{8, 1e-3, 1e-4, 1e-3, 1e-4, whole, shard, input};
    WeightGradGemmSeconds at64 = at8;
    at64.rows = 64;
    h.device.row_weight_grad_gemms = {{2, {at8, at64}}};
    return h;
  };
  // Shards as slow as the whole save nothing: forward and the whole backward, as the sharded
  // buckets compute them (the same rows, the same shares of the cores).
  const double none = phases(timed(3e-3, 3e-3, 1e-3)).at("compute");
  EXPECT_NEAR(none, simulate(hw, s, Algorithm::sharded_buckets).phases.at("compute"), 1e-12);
  // Whole 3 ms, input gradients 1 ms, shards 1 ms: (3 - 1) / 4 = 1/2 of the backward saved;
  // shards of 3.4 ms add a tenth of it.
  const double half = phases(timed(3e-3, 1e-3, 1e-3)).at("compute");
  const double backward = 2 * (none - half);
  ASSERT_GT(backward, 0);
  EXPECT_NEAR(phases(timed(3e-3, 3.4e-3, 1e-3)).at("compute"), none + backward / 10, 1e-12);
  // Between two timed row counts, in log rows: 8 rows save 1/2 and 32 rows nothing, so 16
  // rows save 1/4.
  HardwareProfile between = timed(3e-3, 1e-3, 1e-3);
  between.device.row_weight_grad_gemms[0].points[1] = {32,   1e-3, 1e-4, 1e-3,
                                                       1e-4, 3e-3, 3e-3, 1e-3};
  EXPECT_NEAR(phases(between).at("compute"), none - backward / 4, 1e-12);
  // Only the compute changes: the update, the hand-offs and the barrier are as before.
  const auto before = phases(hw), after = phases(timed(3e-3, 1e-3, 1e-3));
  for (const char* phase : {"allreduce", "optimizer", "overhead", "input"}) {
    EXPECT_EQ(before.at(phase), after.at(phase)) << phase;
  }
  // Timed as a step for 4 devices only: 2 devices keep the rule with no timings.
  HardwareProfile four = timed(3e-3, 1e-3, 1e-3), untimed = hw;
  four.device.row_weight_grad_gemms[0].devices = 4;
  untimed.device.row_weight_grad_gemms.clear();
  EXPECT_EQ(phases(four).at("compute"), phases(untimed).at("compute"));
}

// Timed with all devices at once over one shared parameter buffer, a device's forward and
// backward below 32 rows take the shared timings' seconds, interpolated in log rows, in place of
// the step-timed GEMMs' saved share: the probe's alone pass does not enter, and one device's
// curve only beyond the timed rows, where the nearest end's seconds grow as it does. From 32
// rows they are one device's times the shared pass over the alone pass.
TEST(Algorithms, ShardedStepsTakeWhatTheirStepsAtOnceTake) {
  const HardwareProfile hw = sharded_profile();
  const Scenario s = sharded_at_16_rows();
  const auto phases = [&](const HardwareProfile& h) { return sharded_phases(h, s); };
  // The step-timed GEMMs (they save 1/2) are not used where the steps at once are there.
  const auto timed = [&](double forward_shared, double backward_shared, double alone_pass = 4e-3) {
    HardwareProfile h = hw;
    const WeightGradGemmSeconds at8{8, 1e-3, 1e-4, 1e-3, 1e-4, 3e-3, 1e-3, 1e-3};
    WeightGradGemmSeconds at64 = at8;
    at64.rows = 64;
    const StepsAtOnceSeconds once8{
        8, {alone_pass / 4, alone_pass * 3 / 4, forward_shared, backward_shared}};
    StepsAtOnceSeconds once64 = once8;
    once64.rows = 64;
    h.device.row_weight_grad_gemms = {{2, {at8, at64}, {once8, once64}}};
    return h;
  };
  HardwareProfile alone_profile = hw;
  alone_profile.max_devices = 1;
  Scenario one = s;
  one.devices = 1;
  one.batch = 16;
  // One device alone at the same rows (forward and backward, no shares of the cores) differs
  // from the probe's alone pass, so a rule that scaled one device's steps would fail here.
  const double alone = simulate(alone_profile, one, Algorithm::single_device).phases.at("compute");
  ASSERT_GT(std::abs(alone - 4e-3), 1e-4);
  EXPECT_NEAR(phases(timed(1e-3, 3e-3)).at("compute"), 4e-3, 1e-12);
  EXPECT_NEAR(phases(timed(1.2e-3, 2e-3)).at("compute"), 3.2e-3, 1e-12);
  EXPECT_NEAR(phases(timed(2e-3, 3e-3)).at("compute"), 5e-3, 1e-12);
  // The probe's alone pass does not enter.
  EXPECT_NEAR(phases(timed(1.2e-3, 2e-3, 8e-3)).at("compute"), 3.2e-3, 1e-12);
  // Beyond the timed rows (8 rows: 2 ms, 16 rows: 5 ms), the nearest end's seconds grow or
  // shrink as one device's forward and backward do from the end's rows.
  const auto one_device = [&](int64_t rows) {
    Scenario o = one;
    o.batch = rows;
    return simulate(alone_profile, o, Algorithm::single_device).phases.at("compute");
  };
  // So holding the end's seconds flat would fail.
  ASSERT_GT(one_device(24), 1.2 * one_device(16));
  ASSERT_LT(one_device(4), 0.9 * one_device(8));
  HardwareProfile ends = timed(1e-3, 1e-3);
  ends.device.row_weight_grad_gemms[0].at_once[1] = {16, {1e-3, 3e-3, 2e-3, 3e-3}};
  Scenario wide = s, narrow = s;
  wide.batch = 48;   // 24 rows per device
  narrow.batch = 8;  // 4
  EXPECT_NEAR(sharded_phases(ends, wide).at("compute"), 5e-3 * one_device(24) / one_device(16),
              1e-12);
  EXPECT_NEAR(sharded_phases(ends, narrow).at("compute"), 2e-3 * one_device(4) / one_device(8),
              1e-12);
  // Between two timed row counts, in log rows: 8 rows take 2 ms and 32 rows 4 ms, so 16 rows 3.
  HardwareProfile between = timed(1e-3, 1e-3);
  between.device.row_weight_grad_gemms[0].at_once[1] = {32, {1e-3, 3e-3, 1e-3, 3e-3}};
  EXPECT_NEAR(phases(between).at("compute"), 3e-3, 1e-12);
  // The steps at once at rows of their own, between the points' (as the rejected grid of
  // docs/SCALING.md timed them): 16 rows timed take what they were timed to take (3.6 ms), not
  // what 8 and 32 rows interpolate to (3 ms).
  HardwareProfile own_rows = between;
  auto& at_once = own_rows.device.row_weight_grad_gemms[0].at_once;
  at_once.insert(at_once.begin() + 1, {16, {1e-3, 3e-3, 1.6e-3, 2e-3}});
  EXPECT_NEAR(phases(own_rows).at("compute"), 3.6e-3, 1e-12);
  // The rounds' medians, where recorded, rather than their best: 16 rows' medians say 2.4 ms
  // (the others' as their best).
  HardwareProfile medians = own_rows;
  for (StepsAtOnceSeconds& a : medians.device.row_weight_grad_gemms[0].at_once) {
    a.median = a.best;
  }
  EXPECT_NEAR(phases(medians).at("compute"), 3.6e-3, 1e-12);
  StepsAtOnceSeconds& at16 = medians.device.row_weight_grad_gemms[0].at_once[1];
  ASSERT_EQ(at16.rows, 16);
  at16.median = {2e-3, 3e-3, 1e-3, 1.4e-3};
  EXPECT_NEAR(phases(medians).at("compute"), 2.4e-3, 1e-12);
  // Only the compute changes: the update, the hand-offs and the barrier are as before.
  const auto before = phases(hw), after = phases(timed(1.2e-3, 2e-3));
  for (const char* phase : {"allreduce", "optimizer", "overhead", "input"}) {
    EXPECT_EQ(before.at(phase), after.at(phase)) << phase;
  }
  // From 32 rows per device, one device's forward and backward times the shared pass over the
  // alone pass, in log rows: 8 rows' ratio is 1 (4 ms over 4 ms) and 64 rows' 1/2 (4 ms over
  // 8 ms), so 32 rows take 2/3 of one device's; 31 rows still the seconds; beyond 64 rows, 64's.
  HardwareProfile ratio = timed(1e-3, 3e-3);
  ratio.device.row_weight_grad_gemms[0].at_once[1] = {64, {2e-3, 6e-3, 1e-3, 3e-3}};
  const auto at_rows = [&](const HardwareProfile& h, int64_t rows) {
    Scenario r = s;
    r.batch = 2 * rows;
    return sharded_phases(h, r).at("compute");
  };
  EXPECT_NEAR(at_rows(ratio, 32), one_device(32) * 2 / 3, 1e-12);
  EXPECT_NEAR(at_rows(ratio, 64), one_device(64) / 2, 1e-12);
  EXPECT_NEAR(at_rows(ratio, 128), one_device(128) / 2, 1e-12);
  EXPECT_NEAR(at_rows(ratio, 31), 4e-3, 1e-12);
  // So the seconds alone (4 ms at every timed row count) would fail there, and the ratio at 31.
  ASSERT_GT(std::abs(one_device(32) * 2 / 3 - 4e-3), 1e-4);
  ASSERT_GT(std::abs(one_device(31) * 2 / 3 - 4e-3), 1e-4);
  // The rounds' medians where recorded: 64 rows' medians say 4 ms over 16 ms, a ratio of 1/4
  // (their best still 1/2).
  HardwareProfile ratio_medians = ratio;
  for (StepsAtOnceSeconds& a : ratio_medians.device.row_weight_grad_gemms[0].at_once) {
    a.median = a.best;
  }
  ratio_medians.device.row_weight_grad_gemms[0].at_once[1].median = {4e-3, 12e-3, 1e-3, 3e-3};
  EXPECT_NEAR(at_rows(ratio_medians, 64), one_device(64) / 4, 1e-12);
  // From 32 rows under the first timed row: that row's ratio (timed at 64 and 128 only).
  HardwareProfile late = ratio;
  auto& late_once = late.device.row_weight_grad_gemms[0].at_once;
  late_once[0] = {64, {1e-3, 3e-3, 1e-3, 1e-3}};  // 1/2
  late_once[1] = {128, {1e-3, 3e-3, 1e-3, 3e-3}};
  EXPECT_NEAR(at_rows(late, 32), one_device(32) / 2, 1e-12);
  // Without them, the step-timed GEMMs' rule: 1/2 of the backward saved.
  HardwareProfile step = timed(1e-3, 3e-3);
  step.device.row_weight_grad_gemms[0].at_once.clear();
  EXPECT_LT(phases(step).at("compute"), alone * 0.9);
  // Timed at once for 4 devices only: 2 devices keep the rule with no timings.
  HardwareProfile four = timed(2e-3, 3e-3), untimed = hw;
  four.device.row_weight_grad_gemms[0].devices = 4;
  untimed.device.row_weight_grad_gemms.clear();
  EXPECT_EQ(phases(four).at("compute"), phases(untimed).at("compute"));
}

// Timed with all devices at once running deterministic mode's micro-shards over one shared
// parameter buffer, each micro-shard is one device's forward and backward alone at its rows (no
// shares of the cores) times the micro-shards' timings' sum over the alone ones, interpolated in
// log rows; without them, or timed with another count of micro-shards per device, or on MPI
// ranks, one device's slowed by the devices' shares as before.
TEST(Algorithms, MicroShardsTakeWhatTheirTimingAtOnceSays) {
  const HardwareProfile hw = sharded_profile();
  Scenario s = sharded_at_16_rows();  // 32 rows: 4 micro-shards of 8, 2 per device
  s.deterministic = true;
  const auto phases = [&](const HardwareProfile& h) {
    return simulate(h, s, Algorithm::deterministic_shards).phases;
  };
  const auto timed = [&](double forward_micro, double backward_micro, int local) {
    HardwareProfile h = hw;
    const WeightGradGemmSeconds at8{8, 1e-3, 1e-4, 1e-3, 1e-4, 3e-3, 1e-3, 1e-3};
    WeightGradGemmSeconds at64 = at8;
    at64.rows = 64;
    const StepsAtOnceSeconds once8{8, {1e-3, 3e-3, 2e-3, 2e-3, forward_micro, backward_micro}, {}};
    StepsAtOnceSeconds once64 = once8;
    once64.rows = 64;
    h.device.row_weight_grad_gemms = {{2, {at8, at64}, {once8, once64}, local}};
    return h;
  };
  HardwareProfile alone_profile = hw;
  alone_profile.max_devices = 1;
  Scenario one = seed(1);
  one.batch = 8;
  const double alone = simulate(alone_profile, one, Algorithm::single_device).phases.at("compute");
  EXPECT_NEAR(phases(timed(1e-3, 3e-3, 2)).at("compute"), 2 * alone, 1e-12);
  EXPECT_NEAR(phases(timed(1.2e-3, 2e-3, 2)).at("compute"), 2 * alone * 0.8, 1e-12);
  EXPECT_NEAR(phases(timed(2e-3, 3e-3, 2)).at("compute"), 2 * alone * 1.25, 1e-12);
  // Between two timed row counts, in log rows: 8 rows take 0.5 and 32 rows 1, so 16 rows (a
  // batch of 64) 0.75.
  HardwareProfile between = timed(1e-3, 1e-3, 2);
  between.device.row_weight_grad_gemms[0].at_once[1] = {32, {1e-3, 3e-3, 1e-3, 1e-3, 1e-3, 3e-3}};
  Scenario at16 = s;
  at16.batch = 64;
  one.batch = 16;
  const double alone16 =
      simulate(alone_profile, one, Algorithm::single_device).phases.at("compute");
  EXPECT_NEAR(simulate(between, at16, Algorithm::deterministic_shards).phases.at("compute"),
              2 * alone16 * 0.75, 1e-12);
  // The rounds' medians where recorded: 8 rows' say 1.5.
  HardwareProfile medians = timed(1e-3, 3e-3, 2);
  for (StepsAtOnceSeconds& a : medians.device.row_weight_grad_gemms[0].at_once) {
    a.median = {1e-3, 1e-3, 1e-3, 1e-3, 2e-3, 1e-3};
  }
  EXPECT_NEAR(phases(medians).at("compute"), 2 * alone * 1.5, 1e-12);
  // The shares' rule, slower than alone here (memory share 0.7): what every other case gives.
  HardwareProfile untimed = hw;
  untimed.device.row_weight_grad_gemms.clear();
  const double shares = phases(untimed).at("compute");
  EXPECT_GT(shares, 2 * alone * 1.1);
  EXPECT_EQ(phases(timed(1e-3, 3e-3, 4)).at("compute"), shares);  // 4 micro-shards per device
  HardwareProfile no_micro = timed(1e-3, 3e-3, 2);
  for (StepsAtOnceSeconds& a : no_micro.device.row_weight_grad_gemms[0].at_once) {
    a.best.forward_micro = a.best.backward_micro = 0;
  }
  EXPECT_EQ(phases(no_micro).at("compute"), shares);
  // Only the compute changes: the copies and tree, the update, the barrier are as before.
  const auto before = phases(untimed), after = phases(timed(1.2e-3, 2e-3, 2));
  for (const char* phase : {"allreduce", "optimizer", "overhead", "input"}) {
    EXPECT_EQ(before.at(phase), after.at(phase)) << phase;
  }
  // Best timed, medians recorded without them (a profile built in memory): not used.
  HardwareProfile half = timed(1e-3, 3e-3, 2);
  for (StepsAtOnceSeconds& a : half.device.row_weight_grad_gemms[0].at_once) {
    a.median = {1e-3, 3e-3, 2e-3, 2e-3};
  }
  EXPECT_EQ(phases(half).at("compute"), shares);
  // Each device with its own copy of the parameters (the all-reduce reducer, or shared
  // parameters off): the timing over one shared buffer is not used.
  for (const bool allreduce : {true, false}) {
    Scenario own = s;
    if (allreduce) {
      own.reducer = ReducerKind::allreduce;
    } else {
      own.shared_parameters = false;
    }
    const auto own_compute = [&](const HardwareProfile& h) {
      return simulate(h, own, Algorithm::deterministic_shards).phases.at("compute");
    };
    EXPECT_EQ(own_compute(timed(2e-3, 3e-3, 2)), own_compute(untimed)) << allreduce;
  }
  // On 2 ranks of 2 devices (1 micro-shard each), the timing in one process is not used.
  Scenario ranks = s;
  ranks.ranks = 2;
  ranks.batch = 64;
  const auto rank_compute = [&](const HardwareProfile& h) {
    return simulate(h, ranks, algorithm_for(h, ranks)).phases.at("compute");
  };
  EXPECT_EQ(rank_compute(timed(2e-3, 3e-3, 1)), rank_compute(untimed));
}

// A dense model's measured steps are followed piecewise in rows: at a measured row count one
// device computes exactly what was measured; between two, the power law through both; beyond
// the largest, the line through the last two; below the smallest, the first two's power law.
// The tangent's intercept is the fixed part, never negative, never more than the step.
TEST(Algorithms, ADenseModelsMeasuredStepsAreFollowedPiecewiseInRows) {
  DeviceProfile d;
  d.sustained_flops = 100e9;
  d.half_rows = 10;
  const double flops = 1e6;
  const auto compute = [&](int64_t rows) {
    const RowRate rate = dense_rate_at(d, rows);
    EXPECT_GE(rate.half_rows, 0);
    return flops * (static_cast<double>(rows) + rate.half_rows) / rate.sustained_flops;
  };
  EXPECT_EQ(dense_rate_at(d, 32).sustained_flops, 100e9);  // no points: the line
  EXPECT_EQ(dense_rate_at(d, 32).half_rows, 10);
  d.row_points = {{16, 4e-3}, {64, 8e-3}, {256, 24e-3}};
  EXPECT_EQ(dense_rate_at(d, 32).half_rows, 10);  // without the model's FLOPs: the line
  d.row_points_flops = flops;
  EXPECT_NEAR(compute(16), 4e-3, 1e-15);
  EXPECT_NEAR(compute(64), 8e-3, 1e-15);
  EXPECT_NEAR(compute(256), 24e-3, 1e-15);
  // 16 -> 64 rows doubled the step: a power of 1/2, whose tangent at 32 rows meets zero
  // seconds at -32 rows (half_rows 32).
  EXPECT_NEAR(compute(32), 4e-3 * std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(dense_rate_at(d, 32).half_rows, 32, 1e-9);
  EXPECT_NEAR(compute(8), 4e-3 / std::sqrt(2.0), 1e-15);
  // Beyond 256 rows: the line through 64 and 256 (16 ms per 192 rows), whose intercept
  // is 8 - 64 x 16 / 192 = 2.67 ms: 32 rows' worth.
  EXPECT_NEAR(compute(512), 24e-3 + 256 * 16e-3 / 192, 1e-15);
  EXPECT_NEAR(dense_rate_at(d, 512).half_rows, 32, 1e-9);
  // A falling stretch (noise) keeps the measured step, nearly all of it fixed; a stretch
  // steeper than in proportion to the rows keeps it with no fixed part.
  d.row_points = {{16, 5e-3}, {64, 4e-3}, {128, 16e-3}};
  EXPECT_NEAR(compute(32), 5e-3 * std::pow(2.0, std::log(0.8) / std::log(4.0)), 1e-15);
  EXPECT_NEAR(dense_rate_at(d, 32).half_rows, 32 * 19, 1e-9);
  EXPECT_NEAR(compute(96), 4e-3 * std::pow(1.5, 2.0), 1e-15);
  EXPECT_EQ(dense_rate_at(d, 96).half_rows, 0);
  d.row_points = {{16, 5e-3}, {64, 4e-3}};
  EXPECT_NEAR(compute(128), 4e-3, 1e-15);  // beyond a falling last stretch: flat

  // predict() follows the points of the model's own dense_rates entry: one device's compute
  // moves by the curve's value less the line's, the rest of the step unchanged.
  HardwareProfile hw = cpu_profile();
  Scenario s = seed(1);
  s.batch = 32;
  const double f = s.model.step_flops(1);
  hw.device.dense_rates = {{s.model.widths, 100e9, 16, {}}};
  const Prediction line = predict(hw, s);
  hw.device.dense_rates[0].points = {{16, 10e-3}, {64, 30e-3}};
  const Prediction curve = predict(hw, s);
  EXPECT_NEAR(curve.phases.at("compute") - line.phases.at("compute"),
              10e-3 * std::pow(2.0, std::log(3.0) / std::log(4.0)) - f * (32 + 16) / 100e9, 1e-12);
  EXPECT_EQ(curve.phases.at("optimizer"), line.phases.at("optimizer"));
  // Ranks of one device each follow the steps measured with as many ranks computing at once,
  // without the concurrency shares on top; one device, and other rank counts, do not.
  hw.device.concurrent_memory_share = hw.device.concurrent_compute_share = 0.5;
  const Prediction alone = predict(hw, s);
  hw.device.dense_rates[0].ranks_points = {{8, 20e-3}, {32, 40e-3}};
  hw.device.dense_rates[0].ranks = 2;
  EXPECT_EQ(predict(hw, s).step_seconds, alone.step_seconds);
  Scenario ranks = s;
  ranks.ranks = 2;
  ranks.batch = 32;  // 16 rows each
  const Prediction at_once = predict(hw, ranks);
  // As one device alone at 16 rows with those points and no contention.
  HardwareProfile measured_at_once = hw;
  measured_at_once.device.concurrent_memory_share = 1;
  measured_at_once.device.concurrent_compute_share = 1;
  measured_at_once.device.dense_rates[0].points = hw.device.dense_rates[0].ranks_points;
  Scenario sixteen = s;
  sixteen.batch = 16;
  EXPECT_NEAR(at_once.phases.at("compute"), predict(measured_at_once, sixteen).phases.at("compute"),
              1e-12);
  EXPECT_NEAR(at_once.phases.at("compute"), 20e-3 * std::sqrt(2.0), 1e-12);
  hw.device.dense_rates[0].ranks_points.clear();
  EXPECT_LT(predict(hw, ranks).phases.at("compute"), at_once.phases.at("compute"));
  ranks.ranks = 4;
  hw.device.dense_rates[0].ranks_points = {{8, 20e-3}, {32, 40e-3}};
  const Prediction four = predict(hw, ranks);
  hw.device.dense_rates[0].ranks_points.clear();
  EXPECT_EQ(predict(hw, ranks).step_seconds, four.step_seconds);
  // Another model keeps the line.
  hw.device.dense_rates[0].widths = {784, 10};
  hw.device.concurrent_memory_share = hw.device.concurrent_compute_share = 1;
  EXPECT_EQ(predict(hw, s).step_seconds, line.step_seconds);
}

// A model whose steps were measured with their update takes that update's seconds at the
// device's rows (in log rows between two measured row counts, the nearest end's beyond them),
// scaled to the parameters each device updates and to the optimizer's passes; ranks take the
// update measured with the ranks computing at once. Points without it, and other models, keep
// memory_bandwidth.
TEST(Algorithms, AModelsMeasuredUpdateIsScaledToWhatEachDeviceUpdates) {
  HardwareProfile hw = cpu_profile();
  Scenario s = seed(1);
  s.batch = 32;
  const double params = static_cast<double>(s.model.params());
  const double streamed = 5 * 4.0 * params / hw.device.memory_bandwidth;
  hw.device.dense_rates = {{s.model.widths, 100e9, 16, {{16, 10e-3}, {64, 30e-3}}}};
  EXPECT_NEAR(predict(hw, s).phases.at("optimizer"), streamed, 1e-15);
  hw.device.dense_rates[0].points = {{16, 10e-3, 2e-3}, {64, 30e-3, 4e-3}};
  const Prediction measured = predict(hw, s);
  EXPECT_NEAR(measured.phases.at("optimizer"), 3e-3, 1e-15);  // 32 rows: halfway in log rows
  // The compute follows the points as before: the update is apart from them.
  hw.device.dense_rates[0].points = {{16, 10e-3}, {64, 30e-3}};
  EXPECT_EQ(predict(hw, s).phases.at("compute"), measured.phases.at("compute"));
  hw.device.dense_rates[0].points = {{16, 10e-3, 2e-3}, {64, 30e-3, 4e-3}};
  s.batch = 8;
  EXPECT_NEAR(predict(hw, s).phases.at("optimizer"), 2e-3, 1e-15);
  s.batch = 512;
  EXPECT_NEAR(predict(hw, s).phases.at("optimizer"), 4e-3, 1e-15);
  // Adam's 7 passes against RMSprop's 5, which the steps ran.
  s.batch = 32;
  s.update_passes = 7;
  EXPECT_NEAR(predict(hw, s).phases.at("optimizer"), 3e-3 * 7 / 5, 1e-15);
  s.update_passes = 5;
  // Two devices at 64 rows: 32 rows each. Weight-gradient sharding updates half the model on
  // each; the all-reduce reducer the whole model on each.
  Scenario two = seed(2);
  two.batch = 64;
  EXPECT_NEAR(predict(hw, two).phases.at("optimizer"), 3e-3 / 2, 1e-15);
  two.reducer = ReducerKind::allreduce;
  EXPECT_NEAR(predict(hw, two).phases.at("optimizer"), 3e-3, 1e-15);
  // Two ranks: the update measured while both computed; without it, the 1-device one.
  Scenario ranks = seed(1);
  ranks.ranks = 2;
  ranks.batch = 64;
  EXPECT_NEAR(predict(hw, ranks).phases.at("optimizer"), 3e-3, 1e-15);
  hw.device.dense_rates[0].ranks_points = {{16, 10e-3, 2.5e-3}, {64, 30e-3, 5e-3}};
  hw.device.dense_rates[0].ranks = 2;
  EXPECT_NEAR(predict(hw, ranks).phases.at("optimizer"), 3.75e-3, 1e-15);
  // Another model keeps memory_bandwidth.
  Scenario other = seed(1);
  other.model = ModelCost::dense({784, 256, 10});
  other.batch = 32;
  EXPECT_NEAR(predict(hw, other).phases.at("optimizer"),
              5 * 4.0 * static_cast<double>(other.model.params()) / hw.device.memory_bandwidth,
              1e-15);
}

// Several devices updating at once, by where the update's buffers live, for profiles that
// know the cache the cores share. Beyond it (the devices' update_passes floats per parameter
// outgrow it): at least the update's bytes at the memory bandwidth each device keeps. Inside
// it: a shard of one shared parameter buffer slowed by update_contention's shard ratio at the
// model's bytes, an own copy at its time alone. Without the cache's size, or on one device,
// or across MPI ranks (whose steps were measured together): the time alone.
TEST(Algorithms, TheUpdateOnSeveralDevicesFollowsWhereItsBuffersLive) {
  HardwareProfile hw = cpu_profile();  // 40 GB/s, memory share 0.7 for 2 devices
  const auto optimizer = [&](const HardwareProfile& h, const Scenario& sc) {
    return predict(h, sc).phases.at("optimizer");
  };
  // The seed model (50.7 MB of parameters), its update measured at 3 ms at 32 rows.
  Scenario shards = seed(2);
  shards.batch = 64;
  hw.device.dense_rates = {
      {shards.model.widths, 100e9, 16, {{16, 10e-3, 2e-3}, {64, 30e-3, 4e-3}}}};
  Scenario allreduce = shards;
  allreduce.reducer = ReducerKind::allreduce;
  EXPECT_NEAR(optimizer(hw, shards), 3e-3 / 2, 1e-15);
  EXPECT_NEAR(optimizer(hw, allreduce), 3e-3, 1e-15);
  const double bytes = 5 * 4.0 * static_cast<double>(shards.model.params());
  HardwareProfile beyond = hw;
  beyond.device.shared_cache_bytes = int64_t{32} << 20;
  EXPECT_NEAR(optimizer(beyond, allreduce), bytes / (40e9 * 0.7), 1e-15);  // 9.1 ms
  EXPECT_NEAR(optimizer(beyond, shards), bytes / 2 / (40e9 * 0.7), 1e-15);
  // An update measured slower than that keeps its time.
  HardwareProfile slow = beyond;
  slow.device.dense_rates[0].points = {{16, 10e-3, 20e-3}, {64, 30e-3, 20e-3}};
  EXPECT_NEAR(optimizer(slow, allreduce), 20e-3, 1e-15);
  // One device, and two MPI ranks of one device: the time alone.
  Scenario one = seed(1);
  one.batch = 32;
  EXPECT_NEAR(optimizer(beyond, one), 3e-3, 1e-15);
  Scenario ranks = one;
  ranks.ranks = 2;
  ranks.batch = 64;
  EXPECT_NEAR(optimizer(beyond, ranks), 3e-3, 1e-15);
  // Inside the cache: the 784-256-256-10 model (1.08 MB, 10.8 MB of update buffers on 2
  // devices), without measured steps, alone at memory_bandwidth.
  Scenario small = shards;
  small.model = ModelCost::dense({784, 256, 256, 10});
  const double small_params = static_cast<double>(small.model.params());
  const double alone = 5 * 4.0 * small_params / 40e9;
  Scenario small_allreduce = small;
  small_allreduce.reducer = ReducerKind::allreduce;
  HardwareProfile inside = beyond;
  EXPECT_NEAR(optimizer(inside, small), alone / 2, 1e-15);  // no contention measured
  inside.device.update_contention = {{int64_t{1} << 20, 1.2, 2.5}};
  inside.device.update_contention_devices = 2;
  EXPECT_NEAR(optimizer(inside, small), alone / 2 * 2.5, 1e-15);
  EXPECT_NEAR(optimizer(inside, small_allreduce), alone, 1e-15);  // an own copy: alone
  // Sharded buckets over copies of the parameters: each device's shard of its own copy.
  Scenario own_copies = small;
  own_copies.shared_parameters = false;
  EXPECT_NEAR(optimizer(inside, own_copies), alone / 2, 1e-15);
  // Two sizes: in log bytes between them (3 at 256 KiB, 2 at 4 MiB).
  HardwareProfile two_sizes = inside;
  two_sizes.device.update_contention = {{int64_t{256} << 10, 1.2, 3.0},
                                        {int64_t{4} << 20, 1.2, 2.0}};
  const double t = std::log(4 * small_params / (256 << 10)) / std::log(16.0);
  EXPECT_NEAR(optimizer(two_sizes, small), alone / 2 * (3.0 - t), 1e-15);
  // Measured on 4 devices at once, predicted for 2: a third of the way from 1.
  HardwareProfile four = inside;
  four.device.update_contention_devices = 4;
  EXPECT_NEAR(optimizer(four, small), alone / 2 * (1 + 1.5 / 3), 1e-15);
  // A shared cache too small for the 5.4 MB the two shards' updates touch: beyond it again.
  HardwareProfile small_cache = inside;
  small_cache.device.shared_cache_bytes = int64_t{4} << 20;
  EXPECT_NEAR(optimizer(small_cache, small), alone / 2 / 0.7, 1e-15);
  // The profile without the cache's size keeps the time alone.
  HardwareProfile unknown = inside;
  unknown.device.shared_cache_bytes = 0;
  EXPECT_NEAR(optimizer(unknown, small), alone / 2, 1e-15);
}

// The memory share slows a Dense layer's fixed part only where the weights the devices read
// outgrow the cache their cores share: one buffer per process for mirrored's sharded reducer
// over shared parameters, one per device otherwise. Profiles without the cache's size slow it
// always.
TEST(Algorithms, TheFixedPartSlowsOnlyForWeightsBeyondTheSharedCache) {
  const HardwareProfile hw = cpu_profile();
  HardwareProfile unshared = hw;  // nothing shared: the fixed part at its speed alone
  unshared.device.concurrent_memory_share = 1;
  // 784-8192-10: 25.8 MB of weights; one copy fits 32 MiB, two do not.
  Scenario shards = seed(2);
  shards.model = ModelCost::dense({784, 8192, 10});
  shards.batch = 32;
  Scenario allreduce = shards;
  allreduce.reducer = ReducerKind::allreduce;
  const auto compute = [](const HardwareProfile& h, const Scenario& sc) {
    return predict(h, sc).phases.at("compute");
  };
  HardwareProfile cache = hw;
  cache.device.shared_cache_bytes = int64_t{32} << 20;
  EXPECT_EQ(compute(cache, shards), compute(unshared, shards));
  EXPECT_EQ(compute(cache, allreduce), compute(hw, allreduce));
  EXPECT_LT(compute(unshared, allreduce), compute(hw, allreduce));
  // A cache too small for one copy; and none known.
  cache.device.shared_cache_bytes = int64_t{16} << 20;
  EXPECT_EQ(compute(cache, shards), compute(hw, shards));
  EXPECT_LT(compute(unshared, shards), compute(hw, shards));
  // Two MPI ranks keep the rule without the cache.
  Scenario ranks = shards;
  ranks.devices = 1;
  ranks.ranks = 2;
  cache.device.shared_cache_bytes = int64_t{1} << 30;
  EXPECT_EQ(compute(cache, ranks), compute(hw, ranks));
}

// The bf16 loops cost what they were measured to at the bucket's size: pack and unpack every
// float, sum (R-1)/R of them; between two measured sizes linear in log size, beyond them
// the nearest end's figure. A profile without them keeps its one round-trip figure.
TEST(Algorithms, Bf16LoopsAtTheBucketsOwnSize) {
  DeviceProfile d;
  d.bf16_loops = {{.floats = 1 << 16, .pack = 0.1e-9, .unpack = 0.1e-9, .sum = 0.2e-9},
                  {.floats = 1 << 24, .pack = 2.1e-9, .unpack = 1.1e-9, .sum = 1.2e-9}};
  const double small = 1 << 16, mid = 1 << 20, large = 1 << 24;
  EXPECT_NEAR(bf16_allreduce_loop_seconds(d, small, 2), small * (0.2e-9 + 0.1e-9), 1e-15);
  EXPECT_NEAR(bf16_allreduce_loop_seconds(d, 1000, 2), 1000 * (0.2e-9 + 0.1e-9), 1e-15);
  EXPECT_NEAR(bf16_allreduce_loop_seconds(d, mid, 2), mid * (1.1e-9 + 0.6e-9 + 0.35e-9), 1e-12);
  EXPECT_NEAR(bf16_allreduce_loop_seconds(d, 4 * large, 4), 4 * large * (3.2e-9 + 0.9e-9), 1e-9);
  d.bf16_loops.clear();
  d.bf16_seconds_per_float = 1e-9;
  EXPECT_NEAR(bf16_allreduce_loop_seconds(d, small, 2), small * 2.5e-9, 1e-15);
  // The all-reduce across ranks: a ring over the link; bf16 sends half the bytes and adds
  // its loops.
  const LinkProfile link{.bandwidth = 2e9, .latency = 5e-6};
  const double f32 = rank_allreduce_seconds(link, d, mid, 2, false);
  EXPECT_NEAR(f32, 2 * 5e-6 + 4.0 * mid / 2e9, 1e-12);
  EXPECT_NEAR(rank_allreduce_seconds(link, d, mid, 2, true),
              2 * 5e-6 + 2.0 * mid / 2e9 + bf16_allreduce_loop_seconds(d, mid, 2), 1e-12);
  // A step of 2 ranks in bf16 pays the loops of each of its buckets: slower loops, a slower
  // step by exactly their difference.
  HardwareProfile hw = cpu_profile();
  hw.rank_rank = link;
  hw.device.bf16_loops = {{.floats = 1 << 16, .pack = 0.1e-9, .unpack = 0.1e-9, .sum = 0.2e-9}};
  Scenario s = seed(1);
  s.ranks = 2;
  s.bf16 = true;
  const double fast = simulate(hw, s, Algorithm::hierarchical).step_seconds;
  hw.device.bf16_loops[0].pack = 1.1e-9;
  EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).step_seconds - fast,
              1e-9 * static_cast<double>(s.model.params()), 1e-9);
}

// Across ranks, the bucket posted last (when backward is done) runs alone, as calibrate's
// sweep timed it: the line times the sweep's ratio to it, interpolated in log size; every
// earlier bucket costs the line (bf16: the float32 line times the sweep's bf16-to-float32
// ratio). Without a sweep, every bucket costs the line.
TEST(Algorithms, TheLastBucketAcrossRanksRunsAsTheSweepTimedIt) {
  DeviceProfile d;
  d.bf16_seconds_per_float = 0.5e-9;
  LinkProfile link{.bandwidth = 2e9, .latency = 5e-6};
  const double small = 1 << 10, large = 1 << 20, mid = 1 << 15;
  const auto line = [&](double n, bool bf16) {
    return rank_allreduce_seconds(link, d, n, 2, bf16);
  };
  EXPECT_EQ(rank_allreduce_alone_seconds(link, d, large, 2, false), line(large, false));
  link.alone = {{.floats = 1 << 10, .seconds = 5e-6, .bf16_seconds = 6e-6},
                {.floats = 1 << 20, .seconds = 0.5e-3, .bf16_seconds = 0.9e-3},
                {.floats = 1 << 24, .seconds = 30e-3, .bf16_seconds = 33e-3}};
  // A sweep counts only on as many ranks as it ran on.
  EXPECT_EQ(rank_allreduce_alone_seconds(link, d, large, 2, false), line(large, false));
  link.alone_ranks = 2;
  EXPECT_EQ(rank_allreduce_alone_seconds(link, d, large, 4, false),
            rank_allreduce_seconds(link, d, large, 4, false));
  EXPECT_EQ(rank_allreduce_in_backward_seconds(link, d, large, 4, true),
            rank_allreduce_seconds(link, d, large, 4, true));
  EXPECT_EQ(rank_allreduce_alone_seconds(link, d, large, 1, false), 0);  // nothing to reduce
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, small, 2, false), 5e-6, 1e-15);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, small, 2, true), 6e-6, 1e-15);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, large, 2, false), 0.5e-3, 1e-15);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, large, 2, true), 0.9e-3, 1e-15);
  const double r_small = 5e-6 / line(small, false), r_large = 0.5e-3 / line(large, false);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, mid, 2, false),
              line(mid, false) * (r_small + 0.5 * (r_large - r_small)), 1e-15);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, 100, 2, false), line(100, false) * r_small,
              1e-15);
  const double top = 1 << 24, r_top = 30e-3 / line(top, false);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, 4 * large, 2, false),
              line(4 * large, false) * (r_large + 0.5 * (r_top - r_large)), 1e-12);
  EXPECT_NEAR(rank_allreduce_alone_seconds(link, d, 4 * top, 2, false),
              line(4 * top, false) * r_top, 1e-12);
  // A bucket posted while backward runs: float32 on the line; bf16 on the float32 line
  // times the sweep's bf16-to-float32 ratio (the line's own bf16 without a sweep).
  EXPECT_EQ(rank_allreduce_in_backward_seconds(link, d, mid, 2, false), line(mid, false));
  EXPECT_NEAR(rank_allreduce_in_backward_seconds(link, d, small, 2, true),
              line(small, false) * 6e-6 / 5e-6, 1e-15);
  EXPECT_NEAR(rank_allreduce_in_backward_seconds(link, d, mid, 2, true),
              line(mid, false) * (1.2 + 0.5 * (1.8 - 1.2)), 1e-15);
  // The seed model's buckets in backward's order: layers 5-3, layer 2 (33.6 MB, over 25 MB),
  // then layer 1 (784 x 4096 + 4096), posted last; all between the sweep's 2^20 and 2^24.
  HardwareProfile hw = cpu_profile();
  hw.rank_rank = link;
  Scenario s = seed(1);
  s.ranks = 2;
  const std::vector<double> buckets = {64.0 * 10 + 10 + 512.0 * 64 + 64 + 2048.0 * 512 + 512,
                                       4096.0 * 2048 + 2048, 784.0 * 4096 + 4096};
  for (const bool bf16 : {false, true}) {
    s.bf16 = bf16;
    double expected = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      expected += i + 1 < buckets.size()
                      ? rank_allreduce_in_backward_seconds(link, d, buckets[i], 2, bf16)
                      : rank_allreduce_alone_seconds(link, d, buckets[i], 2, bf16);
    }
    EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"), expected, 1e-12)
        << "bf16 " << bf16;
    HardwareProfile no_sweep = hw;
    no_sweep.rank_rank.alone.clear();
    double lined = 0;
    for (const double b : buckets) lined += line(b, bf16);
    EXPECT_NEAR(simulate(no_sweep, s, Algorithm::hierarchical).phases.at("allreduce"), lined, 1e-12)
        << "bf16 " << bf16;
  }
  // A model whose gradients go in one bucket: its one all-reduce runs alone.
  s.bf16 = false;
  s.model = ModelCost::dense({784, 256, 256, 10});
  const double params = static_cast<double>(s.model.params());
  EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"),
              rank_allreduce_alone_seconds(link, d, params, 2, false), 1e-15);
  // Deterministic ranks all-gather every bucket; the sweep timed no all-gather.
  s.deterministic = true;
  HardwareProfile no_sweep = hw;
  no_sweep.rank_rank.alone.clear();
  EXPECT_EQ(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"),
            simulate(no_sweep, s, Algorithm::hierarchical).phases.at("allreduce"));
}

TEST(Algorithms, DeterministicRanksExchangeAsTheSweepTimedIt) {
  HardwareProfile hw = cpu_profile();
  hw.rank_rank = {.bandwidth = 2e9, .latency = 5e-6};
  const auto line = [&](double n) {  // (R-1) transfers and R reads at the sum's rate, 2 ranks
    return hw.rank_rank.latency + 4.0 * n / hw.rank_rank.bandwidth + 2 * 4.0 * n / 30e9;
  };
  const double small = 1 << 10, large = 1 << 20, mid = 1 << 15;
  EXPECT_NEAR(rank_deterministic_seconds(hw, large, 2, true), line(large), 1e-15);
  // floats; float32, bf16, deterministic; deterministic with the caches emptied first
  hw.rank_rank.alone = {{1 << 10, 5e-6, 6e-6, 4e-6, 9e-6},
                        {1 << 20, 0.5e-3, 0.9e-3, 0.8e-3, 2.0e-3},
                        {1 << 24, 30e-3, 33e-3, 40e-3, 50e-3}};
  hw.rank_rank.alone_ranks = 2;
  // At a measured size, the sweep's time: back to back, or with the caches emptied first.
  EXPECT_NEAR(rank_deterministic_seconds(hw, small, 2, false), 4e-6, 1e-15);
  EXPECT_NEAR(rank_deterministic_seconds(hw, small, 2, true), 9e-6, 1e-15);
  EXPECT_NEAR(rank_deterministic_seconds(hw, large, 2, false), 0.8e-3, 1e-15);
  EXPECT_NEAR(rank_deterministic_seconds(hw, large, 2, true), 2.0e-3, 1e-15);
  // Between, the line times the ratio interpolated in log size; other rank counts, the line.
  const double r_small = 9e-6 / line(small), r_large = 2.0e-3 / line(large);
  EXPECT_NEAR(rank_deterministic_seconds(hw, mid, 2, true),
              line(mid) * (r_small + 0.5 * (r_large - r_small)), 1e-15);
  EXPECT_NEAR(rank_deterministic_seconds(hw, large, 4, true),
              3 * (5e-6 + 4.0 * large / 2e9) + 4 * 4.0 * large / 30e9, 1e-15);
  // A sweep from before calibrate timed the exchange: the line.
  HardwareProfile older = hw;
  for (auto& a : older.rank_rank.alone) a.deterministic_seconds = a.deterministic_cold_seconds = 0;
  EXPECT_NEAR(rank_deterministic_seconds(older, large, 2, true), line(large), 1e-15);

  // The seed model on 2 ranks: 2 micro-shards per rank, each's gradients copied aside, the
  // tree of the two copies (2 reads, a write), then its three buckets exchanged; 51 MB of
  // parameters, far above a 2 MB cache: at the cold rates and the cold sweep.
  hw.device.cold_copy_bandwidth = 5e9;
  hw.device.cold_sum_bandwidth = 15e9;
  hw.device.private_cache_bytes = 2 << 20;
  Scenario s = seed(1);
  s.ranks = 2;
  s.deterministic = true;
  const double seed_bytes = 4.0 * static_cast<double>(s.model.params());
  const std::vector<double> buckets = {64.0 * 10 + 10 + 512.0 * 64 + 64 + 2048.0 * 512 + 512,
                                       4096.0 * 2048 + 2048, 784.0 * 4096 + 4096};
  double exchange = 0;
  for (const double b : buckets) exchange += rank_deterministic_seconds(hw, b, 2, true);
  EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"),
              2 * seed_bytes / 5e9 + 3 * seed_bytes / 15e9 + exchange, 1e-12);
  // A model that fits in the cache: the warm copy and sum (host_device, device_device) and
  // the back-to-back sweep; its one bucket.
  s.model = ModelCost::dense({784, 256, 10});
  const double small_floats = static_cast<double>(s.model.params());
  ASSERT_LT(4 * small_floats, 2 << 20);
  EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"),
              2 * 4 * small_floats / 10e9 + 3 * 4 * small_floats / 30e9 +
                  rank_deterministic_seconds(hw, small_floats, 2, false),
              1e-15);
  // A cache of unknown size: every model at the cold rates.
  hw.device.private_cache_bytes = 0;
  EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"),
              2 * 4 * small_floats / 5e9 + 3 * 4 * small_floats / 15e9 +
                  rank_deterministic_seconds(hw, small_floats, 2, true),
              1e-15);
  // A profile without the cold rates keeps the older sum: 2 reads at the warm rate.
  hw.device.cold_copy_bandwidth = hw.device.cold_sum_bandwidth = 0;
  EXPECT_NEAR(simulate(hw, s, Algorithm::hierarchical).phases.at("allreduce"),
              2 * 4 * small_floats / 10e9 + 2 * 4 * small_floats / 30e9 +
                  rank_deterministic_seconds(hw, small_floats, 2, false),
              1e-15);
}

// Deterministic mode in one process, for a model whose devices' parameters, gradients and
// shard copies all fit the cache the cores share: the copies aside and the tree as calibrate's
// deterministic_exchange timed them, per byte at the model's gradient bytes (in log bytes
// between its sizes), the tree scaled to the copies each device sums. Beyond the shared cache,
// across MPI ranks, or without the probe or the cache's size: the rates before.
TEST(Algorithms, DeterministicCopiesInTheSharedCacheTakeTheProbesTimes) {
  HardwareProfile hw = cpu_profile();
  hw.device.cold_copy_bandwidth = 5e9;
  hw.device.cold_sum_bandwidth = 15e9;
  hw.device.private_cache_bytes = 1 << 20;
  hw.device.shared_cache_bytes = int64_t{32} << 20;
  Scenario s = seed(2);
  s.model = ModelCost::dense({784, 256, 256, 10});  // 1.07 MB: outgrows the 1 MiB L2
  s.batch = 32;
  s.deterministic = true;
  const double bytes = 4.0 * static_cast<double>(s.model.params());
  const auto exchange = [&](const HardwareProfile& h, const Scenario& sc) {
    return simulate(h, sc, Algorithm::deterministic_shards).phases.at("allreduce");
  };
  // Without the probe: 2 copies at the cold copy rate, the tree's 2 reads and a write at the
  // cold sum rate, each at the memory share, then the reducer's buckets.
  const double before = exchange(hw, s);
  const double buckets = before - 2 * bytes / (5e9 * 0.7) - 3 * bytes / (15e9 * 0.7);
  HardwareProfile probed = hw;
  probed.device.deterministic_exchange = {{int64_t{256} << 10, 10e-6, 20e-6},
                                          {int64_t{4} << 20, 400e-6, 600e-6}};
  probed.device.deterministic_exchange_devices = 2;
  probed.device.deterministic_exchange_shards = 2;
  const double t = std::log(bytes / (256 << 10)) / std::log(16.0);
  const double small = 256 << 10, large = 4 << 20;
  const double copy = 10e-6 / small + t * (400e-6 / large - 10e-6 / small);
  const double tree = 20e-6 / small + t * (600e-6 / large - 20e-6 / small);
  EXPECT_NEAR(exchange(probed, s), 2 * bytes * copy + bytes * tree + buckets, 1e-12);
  EXPECT_LT(exchange(probed, s), before);  // these times are faster than memory's
  // 8 micro-shards: 4 copies per device, the tree's 4 reads and a write over the probe's 3.
  Scenario eight = s;
  eight.deterministic_shards = 8;
  HardwareProfile unprobed_eight = hw;
  const double buckets_eight =
      exchange(unprobed_eight, eight) - 4 * bytes / (5e9 * 0.7) - 5 * bytes / (15e9 * 0.7);
  EXPECT_NEAR(exchange(probed, eight), 4 * bytes * copy + bytes * tree * 5 / 3 + buckets_eight,
              1e-12);
  // 2 x (2 copies + gradients + parameters) x 1.07 MB = 8.6 MB: an 8 MiB cache does not hold
  // them, and the rates before apply.
  HardwareProfile small_cache = probed;
  small_cache.device.shared_cache_bytes = int64_t{8} << 20;
  EXPECT_EQ(exchange(small_cache, s), before);
  HardwareProfile unknown = probed;
  unknown.device.shared_cache_bytes = 0;
  EXPECT_EQ(exchange(unknown, s), before);
  // The seed model (51 MB) is far beyond the cache.
  Scenario large_model = seed(2);
  large_model.deterministic = true;
  EXPECT_EQ(exchange(probed, large_model), exchange(hw, large_model));
  // In a cache that holds it (a 512 MiB level 3), a model beyond the probe's largest size
  // keeps the rates before (the probe says nothing there); timed at its size, it takes them.
  HardwareProfile big_cache = probed;
  big_cache.device.shared_cache_bytes = int64_t{512} << 20;
  EXPECT_EQ(exchange(big_cache, large_model), exchange(hw, large_model));
  big_cache.device.deterministic_exchange.push_back({int64_t{64} << 20, 20e-3, 30e-3});
  const double seed_bytes = 4.0 * static_cast<double>(large_model.model.params());
  const double u = std::log(seed_bytes / large) / std::log(16.0);
  const double seed_copy = 400e-6 / large + u * (20e-3 / (64 << 20) - 400e-6 / large);
  const double seed_tree = 600e-6 / large + u * (30e-3 / (64 << 20) - 600e-6 / large);
  HardwareProfile big_unprobed = big_cache;
  big_unprobed.device.deterministic_exchange.clear();
  const double seed_buckets = exchange(big_unprobed, large_model) - 2 * seed_bytes / (5e9 * 0.7) -
                              3 * seed_bytes / (15e9 * 0.7);
  EXPECT_NEAR(exchange(big_cache, large_model),
              2 * seed_bytes * seed_copy + seed_bytes * seed_tree + seed_buckets, 1e-9);
  // Across MPI ranks the probe does not apply (it timed the devices of one process).
  Scenario ranks = s;
  ranks.devices = 1;
  ranks.ranks = 2;
  EXPECT_EQ(simulate(probed, ranks, Algorithm::hierarchical).phases.at("allreduce"),
            simulate(hw, ranks, Algorithm::hierarchical).phases.at("allreduce"));
}

}  // namespace
}  // namespace tandem::detail

namespace tandem::detail {
namespace {

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(Algorithms, AdviceOffersOnlyWhatTheAlgorithmRunsAndSaysWhatItRestsOn) {
  HardwareProfile hw = cpu_profile();
  hw.device_device.bandwidth = 0.5e9;  // a slow reduction, so the all-reduce matters
  Scenario s = seed(2);
  s.reducer = ReducerKind::allreduce;
  auto advice = advise(hw, s, predict_all(hw, s, {1, 2}));
  // In one process the reducers read float32 buffers: no bf16 to offer.
  EXPECT_FALSE(mentions(advice, "bf16")) << advice.front();
  // Across ranks gradients can cross as bf16: on a link as fast as memory it is slower.
  s = seed(1);
  s.ranks = 2;
  s.batch = 16;  // little compute, so the all-reduce is a large part of the step
  hw.rank_rank = {.bandwidth = 30e9, .latency = 1e-6};
  hw.device.bf16_seconds_per_float = 5e-9;
  advice = advise(hw, s, predict_all(hw, s, {1}));
  EXPECT_TRUE(mentions(advice, "bf16 gradient compression would be slower here")) << advice.front();
  hw.rank_rank = {.bandwidth = 0.2e9, .latency = 30e-6};
  hw.device.bf16_seconds_per_float = 0.5e-9;
  advice = advise(hw, s, predict_all(hw, s, {1}));
  EXPECT_TRUE(mentions(advice, "bf16 gradient compression halves the bytes"));
  // Costed from halved bytes (no sweep on this link), bf16 was contradicted between 2 CPU
  // ranks; costed from calibrate's sweep, it was not, and it never measured faster.
  EXPECT_TRUE(mentions(advice, "[not validated: no all-reduce sweep from tandem calibrate"));
  hw.rank_rank.alone = {{.floats = 1 << 10, .seconds = 5e-6, .bf16_seconds = 4e-6},
                        {.floats = 1 << 24, .seconds = 0.6, .bf16_seconds = 0.3}};
  hw.rank_rank.alone_ranks = 2;
  advice = advise(hw, s, predict_all(hw, s, {1}));
  EXPECT_TRUE(mentions(advice, "bf16 gradient compression halves the bytes"));
  EXPECT_TRUE(mentions(advice, "bf16 never measured faster than float32")) << advice.front();
  EXPECT_FALSE(mentions(advice, "[checked on 2 CPU ranks"));
  for (auto& point : hw.rank_rank.alone) point.bf16_seconds = 2 * point.seconds;
  advice = advise(hw, s, predict_all(hw, s, {1}));
  EXPECT_TRUE(mentions(advice, "bf16 gradient compression would be slower here"));
  EXPECT_TRUE(mentions(advice, "[checked on 2 CPU ranks, 3 held-out runs")) << advice.front();
  // On 4 ranks the 2-rank sweep does not count: halved bytes again, not validated.
  s.ranks = 4;
  advice = advise(hw, s, predict_all(hw, s, {1}));
  EXPECT_TRUE(mentions(advice, "[not validated: no all-reduce sweep from tandem calibrate"));
  s.ranks = 2;
  hw.rank_rank.alone.clear();
  hw.rank_rank.alone_ranks = 0;
  EXPECT_TRUE(mentions(advice, "[not validated by a measured run]"));  // the link line
  // A bucket size, on a link whose latency makes fewer buckets pay (6 of the deep model's
  // layers in their own buckets by default, 2 at 25 MB): the line says what the runs on CPU
  // devices and ranks measured.
  Scenario deep = s;
  deep.model = ModelCost::dense({784, 1024, 1024, 1024, 1024, 1024, 1024, 10});
  hw.rank_rank = {.bandwidth = 30e9, .latency = 5e-3};
  advice = advise(hw, deep, predict_all(hw, deep, {1}));
  EXPECT_TRUE(mentions(advice, "25 MB buckets: ")) << advice.front();
  EXPECT_TRUE(mentions(advice, "25 MB buckets were predicted 2-21% faster for a deep model"));
  // A larger per-device batch on CPU devices in one process rests on the held-out runs.
  HardwareProfile slow_steps = cpu_profile();
  slow_steps.device.step_overhead = 50e-3;  // a fixed cost that only more rows amortize
  s = seed(2);
  s.batch = 16;
  advice = advise(slow_steps, s, predict_all(slow_steps, s, {1, 2}));
  ASSERT_TRUE(mentions(advice, "Per-device batch 8 is too small"));
  EXPECT_TRUE(mentions(advice, "[validated: held-out runs on CPU devices"));
}

}  // namespace
}  // namespace tandem::detail
