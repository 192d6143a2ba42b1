// The convnet cost model against measurements, with no timing in the test: the last
// validation run (bench/conv_scaling.py --validate, committed as
// docs/results/conv_validation.json with the profile it calibrated from one 1-device run)
// is recomputed by this build's cost model, and every held-out cell that run found within
// its tolerance (15% on speedups, 20% on step times) must stay within it. The cells that run
// missed are known misses (docs/SCALING.md explains them); one may start to agree, none may
// be added. A deliberately broken profile must fail the same comparison, so it can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "advise/cost_model.h"
#include "tandem/zoo.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

// conv_validation.json: calibrated from MiniGoogLeNet's 1-device step (conv_calibration);
// conv_validation_calibrated.json: from `tandem calibrate --conv-model minigooglenet`'s
// profile as it is (every convolution shape timed, kernel-timed conv_step_scale and
// pool_scale).
json validation_run(const std::string& name = "conv_validation.json") {
  const std::string path = std::string(TANDEM_TEST_DATA_DIR) + "/../../docs/results/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in).at("validation");
}

// What bench/conv_scaling.py asks `tandem advise` for one cell, recomputed here.
double predicted(const HardwareProfile& hw, const json& cell) {
  const std::string what = cell.at("what");
  Scenario s;
  s.model = ModelCost::of(zoo::by_name(cell.at("model")));
  s.batch = cell.at("batch");
  s.strategy = StrategyKind::mirrored;
  s.update_passes = 3;  // --optimizer sgd
  s.per_device_batch = what.find("/device") != std::string::npos;
  const auto p = predict_all(hw, s, {1, 2});
  if (what == "1-device step") return p[0].step_seconds;
  if (what == "2-device step") return p[1].step_seconds;
  return p[1].speedup;
}

struct Outcome {
  int agreed = 0;        // held-out cells the validation run found within tolerance
  int misses = 0;        // of those, cells this build misses
  int known_misses = 0;  // cells the validation run missed
  std::string worst;     // the worst miss among the agreed cells, for the message
};

std::string describe(const json& cell, double error) {
  return cell.at("model").get<std::string>() + " batch " +
         std::to_string(cell.at("batch").get<int>()) + " " + cell.at("what").get<std::string>() +
         ": " + std::to_string(error * 100) + "%";
}

Outcome compare(const HardwareProfile& hw, const json& run) {
  Outcome o;
  double worst = 0;
  for (const json& cell : run.at("cells")) {
    if (!cell.at("held_out").get<bool>()) continue;
    const double error = predicted(hw, cell) / cell.at("measured").get<double>() - 1;
    const bool within = std::abs(error) <= cell.at("tolerance").get<double>();
    if (!cell.at("ok").get<bool>()) {
      ++o.known_misses;
      std::cout << "known miss: " << describe(cell, error) << (within ? " (now within)" : "")
                << "\n";
      continue;
    }
    ++o.agreed;
    if (!within) ++o.misses;
    if (!within && std::abs(error) > worst) {
      worst = std::abs(error);
      o.worst = describe(cell, error);
    }
  }
  return o;
}

HardwareProfile calibrated(const json& run) {
  return parse_hardware_profile(run.at("calibrated_profile"), "conv_validation.json");
}

TEST(ConvPredictions, AgreeWithTheLastValidationRun) {
  const json run = validation_run();
  const Outcome o = compare(calibrated(run), run);
  EXPECT_GE(o.agreed, 10);  // two models, two batches, steps and speedups
  EXPECT_LE(o.known_misses, 3);
  EXPECT_EQ(o.misses, 0) << "worst: " << o.worst;
}

TEST(ConvPredictions, AgreeWithTheValidationRunOfACalibratedProfile) {
  const json run = validation_run("conv_validation_calibrated.json");
  ASSERT_TRUE(run.at("calibrated_profile").at("device").contains("conv_shapes"));
  ASSERT_FALSE(run.at("calibrated_profile").at("device").contains("conv_calibration"));
  const Outcome o = compare(calibrated(run), run);
  EXPECT_GE(o.agreed + o.known_misses, 13);  // 14 cells, the calibrating one not held out
  EXPECT_LE(o.known_misses, 4);              // docs/SCALING.md: the machine drifted
  EXPECT_EQ(o.misses, 0) << "worst: " << o.worst;
  // Convolutions at half their measured time in a step: the step predictions fail.
  json fast = run.at("calibrated_profile");
  fast["device"]["conv_step_scale"] = fast["device"]["conv_step_scale"].get<double>() / 2;
  fast["device"]["conv_flops"] = fast["device"]["conv_flops"].get<double>() * 2;
  EXPECT_GT(compare(parse_hardware_profile(fast, "fast.json"), run).misses, 3);
}

