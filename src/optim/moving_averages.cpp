#include "optim/moving_averages.h"

#include <algorithm>

#include "core/parallel_for.h"

namespace tandem::detail {
namespace {

class MovingAverageKernel final : public OptimizerKernel {
 public:
  MovingAverageKernel(std::unique_ptr<OptimizerKernel> rule, std::vector<MovingAverageRange> ranges)
      : rule_(std::move(rule)), ranges_(std::move(ranges)) {}

  int state_slots() const override { return rule_->state_slots(); }

  void update(float* params, const float* grads, float* const* state, int64_t begin, int64_t end,
              int64_t iteration, double learning_rate, int threads, int64_t origin) const override {
    int64_t at = begin;  // relative to the pointers; a range's r.begin - origin likewise
    for (const MovingAverageRange& r : ranges_) {
      const int64_t rb = r.begin - origin, re = r.end - origin;
      if (re <= at) continue;
      if (rb >= end) break;
      if (rb > at) {
        rule_->update(params, grads, state, at, rb, iteration, learning_rate, threads, origin);
      }
      const int64_t b = std::max(at, rb), e = std::min(end, re);
      const auto keep = static_cast<float>(r.momentum), take = static_cast<float>(1 - r.momentum);
#pragma omp simd
      for (int64_t i = b; i < e; ++i) params[i] = keep * params[i] + take * grads[i];
      at = e;
    }
    if (at < end) {
      rule_->update(params, grads, state, at, end, iteration, learning_rate, threads, origin);
    }
  }

 private:
  std::unique_ptr<OptimizerKernel> rule_;
  std::vector<MovingAverageRange> ranges_;
};

}  // namespace

std::unique_ptr<OptimizerKernel> with_moving_averages(std::unique_ptr<OptimizerKernel> rule,
                                                      std::vector<MovingAverageRange> ranges) {
  if (ranges.empty()) return rule;
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  return std::make_unique<MovingAverageKernel>(std::move(rule), std::move(ranges));
}

}  // namespace tandem::detail
