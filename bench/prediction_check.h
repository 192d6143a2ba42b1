// The cost model against measurements taken in the same run: the hardware profile's
// device is calibrated with this run's own one-device step at the first batch, then the
// model predicts each measured configuration's speedup; the table shows both and the error
// (the goal: within +-15%).
#pragma once

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advise/cost_model.h"
#include "bench_util.h"

namespace tandem::bench {

struct MeasuredSpeedup {
  int64_t batch = 0;
  std::string strategy;  // mirrored | host
  int devices = 1;
  double ms = 0, one_device_ms = 0;
};

// Returns the worst absolute relative error.
inline double print_prediction_check(const std::string& profile,
                                     const std::vector<MeasuredSpeedup>& rows,
                                     nlohmann::json& out) {
  if (rows.empty()) return 0;
  detail::HardwareProfile hw = detail::load_hardware_profile(profile);
  const MeasuredSpeedup& first = rows.front();
  detail::calibrate_to_step(hw, kSeedWidths, first.batch, first.one_device_ms / 1e3);
  std::printf(
      "\ncost model (%s, calibrated with this run's 1-device step at batch %lld: %.2f "
      "TFLOP/s) vs measured\n",
      profile.c_str(), static_cast<long long>(first.batch), hw.device.sustained_flops / 1e12);
  std::printf("%6s %-9s %7s %10s %10s %8s\n", "batch", "strategy", "devices", "measured",
              "predicted", "error");
  double worst = 0;
  for (const auto& r : rows) {
    detail::Scenario s;
    s.model = detail::ModelCost::dense(kSeedWidths);
    s.batch = r.batch;
    s.strategy = tandem::detail::parse_strategy(r.strategy);
    const auto p = detail::predict_all(hw, s, {r.devices}).front();
    const double measured = r.one_device_ms / r.ms;
    const double error = p.speedup / measured - 1;
    worst = std::max(worst, std::fabs(error));
    std::printf("%6lld %-9s %7d %9.2fx %9.2fx %+7.1f%%%s\n", static_cast<long long>(r.batch),
                r.strategy.c_str(), r.devices, measured, p.speedup, 100 * error,
                std::fabs(error) <= 0.15 ? "" : "  (outside +-15%)");
    out["prediction_check"].push_back({{"batch", r.batch},
                                       {"strategy", r.strategy},
                                       {"devices", r.devices},
                                       {"measured_speedup", measured},
                                       {"predicted_speedup", p.speedup},
                                       {"predicted_ms", p.step_seconds * 1e3},
                                       {"measured_ms", r.ms},
                                       {"error", error}});
  }
  out["prediction_profile"] = profile;
  return worst;
}

}  // namespace tandem::bench
