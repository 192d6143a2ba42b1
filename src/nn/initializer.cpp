#include "nn/initializer.h"

#include <cmath>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Keras's truncated normal redraws beyond two standard deviations; dividing the target
// stddev by this constant restores the wanted variance.
constexpr double kTruncatedStddevCorrection = 0.87962566103423978;

void fill_uniform(float* v, int64_t n, double limit, Rng& rng) {
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((2.0 * rng.uniform_double() - 1.0) * limit);
}

void fill_truncated_normal(float* v, int64_t n, double stddev, Rng& rng) {
  for (int64_t i = 0; i < n; ++i) {
    double z;
    do z = rng.normal();
    while (std::abs(z) > 2.0);
    v[i] = static_cast<float>(z * stddev);
  }
}

}  // namespace

void check_initializer_name(const std::string& name, const std::string& where) {
  for (const char* known : {"glorot_uniform", "glorot_normal", "he_normal", "he_uniform",
                            "random_normal", "random_uniform", "zeros", "ones"}) {
    if (name == known) return;
  }
  throw ConfigError(where + ": unknown initializer '" + name +
                    "' (known: glorot_uniform, glorot_normal, he_normal, he_uniform, "
                    "random_normal, random_uniform, zeros, ones)");
}

void initialize(const ParamSpec& spec, float* v, Rng& rng, const std::string& where) {
  const std::string& name = spec.initializer.name;
  check_initializer_name(name, where);
  const int64_t n = shape_size(spec.shape);
  const double fan_in = static_cast<double>(spec.fan_in),
               fan_out = static_cast<double>(spec.fan_out);
  if (name == "zeros" || name == "ones") {
    std::fill(v, v + n, name == "ones" ? 1.f : 0.f);
  } else if (name == "glorot_uniform") {
    fill_uniform(v, n, std::sqrt(6.0 / (fan_in + fan_out)), rng);
  } else if (name == "he_uniform") {
    fill_uniform(v, n, std::sqrt(6.0 / fan_in), rng);
  } else if (name == "glorot_normal") {
    fill_truncated_normal(v, n, std::sqrt(2.0 / (fan_in + fan_out)) / kTruncatedStddevCorrection,
                          rng);
  } else if (name == "he_normal") {
    fill_truncated_normal(v, n, std::sqrt(2.0 / fan_in) / kTruncatedStddevCorrection, rng);
  } else if (name == "random_normal") {
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(0.05 * rng.normal());
  } else {  // random_uniform
    fill_uniform(v, n, 0.05, rng);
  }
}

}  // namespace tandem::detail
