// The cost model and its hardware profiles: the seed's multi_gpu_model slowdown predicted
// from its 1-GPU time, the physics each strategy must obey, and clear errors for bad input.
#include "advise/cost_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace tandem::detail {
namespace {

const std::vector<int64_t> kSeed = {784, 4096, 2048, 512, 64, 10};

Scenario seed_scenario(const std::string& strategy) {
  Scenario s;
  s.model = ModelCost::dense(kSeed);
  s.strategy = parse_strategy(strategy);
  return s;
}

TEST(CostModel, SeedModelCounts) {
  const ModelCost m = ModelCost::dense(kSeed);
  EXPECT_EQ(m.params(), 12688586);
  // forward 2*B*sum(in*out); backward twice that minus the first layer's input gradient
  EXPECT_NEAR(m.step_flops(128), 8.918e9, 0.001e9);
}

TEST(CostModel, CalibrationReproducesTheSeedsOneGpuTime) {
  const HardwareProfile hw = load_hardware_profile("pcie3-4gpu");
  const auto p = predict_all(hw, seed_scenario("host"), {1}).front();
  EXPECT_NEAR(p.total_seconds, 25.0, 1e-6);
}

TEST(CostModel, SeedsFourGpuMultiGpuModelTimeWithin25PercentOfTheReported50s) {
  const HardwareProfile hw = load_hardware_profile("pcie3-4gpu");
  const auto p = predict_all(hw, seed_scenario("host"), {4}).front();
  EXPECT_GE(p.total_seconds, 50.0 * 0.75);
  EXPECT_LE(p.total_seconds, 50.0 * 1.25);
  EXPECT_LT(p.speedup, 1.0);  // slower than one GPU, as reported
  EXPECT_NE(p.bottleneck, "compute");
}

TEST(CostModel, MirroredBeatsHostAndLargerBatchesScaleBetter) {
  const HardwareProfile hw = load_hardware_profile("pcie3-4gpu");
  const auto host = predict_all(hw, seed_scenario("host"), {4}).front();
  const auto ring = predict_all(hw, seed_scenario("mirrored"), {4}).front();
  EXPECT_LT(ring.step_seconds, host.step_seconds);
  Scenario big = seed_scenario("mirrored");
  big.batch = 4096;
  EXPECT_GT(predict_all(hw, big, {4}).front().speedup, ring.speedup);
  // A faster link: NVLink systems scale the same step better.
  const auto nvlink = predict_all(load_hardware_profile("v100-nvlink-8gpu"), big, {8}).front();
  EXPECT_GT(nvlink.speedup, 4.0);
}

TEST(CostModel, CompressionAndOverlapOnlyHelp) {
  const HardwareProfile hw = load_hardware_profile("pcie3-4gpu");
  Scenario s = seed_scenario("mirrored");
  const double plain = predict(hw, s).step_seconds;
  s.devices = 4;
  const double four = predict(hw, s).step_seconds;
  s.bf16 = true;
  EXPECT_LT(predict(hw, s).step_seconds, four);
  s.bf16 = false;
  s.overlap = false;
  EXPECT_GT(predict(hw, s).step_seconds, four);
  s.overlap = true;
  // A tree moves the whole bucket per hop: slower than a ring for large buckets at n = 4.
  s.allreduce = AllreduceKind::tree;
  EXPECT_GT(predict(hw, s).step_seconds, four);
  EXPECT_GT(four, 0);
  EXPECT_GT(plain, 0);
}

TEST(CostModel, BadInputIsAClearError) {
  test::expect_error<ConfigError>([] { load_hardware_profile("no-such-machine"); },
                                  {"unknown hardware profile 'no-such-machine'", "pcie3-4gpu"});
  const HardwareProfile hw = load_hardware_profile("pcie3-4gpu");
  Scenario s = seed_scenario("host");
  s.batch = 2;
  s.devices = 4;
  test::expect_error<ConfigError>([&] { predict(hw, s); },
                                  {"batch size 2 is smaller than 4 devices"});
  s.batch = 128;
  s.devices = 8;  // beyond the profile's 4: extrapolated, not refused
  EXPECT_GT(predict(hw, s).step_seconds, 0);
  s.devices = 2;
  // Names are parsed once, at the boundary, with the valid names in the error.
  test::expect_error<ConfigError>([&] { parse_strategy("ring"); },
                                  {"unknown strategy 'ring'", "mirrored, host"});
  test::expect_error<ConfigError>([&] { parse_allreduce("star"); },
                                  {"unknown all-reduce 'star'", "ring, tree"});
  EXPECT_EQ(parse_allreduce(name_of(AllreduceKind::tree)), AllreduceKind::tree);

  test::TempDir dir;
  nlohmann::json j =
      nlohmann::json::parse(std::ifstream(profiles_directory() + "/pcie3-4gpu.json"));
  j["device_device"]["bandwidth"] = 0;
  test::expect_error<ConfigError>([&] { parse_hardware_profile(j, "zero.json"); },
                                  {"zero.json: device_device", "'bandwidth' must be > 0"});
  j["device_device"]["bandwidth"] = 8e9;
  j["host_device"]["latency"] = -1;
  test::expect_error<ConfigError>([&] { parse_hardware_profile(j, "neg.json"); },
                                  {"neg.json: host_device", "'latency' must be a number >= 0"});
  j.erase("host");
  j["host_device"]["latency"] = 0;
  test::expect_error<ConfigError>([&] { parse_hardware_profile(j, "nohost.json"); },
                                  {"nohost.json", "missing object 'host'"});
  std::ofstream(dir.file("broken.json")) << "{ not json";
  test::expect_error<FormatError>([&] { load_hardware_profile(dir.file("broken.json")); },
                                  {"broken.json", "not valid JSON"});
}

TEST(CostModel, EveryShippedProfileLoadsAndNamesItsSources) {
  const auto names = known_hardware_profiles();
  EXPECT_GE(names.size(), 7u);
  for (const auto& name : names) {
    const HardwareProfile hw = load_hardware_profile(name);
    EXPECT_GT(hw.device.sustained_flops, 0) << name;
    EXPECT_FALSE(hw.sources.empty()) << name << " has no sources";
    const auto p = predict_all(hw, seed_scenario("mirrored"), {1, hw.max_devices});
    EXPECT_GT(p.back().step_seconds, 0) << name;
  }
}

}  // namespace
}  // namespace tandem::detail
