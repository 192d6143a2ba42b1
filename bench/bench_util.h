// Shared by the benchmarks: timing helpers and the seed model's shapes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "tandem/tandem.h"

namespace tandem::bench {

// The seed's MLP: 784 -> 4096 -> 2048 -> 512 -> 64 -> 10.
inline const std::vector<int64_t> kSeedWidths = {784, 4096, 2048, 512, 64, 10};

// The seed's model, freshly initialised from `seed`.
inline Model seed_model(uint64_t seed = 1) {
  set_random_seed(seed);
  auto in = Input({784});
  Node h = in;
  for (size_t i = 1; i + 1 < kSeedWidths.size(); ++i) h = Dense(kSeedWidths[i], "relu")(h);
  return Model(in, Dense(kSeedWidths.back(), "softmax")(h));
}

// FLOPs of one training step: forward 2*B*in*out per layer; backward 2*B*in*out for the
// weight gradient and, except for the first layer (no input gradient), the same again.
inline double seed_step_flops(int64_t batch) {
  double flops = 0;
  for (size_t i = 0; i + 1 < kSeedWidths.size(); ++i) {
    const double layer = 2.0 * batch * kSeedWidths[i] * kSeedWidths[i + 1];
    flops += layer * (i == 0 ? 2 : 3);
  }
  return flops;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

template <class F>
double seconds_per_call(F&& f, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
}

}  // namespace tandem::bench
