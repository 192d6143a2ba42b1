// Keras 3 files written and read by tandem: a branchy conv model (every layer kind) and an
// MLP round-trip through .keras with optimizer state, training continues identically,
// .weights.h5 moves weights between two builds of one architecture, and damaged files or
// what tandem lacks give errors naming the zip entry, HDF5 object, layer or option. Against
// real Keras: python/tests/test_keras_files.py.
#include "model/keras/keras_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "model/keras/keras_config.h"
#include "model/keras/zip_archive.h"
#include "model/model_state.h"
#include "test_util.h"

namespace tandem {
namespace {

using nlohmann::json;
using test::expect_error;

// Every layer kind tandem has, with two branches (Concatenate), a residual Add, shared
// weights (one Dense called twice) and BatchNormalization's non-trainable weights.
Model branchy() {
  auto in = Input({8, 8, 2});
  auto x = Conv2D(4, 3, "relu", {.padding = "same"})(in);
  x = BatchNormalization()(x);
  auto a = MaxPooling2D(2)(x);
  auto b = Conv2D(4, 3, "linear", {.padding = "valid", .name = "branch_conv"})(ZeroPadding2D(1)(x));
  b = AveragePooling2D(2)(b);
  auto c = Concatenate()({a, b});                // (4, 4, 8)
  auto r = Add()({c, Conv2D(8, 1, "tanh")(c)});  // residual
  auto g = GlobalAveragePooling2D()(r);          // (8)
  auto f = Dense(16, "sigmoid", {.name = "features"})(Flatten()(Reshape({4, 4, 8})(r)));
  auto shared = Dense(8, "relu", {.name = "shared"});
  auto h = Concatenate()({shared(g), shared(Dense(8)(f))});
  h = Dropout(0.25)(Activation("relu")(h));
  return Model(in, Dense(4, "softmax", {.name = "head"})(h), "branchy");
}

struct Images {
  Tensor x, y;
};
Images images(int64_t n, uint64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Images d{Tensor({n, 8, 8, 2}), Tensor({n, 4})};
  for (int64_t i = 0; i < d.x.size(); ++i) d.x[i] = u(gen);
  for (int64_t i = 0; i < n; ++i) d.y[i * 4 + i % 4] = 1.f;
  return d;
}

double max_weight_diff(const Model& a, const Model& b) {
  const auto wa = a.get_weights(), wb = b.get_weights();
  EXPECT_EQ(wa.size(), wb.size());
  double worst = 0;
  for (size_t i = 0; i < wa.size() && i < wb.size(); ++i) {
    worst = std::max(worst, test::max_abs_diff(wa[i], wb[i]));
  }
  return worst;
}

using test::read_bytes;
using test::write_bytes;

// The entries of a .keras file tandem wrote, to damage one and zip them again.
struct Entries {
  std::string metadata, config, weights;
};
Entries entries_of(const std::string& path) {
  const detail::ZipReader zip(read_bytes(path), path);
  return {zip.read("metadata.json", 1 << 20), zip.read("config.json", 1 << 26),
          zip.read("model.weights.h5", 1 << 26)};
}
// branchy(), compiled with Adam, saved as m.keras in `dir`: its entries.
Entries saved_branchy(const test::TempDir& dir) {
  set_random_seed(1);
  Model a = branchy();
  a.compile(Adam(), "categorical_crossentropy");
  a.save(dir.file("m.keras"));
  return entries_of(dir.file("m.keras"));
}
void write_keras(const std::string& path, const Entries& e) {
  write_bytes(path, detail::zip_archive({{"metadata.json", e.metadata},
                                         {"config.json", e.config},
                                         {"model.weights.h5", e.weights}}));
}

TEST(KerasFiles, BranchyModelRoundTripsWithOptimizerStateAndContinuesIdentically) {
  ASSERT_TRUE(detail::keras_files_available());
  test::TempDir dir;
  const Images d = images(48, 3);
  set_random_seed(5);
  Model a = branchy();
  a.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  a.fit(d.x, d.y, {.batch_size = 16, .epochs = 2, .verbose = 0, .seed = 2});
  a.save(dir.file("m.keras"));
  Model b = Model::load(dir.file("m.keras"));
  EXPECT_EQ(b.name(), "branchy");
  EXPECT_EQ(b.loss(), "categorical_crossentropy");
  EXPECT_EQ(a.summary_string(), b.summary_string());
  EXPECT_EQ(max_weight_diff(a, b), 0.0);
  EXPECT_EQ(test::max_abs_diff(a.predict(d.x), b.predict(d.x)), 0.0);
  const auto& sa = a.state();
  const auto& sb = b.state();
  EXPECT_EQ(sb.iterations, sa.iterations);
  EXPECT_FLOAT_EQ(static_cast<float>(sb.learning_rate), static_cast<float>(sa.learning_rate));
  ASSERT_EQ(sb.optimizer_state.size(), 2u);
  // Optimizer slots and step count came along: one more epoch gives identical weights.
  a.fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 9});
  b.fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 9});
  EXPECT_EQ(max_weight_diff(a, b), 0.0);
}

