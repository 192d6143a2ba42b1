// BatchNormalization through the public API: Keras's weights and summary, the moving
// statistics after a step (one device, and several: the devices' statistics averaged),
// inference with the moving statistics, and deterministic mode bitwise across devices.
// (Its gradients are checked against f64 finite differences in gradient_check_test.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "test_util.h"

namespace tandem {
namespace {

using test::expect_error;

// Per-column mean and biased variance of rows [r0, r1) of x (n, c).
std::pair<std::vector<double>, std::vector<double>> column_stats(const Tensor& x, int64_t r0,
                                                                 int64_t r1) {
  const int64_t c = x.shape()[1];
  std::vector<double> mean(c, 0.0), var(c, 0.0);
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t r = r0; r < r1; ++r) mean[k] += x[r * c + k];
    mean[k] /= static_cast<double>(r1 - r0);
    for (int64_t r = r0; r < r1; ++r) var[k] += std::pow(x[r * c + k] - mean[k], 2);
    var[k] /= static_cast<double>(r1 - r0);
  }
  return {mean, var};
}

Model bn_model(const std::string& name = "bn") {
  auto in = Input({5});
  return Model(in, Dense(3, "softmax")(BatchNormalization({.name = name})(in)));
}

TEST(BatchNormalization, KerasWeightsAndSummary) {
  Model m = bn_model();
  const auto w = m.get_weights();
  ASSERT_EQ(w.size(), 6u);  // gamma, beta, moving_mean, moving_variance, kernel, bias
  for (int i = 0; i < 4; ++i) EXPECT_EQ(w[i].shape(), (Shape{5}));
  EXPECT_EQ(w[0][0], 1.f);  // gamma ones
  EXPECT_EQ(w[1][0], 0.f);  // beta zeros
  EXPECT_EQ(w[2][0], 0.f);  // moving_mean zeros
  EXPECT_EQ(w[3][0], 1.f);  // moving_variance ones
  const std::string s = m.summary_string();
  EXPECT_NE(s.find("Total params: 38"), std::string::npos) << s;
  EXPECT_NE(s.find("Trainable params: 28"), std::string::npos) << s;
  EXPECT_NE(s.find("Non-trainable params: 10"), std::string::npos) << s;
  auto in = Input({4, 4, 3});
  Model conv(
      in, BatchNormalization({.center = false})(Conv2D(2, 3, "linear", {.use_bias = false})(in)));
  EXPECT_EQ(conv.get_weights().size(), 4u);  // kernel, gamma, moving_mean, moving_variance
}

// One training step: the moving statistics move 1 - momentum of the way to the batch's.
// With learning rate 0 nothing else changes, so this isolates their update.
class MovingStatistics : public ::testing::TestWithParam<std::pair<std::string, int>> {};

