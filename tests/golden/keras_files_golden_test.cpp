// Files Keras wrote, read by tandem. Keras 3's .keras (tests/golden/keras/, by
// scripts/golden/keras_files.py, with what Keras computed from them in expected.json) read by
// tandem: each NAME.keras predicts what Keras predicted, its NAME.weights.h5 holds the same
// weights, and one train_on_batch on the loaded model (Dropout rate set to 0 in config.json, as the
// script did) gives Keras's loss, weights and optimizer variables. Keras's order (expected.json's
// "layers") is matched by layer name, so a difference in tandem's own order cannot hide a mismatch.
//
// Tolerances (float32 on both sides; the reductions differ in order):
//   loss                      |a - b| <= 1e-5 * |b|
//   predictions, weights, optimizer slots   |a - b| <= 1e-5 * max(|b|, 1)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "model/keras/zip_archive.h"
#include "model/model_state.h"
#include "tandem/tandem.h"
#include "test_util.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kTol = 1e-5;
const fs::path kDir = fs::path(__FILE__).parent_path() / "keras";
const fs::path kKeras2Dir = fs::path(__FILE__).parent_path() / "keras2";

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}
const json& expected() {
  static const json e = read_json(kDir / "expected.json");
  return e;
}

void flatten_into(const json& v, std::vector<float>& out) {
  if (!v.is_array()) return out.push_back(static_cast<float>(v.get<double>()));
  for (const json& x : v) flatten_into(x, out);
}

// (rows, everything else flattened)
Tensor rows_of(const json& rows) {
  std::vector<float> v;
  flatten_into(rows, v);
  const auto n = static_cast<int64_t>(rows.size());
  return Tensor({n, static_cast<int64_t>(v.size()) / n}, v);
}

Samples input_of(const json& rows, const Shape& per_sample) {
  Tensor flat = rows_of(rows);
  Shape shape = {flat.shape()[0]};
  shape.insert(shape.end(), per_sample.begin(), per_sample.end());
  return Tensor(shape, std::vector<float>(flat.data(), flat.data() + flat.size()));
}

double worst(const float* a, const json& b, int64_t n) {
  double w = 0;
  EXPECT_EQ(static_cast<int64_t>(b.size()), n);
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(b.size()); ++i) {
    const double e = b[i].get<double>();
    w = std::max(w, std::abs(a[i] - e) / std::max(std::abs(e), 1.0));
  }
  return w;
}

double worst_rows(const Tensor& a, const json& rows) {
  std::vector<float> flat;
  flatten_into(rows, flat);
  return worst(a.data(), json(flat), a.size());
}

// Keras's get_weights() order, as (offset into the flat buffer, floats, trainable) of
// tandem's params: the layers in expected.json's order, each layer's params in order.
struct Param {
  int64_t offset, size;
  bool trainable;
};
std::vector<Param> keras_order(const Model& m, const json& layers) {
  const auto& graph = *m.state().graph;
  std::map<std::string, int> by_name;
  for (size_t li = 0; li < graph.layers().size(); ++li) {
    by_name[graph.layers()[li].layer->name] = static_cast<int>(li);
  }
  std::vector<Param> out;
  for (const json& l : layers) {
    const auto found = by_name.find(l.at("name").get<std::string>());
    if (found == by_name.end()) {
      ADD_FAILURE() << "tandem's model has no layer " << l.at("name");
      continue;
    }
    const auto& entry = graph.layers()[found->second];
    EXPECT_EQ(static_cast<int64_t>(entry.params.size()), l.at("n_weights").get<int64_t>());
    for (int p : entry.params) {
      const auto& pe = graph.params()[p];
      out.push_back({pe.offset, pe.size, pe.spec.trainable});
    }
  }
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double test_max_abs(const Tensor& a, const Tensor& b) {
  double w = 0;
  for (int64_t i = 0; i < a.size(); ++i) w = std::max(w, double(std::abs(a[i] - b[i])));
  return w;
}

class KerasGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(KerasGolden, PredictsAsKerasDid) {
  const json& f = expected().at("files").at(GetParam());
  Model m = Model::load((kDir / f.at("keras_file").get<std::string>()).string());
  EXPECT_EQ(m.loss(), f.at("loss").get<std::string>() == "mse" ? "mean_squared_error"
                                                               : f.at("loss").get<std::string>());
  const Shape shape = f.at("input_shape").get<Shape>();
  const Tensor out = m.predict(input_of(f.at("predict").at("x"), shape));
  EXPECT_LE(worst_rows(out, f.at("predict").at("y")), kTol);
  EXPECT_EQ(m.state().iterations, f.at("saved_optimizer_iterations").get<int64_t>());

  // The weights file holds the same weights: loaded over a model with others, it restores them.
  const auto weights = m.get_weights();
  Model other = Model::load((kDir / f.at("keras_file").get<std::string>()).string());
  std::vector<Tensor> zeros;
  for (const Tensor& w : weights) zeros.emplace_back(w.shape());
  other.set_weights(zeros);
  other.load_weights((kDir / f.at("weights_file").get<std::string>()).string());
  const auto restored = other.get_weights();
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_EQ(test_max_abs(weights[i], restored[i]), 0.0) << "weight " << i;
  }
}

