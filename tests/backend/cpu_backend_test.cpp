// The CPU backend against naive loops: every GEMM transpose combination, epilogues,
// accumulation, activations forward/backward and bias gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace tandem {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

double act(ActivationKind a, double x) {
  switch (a) {
    case ActivationKind::relu:
      return x > 0 ? x : 0;
    case ActivationKind::sigmoid:
      return 1 / (1 + std::exp(-x));
    case ActivationKind::tanh:
      return std::tanh(x);
    default:
      return x;
  }
}

struct GemmCase {
  int64_t m, n, k;
  bool trans_a, trans_b, bias;
  ActivationKind activation;
  bool accumulate;
};

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesNaiveLoops) {
  const GemmCase c = GetParam();
  auto backend = make_cpu_backend(2);
  const auto a = random_vector(c.m * c.k, 1), b = random_vector(c.k * c.n, 2);
  const auto bias = random_vector(c.n, 3);
  auto out = random_vector(c.m * c.n, 4);
  const auto before = out;
  backend->gemm({.m = c.m,
                 .n = c.n,
                 .k = c.k,
                 .a = a.data(),
                 .trans_a = c.trans_a,
                 .b = b.data(),
                 .trans_b = c.trans_b,
                 .c = out.data(),
                 .bias = c.bias ? bias.data() : nullptr,
                 .activation = c.activation,
                 .accumulate = c.accumulate});
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = c.trans_a ? a[p * c.m + i] : a[i * c.k + p];
        const double bv = c.trans_b ? b[j * c.k + p] : b[p * c.n + j];
        s += av * bv;
      }
      if (c.bias) s += bias[j];
      s = act(c.activation, s);
      if (c.accumulate) s += before[i * c.n + j];
      ASSERT_NEAR(out[i * c.n + j], s, 1e-4 * (1 + std::abs(s))) << "at " << i << "," << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmTest,
    ::testing::Values(GemmCase{5, 7, 3, false, false, false, ActivationKind::linear, false},
                      GemmCase{5, 7, 3, true, false, false, ActivationKind::linear, false},
                      GemmCase{5, 7, 3, false, true, false, ActivationKind::linear, false},
                      GemmCase{5, 7, 3, true, true, false, ActivationKind::linear, false},
                      GemmCase{33, 17, 65, false, false, true, ActivationKind::relu, false},
                      GemmCase{33, 17, 65, false, false, true, ActivationKind::sigmoid, false},
                      GemmCase{33, 17, 65, false, false, true, ActivationKind::tanh, false},
                      GemmCase{64, 40, 8, true, false, false, ActivationKind::linear, true},
                      GemmCase{8, 40, 64, false, true, false, ActivationKind::linear, true},
                      GemmCase{1, 1, 1, false, false, true, ActivationKind::linear, false}));

TEST(CpuBackend, GemmRejectsAccumulateWithEpilogue) {
  auto backend = make_cpu_backend(1);
  std::vector<float> a(4), b(4), c(4), bias(2);
  EXPECT_THROW(backend->gemm({.m = 2,
                              .n = 2,
                              .k = 2,
                              .a = a.data(),
                              .b = b.data(),
                              .c = c.data(),
                              .bias = bias.data(),
                              .accumulate = true}),
               std::exception);
}

// Small, and just below the parallel grain (127 x 256), on the calling thread's vectorized
// loop, as simd_for runs it below its grain; past the grain on 2 threads (the parallel loop)
// and on 1 thread (the calling thread's loop again).
struct ActivationCase {
  int threads;
  int64_t rows, cols;
};

class CpuBackendActivations : public ::testing::TestWithParam<ActivationCase> {};

INSTANTIATE_TEST_SUITE_P(Sizes, CpuBackendActivations,
                         ::testing::Values(ActivationCase{2, 3, 5}, ActivationCase{2, 160, 256},
                                           ActivationCase{1, 160, 256},
                                           ActivationCase{2, 127, 256}));

TEST_P(CpuBackendActivations, ForwardAndBackward) {
  const auto [threads, rows, cols] = GetParam();
  auto backend = make_cpu_backend(threads);
  const auto x = random_vector(rows * cols, 5), dy = random_vector(rows * cols, 6);
  for (ActivationKind a : {ActivationKind::linear, ActivationKind::relu, ActivationKind::sigmoid,
                           ActivationKind::tanh, ActivationKind::softmax}) {
    std::vector<float> y(rows * cols), dx(rows * cols);
    backend->activation_forward(a, x.data(), y.data(), rows, cols);
    backend->activation_backward(a, y.data(), dy.data(), dx.data(), rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      double max = -1e30, sum = 0;
      for (int64_t c = 0; c < cols; ++c) max = std::max(max, double(x[r * cols + c]));
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - max);
      double dot = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        const double yi = a == ActivationKind::softmax ? std::exp(x[i] - max) / sum : act(a, x[i]);
        EXPECT_NEAR(y[i], yi, 1e-6) << activation_name(a);
        dot += dy[i] * yi;
      }
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        const double yi = y[i];
        double d = 0;
        switch (a) {
          case ActivationKind::linear:
            d = dy[i];
            break;
          case ActivationKind::relu:
            d = x[i] > 0 ? dy[i] : 0;
            break;
          case ActivationKind::sigmoid:
            d = dy[i] * yi * (1 - yi);
            break;
          case ActivationKind::tanh:
            d = dy[i] * (1 - yi * yi);
            break;
          case ActivationKind::softmax:
            d = yi * (dy[i] - dot);
            break;
        }
        EXPECT_NEAR(dx[i], d, 1e-6) << activation_name(a);
      }
    }
  }
}

TEST(CpuBackend, BiasGradSumsRowsAndAccumulates) {
  auto backend = make_cpu_backend(2);
  const int64_t rows = 300, cols = 1000;  // several column blocks, parallel path
  const auto dy = random_vector(rows * cols, 7);
  std::vector<float> db(cols, 1.f);
  backend->bias_grad(dy.data(), db.data(), rows, cols, false);
  std::vector<float> acc(cols, 1.f);
  backend->bias_grad(dy.data(), acc.data(), rows, cols, true);
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) s += dy[r * cols + c];
    EXPECT_NEAR(db[c], s, 1e-3);
    EXPECT_NEAR(acc[c], s + 1, 1e-3);
  }
}

TEST(Activation, ParseNamesAndRejectUnknown) {
  EXPECT_EQ(parse_activation("relu", "t"), ActivationKind::relu);
  EXPECT_EQ(parse_activation("", "t"), ActivationKind::linear);
  EXPECT_THROW(parse_activation("swish", "layer 'd'"), std::exception);
}

}  // namespace
}  // namespace tandem