TEST(ConvPredictions, ABrokenProfileFailsTheComparison) {
  const json run = validation_run();
  // A link 1000x slower: the all-reduce of MiniGoogLeNet's 6.6 MB no longer hides.
  json slow_link = run.at("calibrated_profile");
  slow_link["device_device"]["bandwidth"] =
      slow_link["device_device"]["bandwidth"].get<double>() / 1000;
  EXPECT_GT(compare(parse_hardware_profile(slow_link, "slow.json"), run).misses, 0);
  // A convolution rate twice the measured one (a calibration step half as long).
  json fast = run.at("calibrated_profile");
  fast["device"]["conv_calibration"]["step_seconds"] =
      fast["device"]["conv_calibration"]["step_seconds"].get<double>() / 2;
  EXPECT_GT(compare(parse_hardware_profile(fast, "fast.json"), run).misses, 0);
}

TEST(ConvPredictions, LayerCostsOfTheMnistConvnet) {
  const ModelCost m = ModelCost::of(zoo::mnist_convnet());
  EXPECT_EQ(m.params(), 34826);
  // Forward multiply-adds x 2: conv 26*26*32*(3*3*1), conv 11*11*64*(3*3*32), dense 1600*10.
  const double forward = 2.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 9 * 32 + 1600 * 10);
  // Backward: weight and input gradients, but no input gradient for the first conv.
  const double first = 2.0 * 26 * 26 * 32 * 9;
  EXPECT_DOUBLE_EQ(m.step_flops(1), forward + 2 * forward - first);
  EXPECT_TRUE(m.has_conv());
  EXPECT_FALSE(ModelCost::of(zoo::seed_mlp()).has_conv());
  // The seed MLP from the zoo costs what its widths do, and is known by them (a profile's
  // rate curve measured on those widths applies to it); a convnet has no widths.
  EXPECT_DOUBLE_EQ(ModelCost::of(zoo::seed_mlp()).step_flops(128),
                   ModelCost::dense({784, 4096, 2048, 512, 64, 10}).step_flops(128));
  EXPECT_EQ(ModelCost::of(zoo::seed_mlp()).widths,
            std::vector<int64_t>({784, 4096, 2048, 512, 64, 10}));
  EXPECT_TRUE(m.widths.empty());
  // A Dropout between the Dense layers: not the chain whose steps calibrate measures.
  const Node x = Input({784});
  EXPECT_TRUE(ModelCost::of(Model(x, Dense(10, "softmax")(Dropout(0.5)(Dense(64, "relu")(x)))))
                  .widths.empty());
  EXPECT_EQ(ModelCost::of(Model(x, Dense(10, "softmax")(Dense(64, "relu")(x)))).widths,
            std::vector<int64_t>({784, 64, 10}));
}

TEST(ConvPredictions, BadConvCalibrationIsAClearError) {
  json p = validation_run().at("calibrated_profile");
  p["device"]["conv_calibration"]["model"] = "seed-mlp";
  test::expect_error<ConfigError>([&] { parse_hardware_profile(p, "p.json"); },
                                  {"p.json", "conv_calibration", "no Conv2D"});
  p["device"]["conv_calibration"]["model"] = "vgg16";
  test::expect_error<ConfigError>([&] { parse_hardware_profile(p, "p.json"); },
                                  {"conv_calibration", "built-in convnet", "vgg16"});
  p["device"]["conv_calibration"]["model"] = "minigooglenet";
  p["device"]["conv_calibration"]["step_seconds"] = 1e-9;
  test::expect_error<ConfigError>([&] { parse_hardware_profile(p, "p.json"); },
                                  {"conv_calibration", "below the model's other costs"});
}

}  // namespace
}  // namespace tandem::detail
