// Conv2D, pooling, ZeroPadding2D, Reshape (and BatchNormalization in a saved model) through
// the public API: Keras's names and
// weight shapes, saved and loaded models, and the errors bad shapes and arguments give.
// (Their gradients are checked against f64 finite differences in gradient_check_test.)
#include <gtest/gtest.h>

#include "test_util.h"

namespace tandem {
namespace {

using test::expect_error;

// Every image layer once: (8, 8, 2) -> ... -> (3,) softmax.
Model image_model() {
  auto in = Input({8, 8, 2});
  auto x = ZeroPadding2D(Padding2D(1, 0, 0, 1))(in);                                 // (9, 9, 2)
  x = Conv2D(4, 3, "relu", {.strides = 2, .padding = "same"})(x);                    // (5, 5, 4)
  auto a = MaxPooling2D(2, {.strides = 1})(x);                                       // (4, 4, 4)
  auto b = AveragePooling2D(3, {.strides = Size2(1, 1), .padding = "same"})(x);      // (5, 5, 4)
  b = Conv2D(4, {2, 2}, "tanh", {.dilation_rate = 1, .use_bias = false})(b);         // (4, 4, 4)
  x = Concatenate()({Add()({a, b}), a});                                             // (4, 4, 8)
  x = Conv2D(6, 3, "linear", {.padding = "same", .dilation_rate = Size2(1, 2)})(x);  // (4, 4, 6)
  x = Reshape({2, -1, 1})(GlobalAveragePooling2D()(Reshape({2, 8, 6})(x)));          // (2, 3, 1)
  return Model(in, Dense(3, "softmax")(Flatten()(x)));
}

TEST(ConvLayers, KerasNamesAndWeightShapes) {
  auto in = Input({28, 28, 1});
  auto x = Conv2D(32, 3, "relu")(in);
  x = MaxPooling2D()(x);
  x = Conv2D(64, {3, 3}, "relu")(x);
  x = AveragePooling2D(2)(x);
  x = ZeroPadding2D()(x);
  x = GlobalAveragePooling2D()(x);
  Model m(in, Dense(10, "softmax")(x));
  const std::string summary = m.summary_string();
  for (const char* name : {"conv2d ", "conv2d_1 ", "max_pooling2d ", "average_pooling2d ",
                           "zero_padding2d ", "global_average_pooling2d "}) {
    EXPECT_NE(summary.find(name), std::string::npos) << name << " in\n" << summary;
  }
  const std::vector<Tensor> w = m.get_weights();
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0].shape(), (Shape{3, 3, 1, 32}));  // Keras's (kh, kw, in, out)
  EXPECT_EQ(w[1].shape(), (Shape{32}));
  EXPECT_EQ(w[2].shape(), (Shape{3, 3, 32, 64}));
  EXPECT_EQ(m.count_params(), 320 + 18496 + 650);
  // glorot_uniform with Keras's conv fans (9 * 1 in, 9 * 32 out): |w| <= sqrt(6 / 297).
  float largest = 0;
  for (float v : w[0].values()) largest = std::max(largest, std::abs(v));
  EXPECT_LE(largest, std::sqrt(6.f / 297.f));
  EXPECT_GT(largest, 0.8f * std::sqrt(6.f / 297.f));
}

TEST(ConvLayers, SavedModelLoadsWithTheSameConfigAndPredictions) {
  test::TempDir dir;
  set_random_seed(3);
  Model a = image_model();
  a.compile(Adam(0.01), "categorical_crossentropy");
  auto toy = test::make_toy(40, 128, 3, 2);
  const Tensor x = toy.x.reshape({-1, 8, 8, 2});
  a.fit(x, toy.y_onehot, {.batch_size = 8, .epochs = 1, .verbose = 0, .seed = 1});
  a.save(dir.file("m.tandem"));
  Model b = Model::load(dir.file("m.tandem"));
  EXPECT_EQ(a.summary_string(), b.summary_string());
  EXPECT_EQ(test::max_abs_diff(a.predict(x), b.predict(x)), 0.0);
  // Training continues identically from the loaded model.
  a.fit(x, toy.y_onehot, {.batch_size = 8, .epochs = 1, .verbose = 0, .seed = 2});
  b.fit(x, toy.y_onehot, {.batch_size = 8, .epochs = 1, .verbose = 0, .seed = 2});
  const auto wa = a.get_weights(), wb = b.get_weights();
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(test::max_abs_diff(wa[i], wb[i]), 0.0);
}

