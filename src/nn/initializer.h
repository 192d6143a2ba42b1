// Weight initialisers with Keras's definitions (variance scaling with fan_in / fan_out).
#pragma once

#include <cstdint>

#include "core/rng.h"
#include "nn/layer.h"

namespace tandem::detail {

// Fills values (shape_size(spec.shape)) as spec.initializer says. Unknown name: ConfigError
// naming `where` (the layer) and the known names.
void initialize(const ParamSpec& spec, float* values, Rng& rng, const std::string& where);

// Throws ConfigError unless `name` is a known initializer.
void check_initializer_name(const std::string& name, const std::string& where);

}  // namespace tandem::detail
