#include "advise/steps_at_once.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Both passes take time on one device and on two at once (a broken clock or a pass that runs
// nothing would give 0), fewer rows than the buffers hold included; a model without a layer,
// no devices or no rows are refused.
TEST(StepsAtOnce, AloneAndSharedStepsTakeTime) {
  for (const int devices : {1, 2}) {
    StepsAtOnce probe({32, 24, 16, 10}, 8, devices, 1);
    for (const int64_t rows : {8, 3}) {
      const StepsAtOnce::Seconds alone = probe.alone(rows);
      const StepsAtOnce::Seconds shared = probe.shared(rows);
      for (const double t : {alone.forward, alone.backward, shared.forward, shared.backward}) {
        EXPECT_GT(t, 0) << devices << " devices, " << rows << " rows";
        EXPECT_TRUE(std::isfinite(t));
      }
    }
  }
  EXPECT_THROW(StepsAtOnce({32}, 8, 2, 1), Error);
  EXPECT_THROW(StepsAtOnce({32, 10}, 8, 0, 1), Error);
  EXPECT_THROW(StepsAtOnce({32, 10}, 0, 2, 1), Error);
}

}  // namespace
}  // namespace tandem::detail