TEST_P(KerasGolden, ContinuesTrainingAsKerasDid) {
  const json& f = expected().at("files").at(GetParam());
  const json& c = f.at("continuation");
  const fs::path source = kDir / f.at("keras_file").get<std::string>();
  // Dropout's rate set to 0 in config.json, as the script did before its step.
  const detail::ZipReader zip(slurp(source), source.string());
  json config = json::parse(zip.read("config.json", 1 << 24));
  int dropouts = 0;
  for (json& l : config.at("config").at("layers")) {
    if (l.at("class_name") == "Dropout") l.at("config").at("rate") = 0.0, ++dropouts;
  }
  EXPECT_EQ(dropouts, c.at("dropout_layers_set_to_rate_0").get<int>());
  const fs::path edited = fs::temp_directory_path() / ("tandem_golden_" + GetParam() + ".keras");
  {
    std::ofstream out(edited, std::ios::binary);
    out << detail::zip_archive({{"metadata.json", zip.read("metadata.json", 1 << 20)},
                                {"config.json", config.dump()},
                                {"model.weights.h5", zip.read("model.weights.h5", 1 << 26)}});
  }
  Model m = Model::load(edited.string());
  fs::remove(edited);
  const Shape shape = f.at("input_shape").get<Shape>();
  const auto logs = m.train_on_batch(input_of(c.at("x"), shape), rows_of(c.at("y")));
  const double loss = c.at("loss").get<double>();
  EXPECT_LE(std::abs(logs.at("loss") - loss), kTol * std::abs(loss));

  const std::vector<Param> order = keras_order(m, f.at("layers"));
  const json& after = c.at("weights_after");
  ASSERT_EQ(after.size(), order.size());
  const auto& s = m.state();
  std::vector<Param> trainable;
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_LE(worst(s.params.data() + order[i].offset, after[i].at("values"), order[i].size), kTol)
        << "weight " << i << " (" << after[i].at("path") << ")";
    if (order[i].trainable) trainable.push_back(order[i]);
  }
  // optimizer.variables: iterations, learning rate, then per trainable weight each slot.
  const json& vars = c.at("optimizer_variables_after");
  EXPECT_EQ(s.iterations, vars.at(0).at("values").at(0).get<int64_t>());
  const size_t slots = s.optimizer_state.size();
  ASSERT_EQ(vars.size(), 2 + trainable.size() * slots);
  for (size_t j = 0; j < trainable.size(); ++j) {
    for (size_t k = 0; k < slots; ++k) {
      const json& v = vars.at(2 + j * slots + k);
      EXPECT_LE(worst(s.optimizer_state[k].data() + trainable[j].offset, v.at("values"),
                      trainable[j].size),
                kTol)
          << v.at("path");
    }
  }
  const Tensor out = m.predict(input_of(f.at("predict").at("x"), shape));
  EXPECT_LE(worst_rows(out, c.at("predict_after")), kTol);
}

INSTANTIATE_TEST_SUITE_P(Files, KerasGolden,
                         ::testing::Values("sequential_mlp", "functional_branches",
                                           "functional_rmsprop", "functional_adam",
                                           "flatten_input"));

// Whole-model .h5 files as Keras 2 (tf_keras 2.21) and Keras 3's legacy writer save them
// (tests/golden/keras2/, by scripts/golden/keras2_h5.py): each predicts what Keras
// predicted, and one train_on_batch gives Keras's loss, weights (get_weights order) and
// step count, so the optimizer state came along.
class Keras2Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Keras2Golden, PredictsAndContinuesAsKerasDid) {
  static const json all = read_json(kKeras2Dir / "expected.json");
  const json& f = all.at("files").at(GetParam());
  Model m = Model::load((kKeras2Dir / f.at("file").get<std::string>()).string());
  EXPECT_EQ(m.loss(), f.at("loss").get<std::string>());
  EXPECT_EQ(m.state().iterations, f.at("iterations").get<int64_t>());
  const Shape shape = f.at("input_shape").get<Shape>();
  EXPECT_LE(
      worst_rows(m.predict(input_of(f.at("predict").at("x"), shape)), f.at("predict").at("y")),
      kTol);
  // compile=False: the same predictions, and nothing of the training config.
  Model bare =
      Model::load((kKeras2Dir / f.at("file").get<std::string>()).string(), {.compile = false});
  EXPECT_FALSE(bare.optimizer().has_value());
  EXPECT_EQ(bare.loss(), "");
  const Samples x = input_of(f.at("predict").at("x"), shape);
  EXPECT_EQ(test::max_abs_diff(bare.predict(x), m.predict(x)), 0.0);
  if (!f.contains("continuation")) return;  // Dropout on: Keras's step draws its own masks
  const json& c = f.at("continuation");
  const Tensor y = rows_of(c.at("y"));
  const auto logs = m.train_on_batch(input_of(c.at("x"), shape), y);
  const double loss = c.at("loss").get<double>();
  EXPECT_LE(std::abs(logs.at("loss") - loss), kTol * std::abs(loss));
  const auto weights = m.get_weights();
  const json& after = c.at("weights_after");
  ASSERT_EQ(weights.size(), after.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_LE(worst(weights[i].data(), after[i], weights[i].size()), kTol) << "weight " << i;
  }
  EXPECT_EQ(m.state().iterations, c.at("iterations_after").get<int64_t>());
}

