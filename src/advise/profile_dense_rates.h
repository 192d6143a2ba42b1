// A hardware profile's dense rate curves (device.dense_rates), read from its JSON and checked:
// each model's widths, rate line and measured steps, the steps of ranks computing at once,
// and its weight-gradient GEMMs with the steps at once (each error names the entry, its rows
// and the key).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::detail {

std::vector<DenseRateCurve> dense_rates(const nlohmann::json& j, const std::string& where);

}  // namespace tandem::detail
