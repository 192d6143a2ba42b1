// Shared by the benchmarks: timing helpers and the seed model's shapes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
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

// A synthetic global batch for the seed model: uniform pixels, one-hot labels, rows 0..n-1.
struct SeedBatch {
  Tensor x, y;
  std::vector<int64_t> rows;
};
inline SeedBatch seed_batch(int64_t batch) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  SeedBatch b{Tensor({batch, 784}), Tensor({batch, 10}), std::vector<int64_t>(batch)};
  for (auto& v : b.x.values()) v = u(gen);
  for (int64_t i = 0; i < batch; ++i) b.y[i * 10 + i % 10] = 1.f;
  std::iota(b.rows.begin(), b.rows.end(), 0);
  return b;
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

// "128,512" -> {128, 512}.
inline std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  for (size_t at = 0; at < s.size();) {
    const size_t comma = s.find(',', at);
    out.push_back(std::stoll(s.substr(at, comma - at)));
    at = comma == std::string::npos ? s.size() : comma + 1;
  }
  return out;
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
