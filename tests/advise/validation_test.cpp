// The held-out comparison of `tandem bench validate`: a speedup or step time outside its
// tolerance is a miss naming the configuration, one inside is not, and a 1-device row's
// speedup (1 by definition) is not checked.
#include "advise/validation.h"

#include <gtest/gtest.h>

namespace tandem::detail {
namespace {

ValidationRow row(int devices, double predicted_ms, double measured_ms, double predicted_x,
                  double measured_x) {
  ValidationRow r;
  r.model = "784-256-10";
  r.config = devices == 1 ? "1 device" : "2 devices host";
  r.batch = 128;
  r.devices = devices;
  r.predicted_seconds = predicted_ms / 1e3;
  r.measured_seconds = measured_ms / 1e3;
  r.predicted_speedup = predicted_x;
  r.measured_speedup = measured_x;
  return r;
}

TEST(Validation, MissesAreTheRowsOutsideTheirTolerance) {
  const Tolerances t;  // 15% speedup, 20% step
  EXPECT_TRUE(validation_misses({row(1, 100, 119, 1, 1), row(2, 60, 55, 1.72, 1.5)}, t).empty());
  const auto speedup = validation_misses({row(2, 60, 55, 1.74, 1.5)}, t);  // +16%
  ASSERT_EQ(speedup.size(), 1u);
  EXPECT_NE(speedup[0].find("784-256-10, batch 128, 2 devices host: speedup predicted 1.74x"),
            std::string::npos)
      << speedup[0];
  const auto step = validation_misses({row(1, 100, 79, 1, 1)}, t);  // +26.6%
  ASSERT_EQ(step.size(), 1u);
  EXPECT_NE(step[0].find("step predicted 100.00 ms, measured 79.00 ms"), std::string::npos);
  // Both at once, and a tolerance of its own.
  EXPECT_EQ(validation_misses({row(2, 100, 50, 3, 1.5)}, t).size(), 2u);
  EXPECT_TRUE(validation_misses({row(2, 100, 50, 3, 1.5)}, {1.5, 1.5}).empty());
  EXPECT_TRUE(validation_missed(row(2, 100, 50, 3, 1.5), t));
  EXPECT_FALSE(validation_missed(row(1, 100, 90, 1, 9), t));  // 1 device: speedup not checked
  // A measurement that failed (0 s) is never within tolerance.
  EXPECT_EQ(validation_misses({row(1, 100, 0, 1, 1)}, t).size(), 1u);
}

TEST(Validation, TableMarksMisses) {
  const std::string table =
      validation_table({row(1, 100, 101, 1, 1), row(2, 60, 80, 1.7, 1.26)}, Tolerances{});
  EXPECT_NE(table.find("1 device"), std::string::npos);
  EXPECT_EQ(table.find("MISS"), table.rfind("MISS"));  // one miss: the second row
  EXPECT_NE(table.find("+34.9%  MISS"), std::string::npos) << table;
}

}  // namespace
}  // namespace tandem::detail