TEST(KerasFiles, EveryOptimizerKeepsItsSlots) {
  test::TempDir dir;
  const auto toy = test::make_toy(64, 4, 3, 1);
  for (const Optimizer& o : {SGD(0.05, 0.9, true), SGD(0.05), RMSprop(0.01), Adam(0.01)}) {
    SCOPED_TRACE(o.name + " momentum " + std::to_string(o.momentum));
    auto in = Input({4});
    Model a(in, Dense(3, "softmax")(Dense(8, "relu")(in)));
    a.compile(o, "categorical_crossentropy");
    a.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 1});
    a.save(dir.file("o.keras"));
    Model b = Model::load(dir.file("o.keras"));
    a.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 3});
    b.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 3});
    EXPECT_EQ(max_weight_diff(a, b), 0.0);
  }
}

TEST(KerasFiles, ConfigIsKerasShaped) {
  test::TempDir dir;
  set_random_seed(1);
  Model a = branchy();
  a.compile(SGD(0.1, 0.9), "mse");
  a.save(dir.file("m.keras"));
  const json config = json::parse(entries_of(dir.file("m.keras")).config);
  EXPECT_EQ(config["class_name"], "Functional");
  EXPECT_EQ(config["compile_config"]["optimizer"]["class_name"], "SGD");
  EXPECT_DOUBLE_EQ(config["compile_config"]["optimizer"]["config"]["momentum"].get<double>(), 0.9);
  const json& layers = config["config"]["layers"];
  EXPECT_EQ(layers[0]["class_name"], "InputLayer");
  EXPECT_EQ(layers[0]["config"]["batch_shape"], json::parse("[null, 8, 8, 2]"));
  int shared_calls = 0;
  for (const json& l : layers) {
    if (l["name"] == "shared") shared_calls = static_cast<int>(l["inbound_nodes"].size());
    if (l["class_name"] == "Conv2D") {
      EXPECT_EQ(l["config"]["kernel_initializer"]["class_name"], "GlorotUniform");
      EXPECT_EQ(l["config"]["data_format"], "channels_last");
    }
  }
  EXPECT_EQ(shared_calls, 2);
  EXPECT_EQ(config["config"]["output_layers"][0], "head");
}

