// The convolution rate of `tandem calibrate --conv-model M`: every built-in convnet's
// convolution shapes (and a saved model's), their oneDNN primitives timed alone on one device;
// then 1-device steps of M with every backend kernel timed, which set the convolutions' speed
// inside a step against alone (conv_step_scale), the rate of shapes not measured (conv_flops)
// and the pooling kernels' speed (pool_scale).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "advise/calibrate.h"
#include "parallel/strategy.h"

namespace tandem::detail {

// Measures them for plan.conv_model and writes them into profile["device"] (whose other
// figures the step's prediction takes), with their sources and the steps' kernel seconds
// (measurements["conv_steps"]); a line of each to `log`. `device_words` and `repeat_words`
// describe the device and the repetitions in the sources.
void calibrate_conv_rate(const CalibrationPlan& plan, const StrategyOptions& one_device,
                         uint64_t& seed, const std::string& device_words,
                         const std::string& repeat_words, nlohmann::json& profile,
                         nlohmann::json& sources, nlohmann::json& measurements, std::ostream& log);

}  // namespace tandem::detail