TEST(ConvLayers, BadShapesNameTheLayer) {
  auto flat = Input({784});
  expect_error<ShapeError>([&] { Conv2D(8, 3, "relu", {.name = "c1"})(flat); },
                           {"Conv2D 'c1'", "(height, width, channels)", "(784,)", "reshape"});
  expect_error<ShapeError>(
      [&] {
        MaxPooling2D(2, {.name = "p"})(Input({28, 28}));
      },
      {"MaxPooling2D 'p'", "(28, 28)"});
  expect_error<ShapeError>([&] { GlobalAveragePooling2D("g")(flat); },
                           {"GlobalAveragePooling2D 'g'"});
  expect_error<ShapeError>(
      [&] {
        ZeroPadding2D(1, "z")(Input({2, 2, 2, 2}));
      },
      {"ZeroPadding2D 'z'", "(2, 2, 2, 2)"});
  auto small = Input({3, 3, 1});
  expect_error<ShapeError>([&] { Conv2D(4, 5, "linear", {.name = "big"})(small); },
                           {"Conv2D 'big'", "5x5", "(3, 3, 1)", "valid"});
  expect_error<ShapeError>(
      [&] { Conv2D(4, 2, "linear", {.dilation_rate = 3, .name = "wide"})(small); },
      {"Conv2D 'wide'", "dilation 3x3"});
  expect_error<ShapeError>([&] { AveragePooling2D(4, {.name = "ap"})(small); },
                           {"AveragePooling2D 'ap'", "4x4", "(3, 3, 1)"});
  // "same" always fits: one output per stride.
  EXPECT_EQ(Conv2D(4, 5, "linear", {.padding = "same"})(small).shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(MaxPooling2D(4, {.padding = "same"})(small).shape(), (Shape{1, 1, 1}));
  expect_error<ShapeError>([&] { Reshape({5}, "r")(Input({4})); }, {"Reshape 'r'", "(5,)", "4"});
  expect_error<ShapeError>([&] { Reshape({3, -1}, "r")(Input({4})); }, {"Reshape 'r'", "(3, -1)"});
  // A 4-D model fed flat data: the error names the shape expected and suggests a reshape.
  auto in = Input({4, 4, 1});
  Model m(in, Dense(2, "softmax")(Flatten()(Conv2D(2, 3)(in))));
  m.compile("sgd", "categorical_crossentropy");
  auto toy = test::make_toy(8, 16, 2, 1);
  expect_error<ShapeError>([&] { m.fit(toy.x, toy.y_onehot, {.verbose = 0}); },
                           {"(None, 4, 4, 1)", "(16,)", "reshape"});
  expect_error<ShapeError>([&] { m.predict(toy.x); }, {"(None, 4, 4, 1)"});
}

TEST(ConvLayers, BadArgumentsAreConfigErrors) {
  expect_error<ConfigError>([] { Conv2D(0, 3); }, {"Conv2D", "filters"});
  expect_error<ConfigError>([] { Conv2D(-2, 3, "linear", {.name = "neg"}); },
                            {"Conv2D 'neg'", "filters"});
  expect_error<ConfigError>([] { Conv2D(4, 0); }, {"kernel_size", "(0, 0)"});
  expect_error<ConfigError>([] { Conv2D(4, {3, -1}); }, {"kernel_size", "(3, -1)"});
  expect_error<ConfigError>([] { Conv2D(4, 3, "linear", {.strides = 0}); }, {"strides"});
  expect_error<ConfigError>(
      [] {
        Conv2D(4, 3, "linear", {.dilation_rate = {1, 0}});
      },
      {"dilation_rate"});
  expect_error<ConfigError>([] { Conv2D(4, 3, "linear", {.strides = 2, .dilation_rate = 2}); },
                            {"strides", "dilation_rate"});
  expect_error<ConfigError>([] { Conv2D(4, 3, "linear", {.padding = "full"}); },
                            {"padding", "'full'", "valid", "same"});
  expect_error<ConfigError>([] { Conv2D(4, 3, "swish"); }, {"swish"});
  expect_error<ConfigError>([] { Conv2D(4, int64_t{1} << 20); }, {"kernel_size"});
  expect_error<ConfigError>([] { MaxPooling2D(0); }, {"MaxPooling2D", "pool_size"});
  expect_error<ConfigError>([] { AveragePooling2D(2, {.strides = Size2(0, 1)}); }, {"strides"});
  expect_error<ConfigError>([] { MaxPooling2D(2, {.padding = "causal"}); }, {"'causal'"});
  expect_error<ConfigError>([] { ZeroPadding2D(-1); }, {"ZeroPadding2D", "-1"});
  expect_error<ConfigError>([] { Reshape({2, -1, -1}); }, {"Reshape", "at most one -1"});
  expect_error<ConfigError>([] { Reshape({2, 0}); }, {"Reshape", "(2, 0)"});
  expect_error<ConfigError>([] { Reshape({}); }, {"Reshape", "empty"});
}

// Max pooling in inference (no workspace) and in training give the same outputs; the
// training forward is the one whose gradient the finite-difference check validates.
TEST(ConvLayers, PredictMatchesTheTrainingForward) {
  set_random_seed(5);
  auto in = Input({6, 6, 3});
  Model m(in, Dense(2)(Flatten()(MaxPooling2D(3, {.strides = 2, .padding = "same"})(
                  Conv2D(4, 3, "relu", {.padding = "same"})(in)))));
  m.compile(SGD(0.0), "mse");
  auto toy = test::make_toy(16, 108, 2, 4);
  const Tensor x = toy.x.reshape({-1, 6, 6, 3});
  const Tensor before = m.predict(x);
  // One step at learning rate 0 reports the training forward's loss; it matches predict's.
  const History h = m.fit(x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0});
  const auto scores = m.evaluate(x, toy.y_onehot, {.batch_size = 16, .verbose = 0});
  EXPECT_NEAR(h.history.at("loss")[0], scores.at("loss"), 1e-6);
  EXPECT_EQ(test::max_abs_diff(before, m.predict(x)), 0.0);
}

}  // namespace
}  // namespace tandem
