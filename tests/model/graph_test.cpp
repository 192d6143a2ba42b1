// Graph building: Keras names, parameter layout, summary text, Sequential, branches.
#include <gtest/gtest.h>

#include "model/model_state.h"
#include "test_util.h"

namespace tandem {
namespace {

Model seed_model() {
  auto inputs = Input({784});
  auto x = Dense(4096, "relu")(inputs);
  x = Dense(2048, "relu")(x);
  x = Dense(512, "relu")(x);
  x = Dense(64, "relu")(x);
  return Model(inputs, Dense(10, "softmax")(x));
}

TEST(Graph, SeedModelSummaryMatchesKeras) {
  Model model = seed_model();
  EXPECT_EQ(model.count_params(), 12688586);
  const std::string s = model.summary_string();
  const std::string expected =
      "Model: \"model\"\n"
      "_________________________________________________________________\n"
      " Layer (type)                 Output Shape              Param #  \n"
      "=================================================================\n"
      " input_1 (InputLayer)         [(None, 784)]             0        \n"
      "                                                                 \n"
      " dense (Dense)                (None, 4096)              3215360  \n";
  EXPECT_EQ(s.substr(0, expected.size()), expected);
  EXPECT_NE(s.find(" dense_4 (Dense)              (None, 10)                650"),
            std::string::npos);
  EXPECT_NE(s.find("Total params: 12,688,586\nTrainable params: 12,688,586\n"
                   "Non-trainable params: 0\n"),
            std::string::npos);
}

TEST(Graph, ParametersAreAlignedViewsOfOneBuffer) {
  Model model = seed_model();
  const auto& g = *model.state().graph;
  ASSERT_EQ(g.params().size(), 10u);
  int64_t end = 0;
  for (const auto& layer : g.layers()) {
    EXPECT_EQ(layer.param_offset % detail::kParamAlignFloats, 0);
    EXPECT_GE(layer.param_offset, end);
    // Kernel then bias, back to back from the layer's start: what Dense indexes.
    int64_t at = layer.param_offset;
    for (int p : layer.params) {
      EXPECT_EQ(g.params()[p].offset, at);
      at += g.params()[p].size;
    }
    EXPECT_EQ(at - layer.param_offset, layer.param_count);
    end = at;
  }
  EXPECT_LE(end, g.param_buffer_size());
  EXPECT_EQ(g.param_count(), 12688586);
}

TEST(Graph, SequentialEqualsFunctional) {
  set_random_seed(42);
  Sequential seq({8}, {Dense(6, "tanh"), Dropout(0.1), Dense(3, "softmax")});
  set_random_seed(42);
  auto in = Input({8});
  Model fn(in, Dense(3, "softmax")(Dropout(0.1)(Dense(6, "tanh")(in))), "sequential");
  EXPECT_EQ(seq.summary_string(), fn.summary_string());
  const auto a = seq.get_weights(), b = fn.get_weights();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(test::max_abs_diff(a[i], b[i]), 0.0);
  Sequential later;
  later.add(Input({8}));
  later.add(Dense(2));
  EXPECT_EQ(later.count_params(), 18);
  EXPECT_THROW(later.add(Dense(2)), ConfigError);
}

TEST(Graph, BranchesGetConnectedToColumn) {
  auto in = Input({6});
  auto a = Dense(4, "relu")(in);
  auto b = Dense(4, "tanh")(in);
  auto sum = Add()({a, b});
  auto cat = Concatenate()({sum, a});
  Model model(in, Dense(2, "softmax")(cat));
  EXPECT_EQ(model.output_shape(), (Shape{2}));
  const std::string s = model.summary_string();
  EXPECT_NE(s.find("Connected to"), std::string::npos);
  EXPECT_NE(s.find("[dense], [dense_1]"), std::string::npos) << s;
  EXPECT_NE(s.find("concatenate (Concatenate)"), std::string::npos);
  EXPECT_NE(s.find("(None, 8)"), std::string::npos);
}

TEST(Graph, DenseActsOnLastAxisAndFlatten) {
  auto in = Input({3, 5});
  auto x = Dense(7)(in);
  EXPECT_EQ(x.shape(), (Shape{3, 7}));
  auto f = Flatten()(x);
  EXPECT_EQ(f.shape(), (Shape{21}));
  Model model(in, Dense(2)(f));
  EXPECT_EQ(model.count_params(), 5 * 7 + 7 + 21 * 2 + 2);
}

TEST(Graph, InitializersFollowKeras) {
  set_random_seed(9);
  auto in = Input({300});
  auto out = Dense(200, "linear", {.kernel_initializer = "glorot_uniform"})(in);
  auto out2 =
      Dense(100, "linear", {.kernel_initializer = "he_normal", .bias_initializer = "ones"})(out);
  Model model(in, out2);
  const auto w = model.get_weights();
  const double limit = std::sqrt(6.0 / (300 + 200));
  double max_abs = 0, sum_sq = 0;
  for (float v : w[0].values()) max_abs = std::max(max_abs, double(std::abs(v)));
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.95 * limit);
  for (float v : w[1].values()) EXPECT_EQ(v, 0.f);
  for (float v : w[2].values()) sum_sq += double(v) * v;
  const double stddev = std::sqrt(sum_sq / w[2].size());
  EXPECT_NEAR(stddev, std::sqrt(2.0 / 200), 0.1 * std::sqrt(2.0 / 200));
  for (float v : w[3].values()) EXPECT_EQ(v, 1.f);
}

}  // namespace
}  // namespace tandem
