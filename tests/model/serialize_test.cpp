// Save/load: round trips, resumed training equal to uninterrupted, and every kind of bad file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace tandem {
namespace {

using test::expect_error;

Model mlp(int64_t hidden = 8) {
  auto in = Input({4});
  return Model(in, Dense(3, "softmax")(Dense(hidden, "relu")(in)));
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

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

}  // namespace
}  // namespace tandem
