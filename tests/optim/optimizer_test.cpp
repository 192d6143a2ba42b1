// Each update rule against the formula written out in double, over a sub-range (the other
// elements must not move), for several steps so accumulators matter.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optim/optimizer_kernel.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

struct KernelRun {
  std::vector<float> w, m, v;
};

// Runs `steps` updates of elements [2, n-2) with gradient g_i = sin(i + step).
KernelRun run_kernel(const Optimizer& config, int steps, int64_t n) {
  auto kernel = make_optimizer_kernel(config);
  KernelRun r{std::vector<float>(n), std::vector<float>(n, 0.f), std::vector<float>(n, 0.f)};
  for (int64_t i = 0; i < n; ++i) r.w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  std::vector<float> g(n);
  float* state[2] = {r.m.data(), r.v.data()};
  for (int t = 1; t <= steps; ++t) {
    for (int64_t i = 0; i < n; ++i) g[i] = std::sin(static_cast<float>(i + t));
    kernel->update(r.w.data(), g.data(), state, 2, n - 2, t, config.learning_rate, 2, 0);
  }
  return r;
}

std::vector<double> reference(const Optimizer& c, int steps, int64_t n) {
  std::vector<double> w(n), m(n, 0), v(n, 0);
  for (int64_t i = 0; i < n; ++i) w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  for (int t = 1; t <= steps; ++t) {
    for (int64_t i = 2; i < n - 2; ++i) {
      const double g = std::sin(static_cast<float>(i + t)), lr = c.learning_rate;
      if (c.name == "sgd" && c.momentum == 0) {
        w[i] -= lr * g;
      } else if (c.name == "sgd") {
        m[i] = c.momentum * m[i] - lr * g;
        w[i] += c.nesterov ? c.momentum * m[i] - lr * g : m[i];
      } else if (c.name == "rmsprop") {
        v[i] = c.rho * v[i] + (1 - c.rho) * g * g;
        w[i] -= lr * g / std::sqrt(v[i] + c.epsilon);
      } else {
        m[i] += (g - m[i]) * (1 - c.beta_1);
        v[i] += (g * g - v[i]) * (1 - c.beta_2);
        const double alpha =
            lr * std::sqrt(1 - std::pow(c.beta_2, t)) / (1 - std::pow(c.beta_1, t));
        w[i] -= m[i] * alpha / (std::sqrt(v[i]) + c.epsilon);
      }
    }
  }
  return w;
}

class OptimizerRule : public ::testing::TestWithParam<Optimizer> {};

TEST_P(OptimizerRule, MatchesFormulaOnRangeOnly) {
  const Optimizer c = GetParam();
  // Large enough to take the multi-threaded path, odd so chunks are uneven.
  const int64_t n = 200003;
  const KernelRun r = run_kernel(c, 5, n);
  const auto ref = reference(c, 5, n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(r.w[i], ref[i], 1e-5 * (1 + std::abs(ref[i]))) << c.name << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, OptimizerRule,
                         ::testing::Values(SGD(0.1), SGD(0.05, 0.9), SGD(0.05, 0.9, true),
                                           RMSprop(), RMSprop(0.01, 0.5, 1e-3), Adam(),
                                           Adam(0.01, 0.8, 0.99, 1e-3)),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(Optimizer, KerasDefaults) {
  EXPECT_DOUBLE_EQ(RMSprop().learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(RMSprop().rho, 0.9);
  EXPECT_DOUBLE_EQ(RMSprop().epsilon, 1e-7);
  EXPECT_DOUBLE_EQ(SGD().learning_rate, 0.01);
  EXPECT_DOUBLE_EQ(Adam().beta_2, 0.999);
  EXPECT_EQ(optimizer_from_name("adam").name, "adam");
}

TEST(Optimizer, BadConfigsAreClearErrors) {
  EXPECT_THROW(optimizer_from_name("adagrad"), ConfigError);
  EXPECT_THROW(make_optimizer_kernel(SGD(-1.0)), ConfigError);
  EXPECT_THROW(make_optimizer_kernel(SGD(0.1, 1.5)), ConfigError);
  EXPECT_THROW(make_optimizer_kernel(RMSprop(0.1, 0.9, 0.0)), ConfigError);
  EXPECT_THROW(make_optimizer_kernel(Adam(0.1, 1.0)), ConfigError);
  Optimizer unknown;
  unknown.name = "lion";
  EXPECT_THROW(make_optimizer_kernel(unknown), ConfigError);
}

}  // namespace
}  // namespace tandem::detail
