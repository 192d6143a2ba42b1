// Save/load: round trips, resumed training equal to uninterrupted, and every kind of bad file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/container.h"
#include "model/model_state.h"
#include "test_util.h"

namespace tandem {
namespace {

using test::expect_error;

Model mlp(int64_t hidden = 8) {
  auto in = Input({4});
  return Model(in, Dense(3, "softmax")(Dense(hidden, "relu")(in)));
}

using test::read_bytes;
using test::write_bytes;

TEST(Serialize, WholeModelRoundTripContinuesTrainingIdentically) {
  test::TempDir dir;
  auto toy = test::make_toy(64, 4, 3, 1);
  set_random_seed(1);
  Model a = mlp();
  a.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  a.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 2, .verbose = 0, .seed = 4});
  a.save(dir.file("m.tandem"));
  Model b = Model::load(dir.file("m.tandem"));
  EXPECT_EQ(b.loss(), "categorical_crossentropy");
  EXPECT_EQ(a.summary_string(), b.summary_string());
  EXPECT_EQ(test::max_abs_diff(a.predict(toy.x), b.predict(toy.x)), 0.0);
  // Optimizer state and step count came along: one more epoch gives identical weights.
  a.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 5});
  b.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0, .seed = 5});
  const auto wa = a.get_weights(), wb = b.get_weights();
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(test::max_abs_diff(wa[i], wb[i]), 0.0);
  // Nothing but the file itself is left in the directory (no temporary files).
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Serialize, BranchingArchitectureRoundTrips) {
  test::TempDir dir;
  auto in = Input({4});
  auto a = Dense(5, "relu")(in);
  auto b = Dense(5, "sigmoid")(in);
  auto out = Dense(2, "softmax")(Concatenate()({Add()({a, b}), Dropout(0.2)(a)}));
  Model m(in, out, "branchy");
  m.save(dir.file("b.tandem"));
  Model back = Model::load(dir.file("b.tandem"));
  EXPECT_EQ(m.summary_string(), back.summary_string());
  auto toy = test::make_toy(8, 4, 2, 3);
  EXPECT_EQ(test::max_abs_diff(m.predict(toy.x), back.predict(toy.x)), 0.0);
}

TEST(Serialize, WeightsOnlyAndWrongArchitecture) {
  test::TempDir dir;
  set_random_seed(2);
  Model a = mlp();
  a.save_weights(dir.file("w.tandem"));
  Model b = mlp();
  b.load_weights(dir.file("w.tandem"));
  EXPECT_EQ(test::max_abs_diff(a.get_weights()[0], b.get_weights()[0]), 0.0);
  Model other = mlp(9);
  expect_error<ShapeError>([&] { other.load_weights(dir.file("w.tandem")); },
                           {"w.tandem", "dense", "(4, 8)", "(4, 9)"});
  auto in = Input({4});
  Model deeper(in, Dense(3)(Dense(8)(Dense(8)(in))));
  expect_error<ShapeError>([&] { deeper.load_weights(dir.file("w.tandem")); },
                           {"4 weight arrays", "6"});
  // A weights file is not a model.
  expect_error<FormatError>([&] { Model::load(dir.file("w.tandem")); }, {"weights", "model"});
}

TEST(Serialize, CorruptTruncatedAndForeignFiles) {
  test::TempDir dir;
  Model m = mlp();
  m.compile("rmsprop", "categorical_crossentropy");
  const std::string path = dir.file("m.tandem");
  m.save(path);
  const std::string good = read_bytes(path);

  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  write_bytes(path, flipped);
  expect_error<FormatError>([&] { Model::load(path); }, {path, "checksum"});

  write_bytes(path, good.substr(0, good.size() - 100));
  expect_error<FormatError>([&] { Model::load(path); }, {path});

  write_bytes(path, good.substr(0, 10));
  expect_error<FormatError>([&] { Model::load(path); }, {path, "too short"});

  write_bytes(path, "PK\x03\x04 this is a zip, not ours...........");
  expect_error<FormatError>([&] { Model::load(path); }, {path, "offset 0", "magic"});

  expect_error<IoError>([&] { Model::load(dir.file("missing.tandem")); }, {"missing.tandem"});
  expect_error<IoError>([&] { m.save(dir.file("no/such/dir/m.tandem")); }, {"no/such/dir"});
}

// A file whose weights are listed in another layer order (as tandem wrote branching graphs
// before it ordered layers as Keras does) loads each weight and optimizer slot where it
// belongs: entries are matched by layer and weight name, slots remapped from the writer's
// layout.
TEST(Serialize, WeightsListedInAnotherLayerOrderLoadWhereTheyBelong) {
  test::TempDir dir;
  auto in = Input({4});
  auto a = Dense(5, "relu", {.name = "a"})(in);
  auto b = Dense(5, "tanh", {.name = "b"})(in);
  set_random_seed(2);
  Model m(in, Dense(3, "softmax", {.name = "out"})(Concatenate()({a, b})));
  m.compile(Adam(0.01), "categorical_crossentropy");
  const auto toy = test::make_toy(32, 4, 3, 1);
  m.fit(toy.x, toy.y_onehot, {.batch_size = 8, .epochs = 1, .verbose = 0, .seed = 1});
  m.save(dir.file("m.tandem"));

  // Rewrite the file with layers a and b swapped in the weights list, in the sections and in
  // the optimizer slots' flat layout.
  detail::Container c = detail::read_container(dir.file("m.tandem"), "model");
  nlohmann::json& list = c.header["weights"];
  ASSERT_EQ(list.size(), 6u);  // a, b, out: kernel and bias each
  ASSERT_EQ(list[0]["layer"], "a");
  ASSERT_EQ(list[2]["layer"], "b");
  const std::vector<size_t> order = {2, 3, 0, 1, 4, 5};  // new entry i holds old entry order[i]
  nlohmann::json swapped = nlohmann::json::array();
  std::vector<detail::Section> sections;
  for (size_t i = 0; i < order.size(); ++i) {
    swapped.push_back(list[order[i]]);
    sections.push_back({"w" + std::to_string(i),
                        c.section("w" + std::to_string(order[i]), dir.file("m.tandem")).values});
  }
  // Old layout: a (20 + 5 floats) then b, each layer from a 16-float line; the swap moves
  // b's slice to where a's was, and both are the same size, so offsets just trade places.
  const auto& params = m.state().graph->params();
  for (const detail::Section& old : c.sections) {
    if (old.name.rfind("optimizer/", 0) != 0) continue;
    std::vector<float> v = old.values;
    const int64_t a_at = params[0].offset, b_at = params[2].offset, n = params[2].offset;
    for (int64_t k = 0; k < n; ++k) std::swap(v[a_at + k], v[b_at + k]);
    sections.push_back({old.name, v});
  }
  list = swapped;
  c.sections = sections;
  detail::write_container(dir.file("swapped.tandem"), c);

  Model loaded = Model::load(dir.file("swapped.tandem"));
  EXPECT_EQ(test::max_abs_diff(loaded.predict(toy.x), m.predict(toy.x)), 0.0);
  m.fit(toy.x, toy.y_onehot, {.batch_size = 8, .epochs = 1, .verbose = 0, .seed = 4});
  loaded.fit(toy.x, toy.y_onehot, {.batch_size = 8, .epochs = 1, .verbose = 0, .seed = 4});
  const auto wa = m.get_weights(), wb = loaded.get_weights();
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(test::max_abs_diff(wa[i], wb[i]), 0.0) << i;
}

}  // namespace
}  // namespace tandem