INSTANTIATE_TEST_SUITE_P(Files, Keras2Golden,
                         ::testing::Values("sequential_sgd_keras2", "functional_adam_keras2",
                                           "convnet_rmsprop_keras2", "dropout_branches_keras2",
                                           "functional_adam_keras3"));

TEST(Keras2Files, WritingH5IsRefusedAndAFileWithoutKerasWeightsIsNamed) {
  Model m = Model::load((kKeras2Dir / "sequential_sgd_keras2.h5").string());
  const std::string out = (fs::temp_directory_path() / "tandem_never_written.h5").string();
  for (const auto& call :
       std::vector<std::function<void()>>{[&] { m.save(out); }, [&] { m.save_weights(out); }}) {
    try {
      call();
      ADD_FAILURE() << "expected a ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("Keras 2's .h5"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(out));
  // An HDF5 file without model_config (Keras 3's weights alone, named .h5) is named as such,
  // by load and by load_weights.
  const fs::path weights_only = fs::temp_directory_path() / "tandem_weights_only.h5";
  fs::copy_file(kDir / "flatten_input.weights.h5", weights_only,
                fs::copy_options::overwrite_existing);
  try {
    Model::load(weights_only.string());
    ADD_FAILURE() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("has no model_config attribute"), std::string::npos)
        << e.what();
  }
  try {
    m.load_weights(weights_only.string());
    ADD_FAILURE() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no Keras 2 weights"), std::string::npos)
        << e.what();
  }
  fs::remove(weights_only);
}

// Keras 2's save_weights("x.h5"), and a whole-model .h5 given to load_weights: the weights
// reach the model's layers by order, as Keras's load_weights matches them, so a model built
// again (other layer names) takes them; the predictions are Keras's.
TEST(Keras2Files, LoadWeightsReadsKeras2WeightsByLayerOrder) {
  static const json all = read_json(kKeras2Dir / "expected.json");
  int files = 0;
  for (const auto& [name, f] : all.at("files").items()) {
    if (!f.contains("weights_file")) continue;
    SCOPED_TRACE(name);
    ++files;
    const Shape shape = f.at("input_shape").get<Shape>();
    const Samples x = input_of(f.at("predict").at("x"), shape);
    Model m =
        Model::load((kKeras2Dir / f.at("file").get<std::string>()).string(), {.compile = false});
    for (const std::string& file :
         {f.at("weights_file").get<std::string>(), f.at("file").get<std::string>()}) {
      std::vector<Tensor> zeros = m.get_weights();
      for (Tensor& w : zeros) w = Tensor(w.shape());
      m.set_weights(zeros);
      m.load_weights((kKeras2Dir / file).string());
      EXPECT_LE(worst_rows(m.predict(x), f.at("predict").at("y")), kTol) << file;
    }
  }
  EXPECT_EQ(files, 4);
  const auto& f = all.at("files").at("sequential_sgd_keras2");
  const std::string weights = (kKeras2Dir / f.at("weights_file").get<std::string>()).string();
  set_random_seed(4);
  Sequential again({12}, {Dense(16, "relu"), Dense(4, "softmax")}, "built_again");
  again.load_weights(weights);
  EXPECT_LE(
      worst_rows(again.predict(input_of(f.at("predict").at("x"), {12})), f.at("predict").at("y")),
      kTol);
  // The name lists as fixed-length strings (Keras 2 on h5py 2) read the same.
  Sequential fixed({12}, {Dense(16, "relu"), Dense(4, "softmax")});
  fixed.load_weights((kKeras2Dir / f.at("fixed_strings_file").get<std::string>()).string());
  EXPECT_LE(
      worst_rows(fixed.predict(input_of(f.at("predict").at("x"), {12})), f.at("predict").at("y")),
      kTol);
  // Another architecture: the layer whose weights differ is named, and nothing changes.
  Sequential wider({12}, {Dense(17, "relu"), Dense(4, "softmax")});
  const auto before = wider.get_weights();
  test::expect_error<FormatError>([&] { wider.load_weights(weights); },
                                  {weights, "has shape (12, 16)", "(12, 17)"});
  EXPECT_EQ(test::max_abs_diff(before[0], wider.get_weights()[0]), 0.0);
  Sequential deeper({12}, {Dense(16, "relu"), Dense(4), Dense(4, "softmax")});
  test::expect_error<FormatError>(
      [&] { deeper.load_weights(weights); },
      {"holds the weights of 2 layers; the model has 3 layers with weights"});
  Sequential shallower({12}, {Dense(4, "softmax")});
  test::expect_error<FormatError>(
      [&] { shallower.load_weights(weights); },
      {"holds the weights of 2 layers; the model has 1 layers with weights"});
}

}  // namespace
}  // namespace tandem