TEST(KerasFiles, WeightsFileMovesWeightsBetweenBuildsOfOneArchitecture) {
  test::TempDir dir;
  const Images d = images(16, 4);
  set_random_seed(1);
  Model a = branchy();
  set_random_seed(2);
  Model b = branchy();
  ASSERT_GT(max_weight_diff(a, b), 0.0);
  a.save_weights(dir.file("w.weights.h5"));
  b.load_weights(dir.file("w.weights.h5"));
  EXPECT_EQ(max_weight_diff(a, b), 0.0);
  EXPECT_EQ(test::max_abs_diff(a.predict(d.x), b.predict(d.x)), 0.0);
  // A .keras file's weights, as Keras's load_weights takes them.
  set_random_seed(3);
  Model c = branchy();
  a.save(dir.file("whole.keras"));
  c.load_weights(dir.file("whole.keras"));
  EXPECT_EQ(max_weight_diff(a, c), 0.0);

  // Another architecture: the layer and its variable count are named, and nothing changed.
  auto in = Input({8, 8, 2});
  Model other(in, Dense(4)(Flatten()(Conv2D(4, 3)(in))));
  const auto before = other.get_weights();
  expect_error<FormatError>([&] { other.load_weights(dir.file("w.weights.h5")); },
                            {"w.weights.h5", "layers/dense/vars/0", "(128, 16)", "(144, 4)"});
  auto in2 = Input({8, 8, 2});
  Model wider(in2, Dense(4)(Flatten()(Conv2D(5, 3)(in2))));
  expect_error<FormatError>([&] { wider.load_weights(dir.file("w.weights.h5")); },
                            {"layers/conv2d/vars/0", "(3, 3, 2, 4)", "(3, 3, 2, 5)"});
  EXPECT_EQ(test::max_abs_diff(other.get_weights()[0], before[0]), 0.0);
}

TEST(KerasFiles, DamagedFilesNameThePartAtFault) {
  test::TempDir dir;
  const Entries good = saved_branchy(dir);
  const std::string whole = read_bytes(dir.file("m.keras"));

  write_bytes(dir.file("junk.keras"), std::string(300, 'x'));
  expect_error<FormatError>([&] { Model::load(dir.file("junk.keras")); },
                            {"junk.keras", "not a readable zip archive"});
  write_bytes(dir.file("cut.keras"), whole.substr(0, whole.size() / 2));
  expect_error<FormatError>([&] { Model::load(dir.file("cut.keras")); }, {"cut.keras", "zip"});
  expect_error<IoError>([&] { Model::load(dir.file("absent.keras")); }, {"absent.keras"});

  Entries e = good;
  e.weights = std::string(1 << 16, '\0');  // room for the weights, but not HDF5
  write_keras(dir.file("h5.keras"), e);
  expect_error<FormatError>([&] { Model::load(dir.file("h5.keras")); },
                            {"h5.keras", "zip entry 'model.weights.h5'", "not a readable HDF5"});
  e = good;
  e.weights = good.weights.substr(0, good.weights.size() / 3);
  write_keras(dir.file("h5cut.keras"), e);
  expect_error<FormatError>([&] { Model::load(dir.file("h5cut.keras")); },
                            {"h5cut.keras", "model.weights.h5"});
  e = good;
  e.config = "{\"class_name\": ";
  write_keras(dir.file("json.keras"), e);
  expect_error<FormatError>([&] { Model::load(dir.file("json.keras")); },
                            {"json.keras", "zip entry 'config.json' is not JSON"});
  write_bytes(dir.file("noweights.keras"),
              detail::zip_archive({{"config.json", good.config}, {"metadata.json", "{}"}}));
  expect_error<FormatError>([&] { Model::load(dir.file("noweights.keras")); },
                            {"noweights.keras", "no zip entry 'model.weights.h5'"});
}

// Edits one layer of the saved config and expects the load to name the layer and option.
void expect_config_error(const std::string& dir, const Entries& good,
                         const std::function<void(json&)>& edit,
                         std::initializer_list<std::string> fragments) {
  Entries e = good;
  json config = json::parse(e.config);
  edit(config);
  e.config = config.dump();
  write_keras(dir + "/edited.keras", e);
  expect_error<FormatError>([&] { Model::load(dir + "/edited.keras"); }, fragments);
}

json& layer_named(json& config, const std::string& name) {
  for (json& l : config["config"]["layers"]) {
    if (l["name"] == name) return l;
  }
  throw std::runtime_error("no layer " + name);
}

