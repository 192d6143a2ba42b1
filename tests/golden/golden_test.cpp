// Golden runs against Keras: each tests/golden/data/<case>.json holds a 10-step Keras 3
// training run of a small MLP (scripts/golden/make_golden.py; schema and Keras's exact update
// rules in scripts/golden/README.md). tandem replays it through the public API only:
// set_weights(initial), train_on_batch per batch, then get_weights and predict.
//
// Tolerances (README, "Suggested C++ tolerances"; the float32 numpy replay uses <= 5% of them):
//   step losses     |a - b| <= 1e-5 * |b|
//   final weights   |a - b| <= 1e-5 + 1e-4 * |b|
//   predict(x[:8])  |a - b| <= 1e-5 + 1e-4 * |b|
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/layers.h"
#include "tandem/model.h"
#include "tandem/optimizers.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kLossRtol = 1e-5;
constexpr double kAtol = 1e-5, kRtol = 1e-4;

const fs::path& golden_dir() {
  static const fs::path dir = fs::path(__FILE__).parent_path() / "data";
  return dir;
}

std::vector<std::string> golden_cases() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(golden_dir(), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

json read_case(const std::string& name) {
  const fs::path path = golden_dir() / (name + ".json");
  std::ifstream in(path);
  if (!in) throw IoError(path.string(), "cannot open golden file");
  return json::parse(in);
}

// Rows [begin, end) of a row-major (n, cols) table as a Tensor; cols == 0: a vector (n,).
Tensor rows_of(const json& table, int64_t begin, int64_t end) {
  std::vector<float> values;
  const bool vector = !table.at(0).is_array();
  int64_t cols = 1;
  for (int64_t r = begin; r < end; ++r) {
    if (vector) {
      values.push_back(table.at(r).get<float>());
    } else {
      cols = static_cast<int64_t>(table.at(r).size());
      for (const json& v : table.at(r)) values.push_back(static_cast<float>(v.get<double>()));
    }
  }
  return vector ? Tensor({end - begin}, std::move(values))
                : Tensor({end - begin, cols}, std::move(values));
}

std::vector<Tensor> weights_of(const json& list) {
  std::vector<Tensor> out;
  for (const json& w : list) {
    std::vector<float> values;
    for (const json& v : w.at("values")) values.push_back(static_cast<float>(v.get<double>()));
    out.emplace_back(w.at("shape").get<Shape>(), std::move(values));
  }
  return out;
}

Optimizer optimizer_of(const json& o) {
  const auto name = o.at("name").get<std::string>();
  const double lr = o.at("learning_rate").get<double>();
  if (name == "sgd") return SGD(lr, o.at("momentum").get<double>(), o.at("nesterov").get<bool>());
  if (name == "rmsprop") {
    // tandem implements the plain form only.
    EXPECT_EQ(o.at("momentum").get<double>(), 0.0);
    EXPECT_FALSE(o.at("centered").get<bool>());
    return RMSprop(lr, o.at("rho").get<double>(), o.at("epsilon").get<double>());
  }
  if (name == "adam") {
    EXPECT_FALSE(o.at("amsgrad").get<bool>());
    return Adam(lr, o.at("beta_1").get<double>(), o.at("beta_2").get<double>(),
                o.at("epsilon").get<double>());
  }
  throw ConfigError("golden: unknown optimizer " + name);
}

// Largest |a - b| / (atol + rtol * |b|): <= 1 passes.
struct Closeness {
  double worst_ratio = 0, max_abs = 0, max_rel = 0;
  std::string where;
  void add(double a, double b, const std::string& at) {
    const double diff = std::abs(a - b);
    const double ratio = diff / (kAtol + kRtol * std::abs(b));
    max_abs = std::max(max_abs, diff);
    if (b != 0) max_rel = std::max(max_rel, diff / std::abs(b));
    if (ratio > worst_ratio) worst_ratio = ratio, where = at;
  }
};

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesKeras) {
  set_num_threads(1);
  const json c = read_case(GetParam());

  Node inputs = Input({c.at("input_dim").get<int64_t>()});
  Node x_node = inputs;
  for (const json& l : c.at("layers")) {
    x_node = Dense(l.at("units").get<int64_t>(), l.at("activation").get<std::string>(),
                   {.use_bias = l.at("use_bias").get<bool>()})(x_node);
  }
  Model model(inputs, x_node, c.at("name").get<std::string>());
  model.compile(optimizer_of(c.at("optimizer")), c.at("loss").get<std::string>());
  model.set_weights(weights_of(c.at("initial_weights")));

  const auto n = c.at("n").get<int64_t>(), batch = c.at("batch_size").get<int64_t>();
  const auto steps = c.at("steps").get<int64_t>();
  const json& x = c.at("x");
  const json& y = c.at("y");
  const auto& expected_losses = c.at("step_losses");
  ASSERT_EQ(static_cast<int64_t>(expected_losses.size()), steps);
  double worst_loss_rel = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t begin = i * batch, end = std::min(begin + batch, n);
    ASSERT_LT(begin, end) << "step " << i << " has no rows";
    const double loss =
        model.train_on_batch(rows_of(x, begin, end), rows_of(y, begin, end)).at("loss");
    const double want = expected_losses[i].get<double>();
    const double rel = std::abs(loss - want) / std::abs(want);
    worst_loss_rel = std::max(worst_loss_rel, rel);
    EXPECT_LE(rel, kLossRtol) << "step " << i << ": tandem " << loss << ", Keras " << want;
  }

  Closeness weights;
  const std::vector<Tensor> got = model.get_weights();
  const json& final_weights = c.at("final_weights");
  ASSERT_EQ(got.size(), final_weights.size());
  for (size_t w = 0; w < got.size(); ++w) {
    const auto name = final_weights[w].at("name").get<std::string>();
    const json& values = final_weights[w].at("values");
    ASSERT_EQ(got[w].shape(), final_weights[w].at("shape").get<Shape>()) << name;
    for (int64_t i = 0; i < got[w].size(); ++i) {
      weights.add(got[w][i], values[i].get<double>(), name + "[" + std::to_string(i) + "]");
    }
  }
  EXPECT_LE(weights.worst_ratio, 1.0) << "worst at " << weights.where;

  Closeness predict;
  const json& expected_predict = c.at("predict");
  const int64_t predict_rows = static_cast<int64_t>(expected_predict.size());
  const Tensor out = model.predict(rows_of(x, 0, predict_rows));
  const Tensor want = rows_of(expected_predict, 0, predict_rows);
  ASSERT_EQ(out.shape(), want.shape());
  for (int64_t i = 0; i < out.size(); ++i) {
    predict.add(out[i], want[i], "predict[" + std::to_string(i) + "]");
  }
  EXPECT_LE(predict.worst_ratio, 1.0) << "worst at " << predict.where;

  std::printf(
      "  %-24s loss rel %.1e | weights max abs %.1e rel %.1e (%.1f%% of tol) | predict max abs "
      "%.1e rel %.1e (%.1f%% of tol)\n",
      GetParam().c_str(), worst_loss_rel, weights.max_abs, weights.max_rel,
      100 * weights.worst_ratio, predict.max_abs, predict.max_rel, 100 * predict.worst_ratio);
}

INSTANTIATE_TEST_SUITE_P(Keras, Golden, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Without the data the parameterised test would silently run nothing.
TEST(GoldenData, AllCasesPresent) {
  EXPECT_EQ(golden_cases().size(), 10u) << "in " << golden_dir();
}

}  // namespace
}  // namespace tandem
