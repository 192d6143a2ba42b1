// Data-parallel training reproduces one device: N replicas (mirrored and host) with the
// same global batch and seed give the same weights after 20 steps (within 1e-5 relative),
// and, in deterministic mode, bitwise the same weights for 1, 2 and 4 devices -- for an MLP
// and for a small convnet (Conv2D, pooling, Dropout, Dense); and for a convnet with
// synchronized BatchNormalization, whose statistics span the global batch on any number of
// devices (without synchronization each device's own rows give different weights).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "test_util.h"

namespace tandem {
namespace {

constexpr int64_t kBatch = 24;
constexpr int kSteps = 20;

struct TrainedRun {
  std::vector<Tensor> weights;
  History history;
};

enum class Net { mlp, convnet, sync_bn, local_bn };

// The model each run trains, from the global seed; inputs (12) or (6, 6, 2).
Model make_model(Net net) {
  if (net == Net::sync_bn || net == Net::local_bn) {
    const BatchNormalizationOptions bn{.momentum = 0.9, .synchronized = net == Net::sync_bn};
    auto in = Input({6, 6, 2});
    auto x = Conv2D(4, 3, "linear", {.padding = "same", .use_bias = false})(in);
    x = Activation("relu")(BatchNormalization(bn)(x));  // (6, 6, 4)
    x = MaxPooling2D(2)(x);                             // (3, 3, 4)
    x = BatchNormalization(bn)(Dense(8, "tanh")(Flatten()(x)));
    return Model(in, Dense(4, "softmax")(x));
  }
  if (net == Net::mlp) {
    auto in = Input({12});
    auto x = Dense(32, "relu")(in);
    x = Dropout(0.25)(x);  // masks are per sample, so they do not depend on the split
    x = Dense(16, "tanh")(x);
    return Model(in, Dense(4, "softmax")(x));
  }
  auto in = Input({6, 6, 2});
  auto x = Conv2D(4, 3, "relu", {.padding = "same"})(in);  // (6, 6, 4)
  x = MaxPooling2D(2)(x);                                  // (3, 3, 4)
  x = Conv2D(6, 2, "tanh")(x);                             // (2, 2, 6)
  x = Dropout(0.25)(Flatten()(x));
  return Model(in, Dense(4, "softmax")(x));
}

// 20 steps: 19 full batches and a last one of 19 samples (uneven across 2, 3, 4 devices).
TrainedRun train(int devices, const std::string& strategy, bool deterministic, const Optimizer& opt,
                 const std::string& reducer = "sharded", bool shared_parameters = true,
                 Net net = Net::mlp, int64_t last_batch = kBatch - 5) {
  set_random_seed(17);
  auto toy = test::make_toy((kSteps - 1) * kBatch + last_batch, net == Net::mlp ? 12 : 72, 4, 3);
  const Tensor x = net == Net::mlp ? toy.x : toy.x.reshape({-1, 6, 6, 2});
  Model model = make_model(net);
  model.compile(opt, "categorical_crossentropy", {"accuracy"});
  TrainedRun run;
  run.history = model.fit(x, toy.y_onehot,
                          {.batch_size = kBatch,
                           .epochs = 1,
                           .verbose = 0,
                           .seed = 5,
                           .devices = devices,
                           .strategy = strategy,
                           .threads_per_device = 1,
                           .deterministic = deterministic,
                           .bucket_bytes = 1024,
                           .reducer = reducer,
                           .shared_parameters = shared_parameters});
  EXPECT_EQ(model.run_times().train_steps, kSteps);
  run.weights = model.get_weights();
  return run;
}

// max |a - b| / max |b| over each tensor.
double max_relative_error(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    double scale = 1e-12;
    for (float v : b[t].values()) scale = std::max(scale, double(std::abs(v)));
    worst = std::max(worst, test::max_abs_diff(a[t], b[t]) / scale);
  }
  return worst;
}

// (strategy, devices, net): "allreduce" is mirrored with the all-reduce reducer, "copies"
// is mirrored with a parameter copy per device.
class Equivalence : public ::testing::TestWithParam<std::tuple<std::string, int, Net>> {};

TEST_P(Equivalence, WeightsMatchOneDeviceWithinRounding) {
  const auto [name, devices, net] = GetParam();
  const std::string strategy = name == "host" ? "host" : "mirrored";
  const std::string reducer = name == "allreduce" ? "allreduce" : "sharded";
  // SGD with momentum: rounding differences stay rounding-sized. (RMSprop's g / sqrt(v)
  // turns a near-zero gradient's rounding into a full-size step of either sign, so two
  // correct runs drift apart; deterministic mode is the answer there, tested below.)
  const Optimizer opt = SGD(0.1, 0.9);
  const TrainedRun one = train(1, "mirrored", false, opt, "sharded", true, net);
  const TrainedRun many = train(devices, strategy, false, opt, reducer, name != "copies", net);
  const double error = max_relative_error(many.weights, one.weights);
  EXPECT_LE(error, 1e-5) << strategy << " with " << devices << " devices";
  EXPECT_NEAR(many.history.history.at("loss")[0], one.history.history.at("loss")[0], 1e-5);
  EXPECT_NEAR(many.history.history.at("accuracy")[0], one.history.history.at("accuracy")[0], 1e-9);
  // The run trained: weights moved away from their start by much more than the tolerance.
  set_random_seed(17);
  EXPECT_GT(max_relative_error(one.weights, make_model(net).get_weights()), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, Equivalence,
    ::testing::Combine(::testing::Values("mirrored", "copies", "allreduce", "host"),
                       ::testing::Values(1, 2, 3, 4),
                       ::testing::Values(Net::mlp, Net::convnet, Net::sync_bn)),
    [](const auto& info) {
      const Net net = std::get<2>(info.param);
      return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) +
             (net == Net::mlp       ? ""
              : net == Net::convnet ? "_convnet"
                                    : "_sync_bn");
    });

// The tests above can fail: each device's own statistics (synchronized=False) give weights
// far from one device's.
TEST(SynchronizedBatchNormalization, WithoutItDevicesDiffer) {
  const Optimizer opt = SGD(0.1, 0.9);
  const TrainedRun one = train(1, "mirrored", false, opt, "sharded", true, Net::local_bn);
  const TrainedRun two = train(2, "mirrored", false, opt, "sharded", true, Net::local_bn);
  EXPECT_GT(max_relative_error(two.weights, one.weights), 1e-3);
}

// A last batch of 2 rows on 4 devices leaves two devices without rows; they still take part
// in every sum (else the others would wait for them forever).
TEST(SynchronizedBatchNormalization, DevicesWithoutRowsTakePart) {
  const Optimizer opt = SGD(0.1, 0.9);
  const TrainedRun one = train(1, "mirrored", false, opt, "sharded", true, Net::sync_bn, 2);
  for (const std::string strategy : {"mirrored", "host"}) {
    const TrainedRun four = train(4, strategy, false, opt, "sharded", true, Net::sync_bn, 2);
    EXPECT_LE(max_relative_error(four.weights, one.weights), 1e-5) << strategy;
  }
}

TEST(SynchronizedBatchNormalization, DeterministicModeRefusesIt) {
  test::expect_error<ConfigError>(
      [] { train(2, "mirrored", true, SGD(0.1), "sharded", true, Net::sync_bn); },
      {"deterministic", "synchronized=True"});
}

TEST(Deterministic, BitwiseIdenticalForOneTwoAndFourDevices) {
  for (const Net net : {Net::mlp, Net::convnet}) {
    for (const Optimizer& opt : {RMSprop(0.01), Adam(0.01)}) {
      const TrainedRun one = train(1, "mirrored", true, opt, "sharded", true, net);
      for (auto [devices, reducer] : {std::pair{2, "sharded"}, std::pair{4, "sharded"},
                                      std::pair{2, "allreduce"}, std::pair{4, "allreduce"}}) {
        const TrainedRun many = train(devices, "mirrored", true, opt, reducer, true, net);
        for (size_t t = 0; t < one.weights.size(); ++t) {
          ASSERT_EQ(std::memcmp(one.weights[t].data(), many.weights[t].data(),
                                one.weights[t].size() * sizeof(float)),
                    0)
              << opt.name << ": weight " << t << " differs with " << devices << " devices, "
              << reducer << " reducer" << (net == Net::convnet ? ", convnet" : "");
        }
        EXPECT_EQ(one.history.history.at("loss")[0], many.history.history.at("loss")[0]);
      }
    }
  }
}

TEST(Deterministic, RejectsDeviceCountsThatDoNotDivideTheShards) {
  EXPECT_THROW(train(3, "mirrored", true, SGD()), ConfigError);
  EXPECT_THROW(train(2, "host", true, SGD()), ConfigError);
}

TEST(Strategies, UnknownStrategyReducerAndBadDeviceCount) {
  test::expect_error<ConfigError>([] { train(2, "mirrored", false, SGD(), "gossip"); },
                                  {"gossip", "allreduce"});
  test::expect_error<ConfigError>([] { train(2, "ring", false, SGD()); }, {"ring", "mirrored"});
  test::expect_error<ConfigError>([] { train(0, "mirrored", false, SGD()); }, {"devices"});
}

TEST(Strategies, TerminateOnNaNStopsEveryReplicaAndTheModelStaysUsable) {
  // A NaN target (on device 1's half of the second batch) makes TerminateOnNaN stop every
  // replica after that step, cleanly. (An exception thrown inside one device is covered
  // by DeviceGroup.AnExceptionOnOneDeviceStopsAllAndIsReported.)
  set_random_seed(3);
  auto toy = test::make_toy(96, 12, 4, 4);
  toy.y_onehot[50 * 4] = std::nanf("");
  auto in = Input({12});
  Model model(in, Dense(4, "softmax")(Dense(8, "relu")(in)));
  model.compile("sgd", "categorical_crossentropy");
  testing::internal::CaptureStdout();
  History h = model.fit(toy.x, toy.y_onehot,
                        {.batch_size = 32,
                         .epochs = 3,
                         .verbose = 0,
                         .shuffle = false,
                         .callbacks = {TerminateOnNaN()},
                         .devices = 2});
  testing::internal::GetCapturedStdout();
  EXPECT_EQ(h.epoch.size(), 1u);
  EXPECT_EQ(model.run_times().train_steps, 2);
  // A bad configuration is reported before any device starts, and the next fit works.
  model.compile("sgd", "sparse_categorical_crossentropy");
  Tensor labels({96});
  EXPECT_THROW(
      model.fit(toy.x, labels,
                {.batch_size = 32, .epochs = 1, .verbose = 0, .devices = 2, .strategy = "bogus"}),
      ConfigError);
  model.fit(toy.x, labels, {.batch_size = 32, .epochs = 1, .verbose = 0, .devices = 2});
}

}  // namespace
}  // namespace tandem