TEST(KerasFiles, WhatTandemLacksIsNamed) {
  test::TempDir dir;
  const Entries good = saved_branchy(dir);
  const std::string d = dir.path().string();
  expect_config_error(
      d, good, [](json& c) { layer_named(c, "branch_conv")["class_name"] = "SeparableConv2D"; },
      {"edited.keras", "config.json", "layer 'branch_conv' (SeparableConv2D)", "not supported"});
  expect_config_error(d, good,
                      [](json& c) { layer_named(c, "branch_conv")["config"]["groups"] = 2; },
                      {"layer 'branch_conv' (Conv2D)", "option 'groups' = 2"});
  expect_config_error(
      d, good,
      [](json& c) { layer_named(c, "branch_conv")["config"]["kernel_regularizer"] = "l2"; },
      {"layer 'branch_conv' (Conv2D)", "option 'kernel_regularizer'"});
  expect_config_error(d, good,
                      [](json& c) { layer_named(c, "features")["config"]["activation"] = "gelu"; },
                      {"features", "unknown activation 'gelu'"});
  expect_config_error(d, good,
                      [](json& c) {
                        layer_named(c, "features")["config"]["kernel_initializer"]["class_name"] =
                            "Orthogonal";
                      },
                      {"layer 'features' (Dense)", "initializer Orthogonal"});
  expect_config_error(d, good,
                      [](json& c) { layer_named(c, "features")["config"]["trainable"] = false; },
                      {"layer 'features' (Dense)", "trainable = false"});
  expect_config_error(d, good,
                      [](json& c) {
                        layer_named(c, "batch_normalization")["config"]["dtype"]["config"]["name"] =
                            "mixed_float16";
                      },
                      {"layer 'batch_normalization' (BatchNormalization)", "mixed_float16"});
  expect_config_error(d, good,
                      [](json& c) { c["compile_config"]["optimizer"]["class_name"] = "Adagrad"; },
                      {"compile_config", "optimizer Adagrad"});
  expect_config_error(d, good,
                      [](json& c) { c["compile_config"]["optimizer"]["config"]["amsgrad"] = true; },
                      {"optimizer Adam", "option 'amsgrad' = true"});
  expect_config_error(d, good, [](json& c) { c["compile_config"]["loss"] = "huber"; },
                      {"compile_config", "unknown loss 'huber'"});
  expect_config_error(d, good, [](json& c) { c["class_name"] = "MyModel"; },
                      {"model class MyModel"});
  expect_config_error(d, good,
                      [](json& c) {
                        c["config"]["output_layers"] =
                            json::parse("[[\"head\", 0, 0], [\"features\", 0, 0]]");
                      },
                      {"output_layers", "several inputs or outputs"});
  expect_config_error(
      d, good,
      [](json& c) {
        json history = json::object(), node = json::object(), entry = json::object();
        history["class_name"] = "__keras_tensor__";
        history["config"]["keras_history"] = json::array({c["config"]["layers"][0]["name"], 0, 0});
        node["args"] = json::array({history});
        node["kwargs"] = json::object();
        entry["class_name"] = "Flatten";
        entry["name"] = "dangling";
        entry["config"]["name"] = "dangling";
        entry["inbound_nodes"] = json::array({node});
        c["config"]["layers"].insert(c["config"]["layers"].begin() + 1, entry);
      },
      {"layer 'dangling' is not on the way from the input to the output"});
  expect_config_error(d, good,
                      [](json& c) { layer_named(c, "features")["config"]["units"] = "many"; },
                      {"config.json", "'units' must be an integer"});
  // Weights the file cannot hold are refused before the model's buffer is allocated.
  expect_config_error(
      d, good, [](json& c) { layer_named(c, "features")["config"]["units"] = int64_t{1} << 30; },
      {"config.json describes", "zip entry 'model.weights.h5' holds"});
  // A weight the config changes (units) no longer fits the file: the dataset is named.
  expect_config_error(d, good, [](json& c) { layer_named(c, "features")["config"]["units"] = 9; },
                      {"HDF5 object 'layers/dense", "has shape (128, 16)", "(128, 9)"});
}

