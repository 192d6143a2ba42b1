// Bad input gets a typed error whose message names what is wrong and where.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tandem {
namespace {

using test::expect_error;

Model mlp() {
  auto in = Input({4});
  return Model(in, Dense(3, "softmax")(Dense(8, "relu")(in)));
}

TEST(Errors, UnknownNames) {
  expect_error<ConfigError>([] { Dense(3, "swish"); }, {"swish", "relu"});
  expect_error<ConfigError>([] { Activation("gelu", "act"); }, {"gelu", "act"});
  Model m = mlp();
  expect_error<ConfigError>([&] { m.compile("adagrad", "mse"); }, {"adagrad", "rmsprop"});
  expect_error<ConfigError>([&] { m.compile("sgd", "hinge"); }, {"hinge", "mse"});
  expect_error<ConfigError>([&] { m.compile("sgd", "mse", {"auc"}); }, {"auc"});
  auto in = Input({4});
  expect_error<ConfigError>(
      [&] { Model(in, Dense(2, "relu", {.kernel_initializer = "lecun_magic", .name = "d"})(in)); },
      {"lecun_magic", "'d'"});
}

TEST(Errors, BadLayerArguments) {
  expect_error<ConfigError>([] { Dense(0); }, {"units"});
  expect_error<ConfigError>([] { Dropout(1.0); }, {"rate"});
  expect_error<ShapeError>([] { Input({0}); }, {"dimension"});
  auto a = Input({4});
  auto b = Dense(5)(a);
  expect_error<ShapeError>([&] { Add("sum")({a, b}); }, {"'sum'", "(4,)", "(5,)"});
  expect_error<ShapeError>([&] { Concatenate(3)({a, b}); }, {"axis"});
}

TEST(Errors, FitBeforeCompileAndBadOptions) {
  Model m = mlp();
  auto toy = test::make_toy(10, 4, 3, 1);
  expect_error<ConfigError>([&] { m.fit(toy.x, toy.y_onehot); }, {"compile"});
  EXPECT_EQ(m.loss(), "");
  m.compile("sgd", "mse");
  EXPECT_EQ(m.loss(), "mean_squared_error");
  m.compile("sgd", "categorical_crossentropy");
  expect_error<ConfigError>([&] { m.fit(toy.x, toy.y_onehot, {.batch_size = 0}); },
                            {"batch_size", "0"});
  expect_error<ConfigError>([&] { m.fit(toy.x, toy.y_onehot, {.batch_size = -3}); },
                            {"batch_size"});
  expect_error<ConfigError>([&] { m.predict(toy.x, {.batch_size = 0}); }, {"batch_size"});
  expect_error<ConfigError>([&] { m.evaluate(toy.x, toy.y_onehot, {.batch_size = 0}); },
                            {"batch_size"});
  expect_error<ConfigError>(
      [&] { m.fit(toy.x, toy.y_onehot, {.epochs = 1, .validation_split = 1.5}); },
      {"validation_split"});
}

TEST(Errors, DataShapeMismatch) {
  Model m = mlp();
  m.compile("sgd", "categorical_crossentropy");
  auto toy = test::make_toy(10, 4, 3, 1);
  Tensor wide({10, 5});
  expect_error<ShapeError>([&] { m.fit(wide, toy.y_onehot); }, {"(None, 4)", "(5,)"});
  expect_error<ShapeError>([&] { m.predict(wide); }, {"(5,)"});
  Tensor cube({10, 2, 2});
  expect_error<ShapeError>([&] { m.predict(cube); }, {"reshape"});
  Tensor fewer({9, 3});
  expect_error<ShapeError>([&] { m.fit(toy.x, fewer); }, {"10 samples", "9"});
  // Integer labels given to categorical cross-entropy: a hint to use to_categorical.
  expect_error<ShapeError>([&] { m.fit(toy.x, toy.y_labels); }, {"to_categorical"});
  m.compile("sgd", "sparse_categorical_crossentropy");
  Tensor bad_labels({10});
  bad_labels[7] = 3;
  expect_error<ShapeError>([&] { m.fit(toy.x, bad_labels); }, {"sample 7", "[0, 3)"});
}

TEST(Errors, GraphProblems) {
  auto a = Input({4});
  auto b = Input({4});
  auto out = Add()({a, b});
  expect_error<ConfigError>([&] { Model(a, out); }, {"Input"});
  auto x = Dense(2, "linear", {.name = "same"})(a);
  auto y = Dense(2, "linear", {.name = "same"})(x);
  expect_error<ConfigError>([&] { Model(a, y); }, {"'same'"});
  expect_error<ConfigError>([&] { Model(Dense(2)(a), y); }, {"Input"});
  Sequential empty;
  expect_error<ConfigError>([&] { empty.summary_string(); }, {"input"});
  expect_error<ConfigError>(
      [] {
        Node n;
        n.shape();
      },
      {"empty node"});
}

}  // namespace
}  // namespace tandem
