// tandem calibrate's arithmetic: the dense rate it solves from 1-device steps is the one the
// cost model then predicts those steps with (the two sides of one formula), and a plan that
// cannot be measured is an error naming the option.
#include "advise/calibrate.h"

#include <gtest/gtest.h>

#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/probes.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

// The weight-gradient GEMMs are timed once per distinct row count, ascending, every pass
// taking time; with one device there are no shards to time.
TEST(Calibrate, WeightGradGemmsAreTimedAtEachDistinctRowCount) {
  const auto gemms = weight_grad_gemm_seconds({64, 48, 10}, {8, 4, 8}, 2, 1, 1);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0].rows, 4);
  EXPECT_EQ(gemms[1].rows, 8);
  for (const auto& g : gemms) {
    for (const double t : {g.whole, g.shard, g.whole_cold, g.shard_cold}) {
      EXPECT_GT(t, 0);
      EXPECT_LT(t, 1);
    }
  }
  EXPECT_TRUE(weight_grad_gemm_seconds({64, 48, 10}, {8}, 1, 1, 1).empty());
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