// Keras's load_model(compile=False): architecture and weights only, for .keras and tandem's
// format alike; a compile config tandem cannot honour (a loss it lacks) does not stop it.
TEST(KerasFiles, LoadWithoutCompileReadsArchitectureAndWeightsOnly) {
  test::TempDir dir;
  const Images d = images(32, 4);
  set_random_seed(3);
  Model a = branchy();
  a.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  a.fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 2});
  ASSERT_TRUE(a.optimizer().has_value());
  EXPECT_EQ(a.optimizer()->name, "adam");
  EXPECT_EQ(a.metrics(), std::vector<std::string>{"accuracy"});
  for (const std::string name : {"m.keras", "m.tandem"}) {
    SCOPED_TRACE(name);
    a.save(dir.file(name));
    Model b = Model::load(dir.file(name), {.compile = false});
    EXPECT_FALSE(b.optimizer().has_value());
    EXPECT_EQ(b.loss(), "");
    EXPECT_TRUE(b.metrics().empty());
    EXPECT_TRUE(b.state().optimizer_state.empty());
    EXPECT_EQ(max_weight_diff(a, b), 0.0);
    EXPECT_EQ(test::max_abs_diff(a.predict(d.x), b.predict(d.x)), 0.0);
    expect_error<ConfigError>([&] { b.fit(d.x, d.y, {.epochs = 1, .verbose = 0}); },
                              {"must be compiled before"});
    b.compile(SGD(0.1), "categorical_crossentropy");
    EXPECT_EQ(b.state().iterations, 0);
    b.fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0});
    EXPECT_GT(max_weight_diff(a, b), 0.0);
  }
  Entries e = entries_of(dir.file("m.keras"));
  json config = json::parse(e.config);
  config["compile_config"]["loss"] = "huber";
  e.config = config.dump();
  write_keras(dir.file("huber.keras"), e);
  expect_error<FormatError>([&] { Model::load(dir.file("huber.keras")); },
                            {"compile_config", "unknown loss 'huber'"});
  Model c = Model::load(dir.file("huber.keras"), {.compile = false});
  EXPECT_EQ(max_weight_diff(a, c), 0.0);
}

// Keras 2's training_config wraps each metric with the function it computed: that accuracy
// is kept under the metric's name (Keras 3's shape rule would pick categorical here: four
// sigmoid outputs), and a wrapped function tandem lacks is named.
TEST(KerasFiles, Keras2WrappedMetricKeepsItsAccuracyFunction) {
  auto in = Input({6});
  const Model m(in, Dense(4, "sigmoid")(in), "multilabel");
  json config = keras_config(*m.state().graph, "multilabel", std::nullopt);
  json training = {
      {"loss", "binary_crossentropy"},
      {"optimizer_config", {{"class_name", "Custom>Adam"}, {"config", {{"learning_rate", 0.01}}}}},
      {"metrics",
       json::array({json::array({{{"class_name", "MeanMetricWrapper"},
                                  {"config", {{"name", "accuracy"}, {"fn", "binary_accuracy"}}}}})})}};
  const detail::KerasModel k = detail::model_from_keras_config(
      detail::config_from_legacy_h5(config, training), "m.h5", "model_config");
  ASSERT_TRUE(k.compile.has_value());
  EXPECT_EQ(k.compile->metrics, std::vector<std::string>{"accuracy"});
  ASSERT_TRUE(k.compile->accuracy_kind.has_value());
  EXPECT_EQ(*k.compile->accuracy_kind, detail::AccuracyKind::binary);
  training["metrics"][0][0]["config"]["fn"] = "top_k_categorical_accuracy";
  expect_error<FormatError>(
      [&] {
        detail::model_from_keras_config(detail::config_from_legacy_h5(config, training), "m.h5",
                                        "model_config");
      },
      {"m.h5", "metric function 'top_k_categorical_accuracy' is not supported"});
}

TEST(KerasFiles, LegacySuffixesAreNotMistakenForKeras3) {
  EXPECT_TRUE(detail::is_keras_model_path("a/B.KERAS"));
  EXPECT_TRUE(detail::is_keras_weights_path("x.weights.h5"));
  EXPECT_FALSE(detail::is_keras_weights_path("x.h5"));
  EXPECT_FALSE(detail::is_keras_model_path("x.keras.tandem"));
}

}  // namespace
}  // namespace tandem
