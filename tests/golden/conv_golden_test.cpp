// Golden runs of a convnet with BatchNormalization against Keras 3: each
// tests/golden/conv/<case>.json is 10 train_on_batch steps dumped by
// scripts/golden/make_conv_golden.py (model and data described there). tandem replays them
// through the public API: set_weights(initial), train_on_batch per batch, then get_weights
// (moving statistics included) and predict (inference: moving statistics).
//
// Tolerances (float32 on both sides; the reductions differ in order):
//   step losses     |a - b| <= 1e-5 * |b|
//   final weights   |a - b| <= 1e-5 * max(|b|, 1)  (moving statistics included)
//   predict(x[:8])  |a - b| <= 1e-5 * max(|b|, 1)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tandem/tandem.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kTol = 1e-5;

json read_case(const std::string& name) {
  const fs::path path = fs::path(__FILE__).parent_path() / "conv" / (name + ".json");
  std::ifstream in(path);
  if (!in) throw IoError(path.string(), "cannot open golden file");
  return json::parse(in);
}

// The model make_conv_golden.py builds (conv_bias: whether the first Conv2D has a bias).
Model conv_bn_model(bool conv_bias) {
  auto in = Input({8, 8, 2});
  auto x = Conv2D(4, 3, "linear", {.padding = "same", .use_bias = conv_bias})(in);
  x = Activation("relu")(BatchNormalization()(x));
  x = MaxPooling2D(2)(x);
  x = Conv2D(6, 2, "linear", {.use_bias = false})(x);
  x = Activation("tanh")(BatchNormalization({.center = false})(x));
  return Model(in, Dense(3, "softmax")(Flatten()(x)));
}

Tensor tensor_of(const json& values, Shape shape) {
  std::vector<float> v;
  for (const json& e : values) v.push_back(static_cast<float>(e.get<double>()));
  return Tensor(std::move(shape), std::move(v));
}

std::vector<Tensor> weights_of(const json& c, const char* key) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.at(key).size(); ++i) {
    out.push_back(tensor_of(c.at(key)[i], c.at("weight_shapes")[i].get<Shape>()));
  }
  return out;
}

// max |a - b| / max(|b|, 1)
double error_of(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(double(b[i])), 1.0));
  }
  return worst;
}

class ConvGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvGolden, MatchesKeras) {
  set_num_threads(1);
  const json c = read_case(GetParam());
  const json& o = c.at("optimizer");
  const double lr = o.at("learning_rate").get<double>();
  const Optimizer optimizer =
      o.at("name") == "adam" ? Adam(lr, 0.9, 0.999, 1e-7) : SGD(lr, o.at("momentum").get<double>());
  Model model = conv_bn_model(c.at("conv_bias").get<bool>());
  model.compile(optimizer, "categorical_crossentropy");
  model.set_weights(weights_of(c, "initial_weights"));

  const auto batch = c.at("batch_size").get<int64_t>(), steps = c.at("steps").get<int64_t>();
  const Tensor x = tensor_of(c.at("x"), {steps * batch, 8, 8, 2});
  const Tensor y = tensor_of(c.at("y"), {steps * batch, 3});
  double worst_loss = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const auto slice = [&](const Tensor& t) {
      Shape shape = t.shape();
      shape[0] = batch;
      const int64_t row = t.size() / t.shape()[0];
      return Tensor(
          shape, std::vector<float>(t.data() + s * batch * row, t.data() + (s + 1) * batch * row));
    };
    const double loss = model.train_on_batch(slice(x), slice(y)).at("loss");
    const double expected = c.at("step_losses")[s].get<double>();
    worst_loss = std::max(worst_loss, std::abs(loss - expected) / std::abs(expected));
  }
  EXPECT_LE(worst_loss, kTol);

  const std::vector<Tensor> expected = weights_of(c, "final_weights");
  const std::vector<Tensor> actual = model.get_weights();
  ASSERT_EQ(actual.size(), expected.size());
  double worst_weight = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = error_of(actual[i], expected[i]);
    EXPECT_LE(e, kTol) << "weight " << i << " " << shape_to_string(expected[i].shape());
    worst_weight = std::max(worst_weight, e);
  }
  // The first moving variance moved, so comparing it tests its update, not its start.
  const size_t moving_variance = c.at("conv_bias").get<bool>() ? 5 : 4;
  EXPECT_GT(error_of(actual[moving_variance], weights_of(c, "initial_weights")[moving_variance]),
            1e-3);
  const Tensor x8(Shape{8, 8, 8, 2}, std::vector<float>(x.data(), x.data() + 8 * 128));
  const double worst_predict = error_of(model.predict(x8), tensor_of(c.at("predict"), {8, 3}));
  EXPECT_LE(worst_predict, kTol);
  std::printf("  %s: loss err %.1e, weight err %.1e, predict err %.1e\n", GetParam().c_str(),
              worst_loss, worst_weight, worst_predict);
}

INSTANTIATE_TEST_SUITE_P(Keras, ConvGolden,
                         ::testing::Values("conv_bn_adam", "conv_bn_sgd_momentum"));

}  // namespace
}  // namespace tandem
