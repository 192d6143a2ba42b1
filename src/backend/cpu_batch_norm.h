// Batch normalization on oneDNN for the CPU backend: one primitive per (rows, channels,
// epsilon, which of gamma and beta exist, training or not), created once and reused; data
// stays (rows, channels) row-major.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/backend.h"

namespace tandem::detail {

class CpuBatchNorm {
 public:
  CpuBatchNorm(dnnl::engine& engine, dnnl::stream& stream, int threads);
  ~CpuBatchNorm();

  void forward(const BatchNormArgs& a, bool training, float* y);
  void backward(const BatchNormArgs& a, bool training, const float* dy, float* dx, bool accumulate,
                float* dgamma, float* dbeta, bool accumulate_params);

  struct Plan;
  using Key = std::array<int64_t, 8>;

 private:
  Plan& plan(const Key& key, const BatchNormArgs& a);

  dnnl::engine& engine_;
  dnnl::stream& stream_;
  int threads_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace tandem::detail