TEST_P(MovingStatistics, AfterOneStepAverageTheDevicesBatchStatistics) {
  const auto [strategy, devices] = GetParam();
  auto toy = test::make_toy(8, 5, 3, 9);
  for (float& v : toy.x.values()) v = 2 * v + 0.5f;  // away from the initial statistics
  Model m = bn_model();
  m.compile(SGD(0.0), "categorical_crossentropy");
  m.fit(toy.x, toy.y_onehot,
        {.batch_size = 8,
         .epochs = 1,
         .verbose = 0,
         .shuffle = false,
         .devices = devices,
         .strategy = strategy,
         .threads_per_device = 1});
  const auto w = m.get_weights();
  // Each device normalizes with its own rows' statistics (8 / devices each); the moving
  // statistics take the mean of the devices' (what Keras's MirroredStrategy does).
  std::vector<double> mean(5, 0.0), var(5, 0.0);
  const int64_t rows = 8 / devices;
  for (int d = 0; d < devices; ++d) {
    const auto [m_d, v_d] = column_stats(toy.x, d * rows, (d + 1) * rows);
    for (int k = 0; k < 5; ++k) mean[k] += m_d[k] / devices, var[k] += v_d[k] / devices;
  }
  for (int k = 0; k < 5; ++k) {
    EXPECT_NEAR(w[2][k], 0.01 * mean[k], 1e-6) << "moving_mean " << k;
    EXPECT_NEAR(w[3][k], 0.99 + 0.01 * var[k], 1e-6) << "moving_variance " << k;
    EXPECT_EQ(w[0][k], 1.f);  // trainable weights did not move at learning rate 0
  }
  if (devices == 2) {  // the two halves differ, so this is not the global statistics
    const auto [gm, gv] = column_stats(toy.x, 0, 8);
    double gap = 0;
    for (int k = 0; k < 5; ++k) gap = std::max(gap, std::abs(0.01 * gv[k] - 0.01 * var[k]));
    EXPECT_GT(gap, 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, MovingStatistics,
    ::testing::Values(std::pair{std::string("mirrored"), 1}, std::pair{std::string("mirrored"), 2},
                      std::pair{std::string("mirrored"), 4}, std::pair{std::string("host"), 2}),
    [](const auto& info) { return info.param.first + "_" + std::to_string(info.param.second); });

TEST(BatchNormalization, PredictUsesTheMovingStatistics) {
  auto in = Input({2});
  Model m(in, BatchNormalization({.epsilon = 0.01})(in));
  m.set_weights({Tensor({2}, {2.f, 0.5f}), Tensor({2}, {0.1f, -1.f}), Tensor({2}, {1.f, -3.f}),
                 Tensor({2}, {4.f, 0.25f})});
  const Tensor y = m.predict(Tensor({1, 2}, {3.f, -1.f}));
  EXPECT_NEAR(y[0], 2 * (3 - 1) / std::sqrt(4.01) + 0.1, 1e-6);
  EXPECT_NEAR(y[1], 0.5 * (-1 + 3) / std::sqrt(0.26) - 1, 1e-6);
}

TEST(BatchNormalization, BadArgumentsAndSharing) {
  expect_error<ConfigError>([] { BatchNormalization({.axis = 0}); }, {"axis", "-1"});
  // A positive axis counts the batch axis, as Keras 2's files write it: only the last works.
  expect_error<ConfigError>([] { BatchNormalization({.axis = 1})(Input({4, 4, 3})); },
                            {"axis 1", "not the last axis"});
  EXPECT_EQ(BatchNormalization({.axis = 3})(Input({4, 4, 3})).shape(), (Shape{4, 4, 3}));
  expect_error<ConfigError>([] { BatchNormalization({.momentum = 1.0}); }, {"momentum"});
  expect_error<ConfigError>([] { BatchNormalization({.epsilon = 0, .name = "b"}); },
                            {"BatchNormalization 'b'", "epsilon"});
  auto in = Input({4});
  auto bn = BatchNormalization({.name = "shared"});
  Model m(in, bn(Dense(4)(bn(in))));
  expect_error<ConfigError>([&] { m.compile("sgd", "mse"); }, {"'shared'", "2 times"});
}

// Deterministic mode: a conv net with BatchNormalization gives bitwise the same weights
// (moving statistics included) on 1, 2 and 4 devices.
TEST(BatchNormalization, DeterministicBitwiseAcrossDevices) {
  auto toy = test::make_toy(96, 72, 4, 5);
  const Tensor x = toy.x.reshape({-1, 6, 6, 2});
  std::vector<std::vector<Tensor>> runs;
  for (int devices : {1, 2, 4}) {
    set_random_seed(21);
    auto in = Input({6, 6, 2});
    auto h = Conv2D(4, 3, "linear", {.padding = "same", .use_bias = false})(in);
    h = Activation("relu")(BatchNormalization()(h));
    h = BatchNormalization()(Dense(8, "tanh")(Flatten()(MaxPooling2D(2)(h))));
    Model m(in, Dense(4, "softmax")(h));
    m.compile(Adam(0.01), "categorical_crossentropy");
    m.fit(x, toy.y_onehot,
          {.batch_size = 16,
           .epochs = 2,
           .verbose = 0,
           .seed = 3,
           .devices = devices,
           .threads_per_device = 1,
           .deterministic = true});
    runs.push_back(m.get_weights());
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    for (size_t t = 0; t < runs[0].size(); ++t) {
      ASSERT_EQ(std::memcmp(runs[0][t].data(), runs[r][t].data(), runs[0][t].size() * 4), 0)
          << "weight " << t << " differs with " << (r == 1 ? 2 : 4) << " devices";
    }
  }
  EXPECT_NE(runs[0][3][0], 1.f);  // moving_variance moved
}

}  // namespace
}  // namespace tandem
