// Model files and checkpoints are checked against the bytes they hold before anything is
// built from them: the parameter count an architecture implies (overflow-checked) must be
// the float count of the file's weight sections, numbers read as integers must be integers,
// and every error names the file. A FIFO is refused without blocking.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/container.h"
#include "peak_memory.h"
#include "test_util.h"
#include "train/checkpoint.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr int64_t kMiB = int64_t{1} << 20;

// A small saved model (Input 100 -> Dense 8 -> Dense 3) whose header `edit` then rewrites;
// the container is re-encoded, so the checksum is right and only the content lies.
std::string forged_model(const test::TempDir& dir, const std::function<void(json&)>& edit) {
  auto in = Input({100});
  Model m(in, Dense(3, "softmax")(Dense(8, "relu")(in)));
  m.compile("adam", "categorical_crossentropy");
  const std::string path = dir.file("m.tandem");
  m.save(path);
  detail::Container c = detail::read_container(path, "model");
  edit(c.header);
  detail::write_container(path, std::move(c));
  return path;
}

json& dense_config(json& header, int which) {
  int seen = 0;
  for (auto& layer : header["architecture"]["layers"]) {
    if (layer["type"] == "Dense" && seen++ == which) return layer["config"];
  }
  throw std::runtime_error("no such Dense layer");
}

// Defect: a small file claiming a 600 000-unit Dense layer made load (and `tandem summary`)
// allocate the whole model (1.9 GB for a 784-wide input) before any size was checked.
TEST(ModelFileLimits, ArchitectureIsCheckedAgainstTheWeightsPresentBeforeBuilding) {
  test::TempDir dir;
  const std::string path = forged_model(dir, [](json& h) { dense_config(h, 0)["units"] = 600000; });
  const auto m = test::measure_in_child([&] { Model::load(path); });
  EXPECT_EQ(m.error_type, "FormatError") << m.message;
  EXPECT_THAT(m.message, HasSubstr(path));
  EXPECT_THAT(m.message, HasSubstr("implies"));
  EXPECT_THAT(m.message, HasSubstr("weight sections hold"));
  EXPECT_LT(m.peak_growth_bytes, 32 * kMiB);
}

// Defect: 2e9 units ended in a bare std::bad_alloc naming no file.
TEST(ModelFileLimits, AbsurdLayerIsAFormatErrorNamingTheFile) {
  test::TempDir dir;
  for (int64_t units : {int64_t{2000000000}, int64_t{1} << 62}) {
    const std::string path =
        forged_model(dir, [&](json& h) { dense_config(h, 0)["units"] = units; });
    const auto m = test::measure_in_child([&] { Model::load(path); });
    EXPECT_EQ(m.error_type, "FormatError") << units << ": " << m.message;
    EXPECT_THAT(m.message, HasSubstr(path));
    EXPECT_LT(m.peak_growth_bytes, 32 * kMiB);
  }
}

TEST(ModelFileLimits, HugeInputShapeOverflowIsCaught) {
  test::TempDir dir;
  const std::string path = forged_model(dir, [](json& h) {
    h["architecture"]["layers"][0]["config"]["shape"] = {int64_t{1} << 40, int64_t{1} << 40};
  });
  test::expect_error<FormatError>([&] { Model::load(path); }, {path, "2^40"});
}

TEST(ModelFileLimits, FloatsWhereIntegersBelongAreRefused) {
  test::TempDir dir;
  const std::string units = forged_model(dir, [](json& h) { dense_config(h, 0)["units"] = 1e300; });
  test::expect_error<FormatError>([&] { Model::load(units); },
                                  {units, "'units' must be an integer"});
  const std::string node =
      forged_model(dir, [](json& h) { h["architecture"]["nodes"][1]["inputs"] = {1e300}; });
  test::expect_error<FormatError>([&] { Model::load(node); }, {node, "out of order"});
  const std::string iterations = forged_model(dir, [](json& h) { h["iterations"] = -4; });
  test::expect_error<FormatError>([&] { Model::load(iterations); }, {iterations, "iterations"});
}

TEST(ModelFileLimits, WrongTypesInTheHeaderAreFormatErrors) {
  test::TempDir dir;
  const std::vector<std::function<void(json&)>> edits = {
      [](json& h) { h["name"] = 5; },
      [](json& h) { h["weights"] = "none"; },
      [](json& h) {
        h["weights"][0]["layer"] = 7;
        h["weights"][0]["shape"] = {1};
      },
      [](json& h) { h["architecture"]["layers"][1]["type"] = "Conv9D"; },
      [](json& h) { h["compile"]["optimizer"]["name"] = "nosuch"; },
      [](json& h) { dense_config(h, 1)["activation"] = 3; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    const std::string path = forged_model(dir, edits[i]);
    try {
      Model::load(path);
      ADD_FAILURE() << "edit " << i << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(path)) << "edit " << i;
      EXPECT_TRUE(dynamic_cast<const FormatError*>(&e) || dynamic_cast<const ShapeError*>(&e))
          << "edit " << i << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "edit " << i << " threw a non-tandem error: " << e.what();
    }
  }
}

TEST(ModelFileLimits, ContainerKindAndSectionsAreTypeChecked) {
  test::TempDir dir;
  const std::string path = forged_model(dir, [](json&) {});
  std::string bytes = detail::encode_container(detail::read_container(path, "model"));
  detail::Container c = detail::decode_container(bytes, path, "model");
  c.header["kind"] = 12;
  const std::string bad_kind = detail::encode_container(std::move(c));
  test::expect_error<FormatError>([&] { detail::decode_container(bad_kind, path, "model"); },
                                  {path, "'kind'"});
}

TEST(ModelFileLimits, FifoModelFileIsRefusedWithoutBlocking) {
  test::TempDir dir;
  const std::string fifo = dir.file("model.tandem");
  test::expect_fifo_refused(fifo, [&] { Model::load(fifo); });
}

// A checkpoint's progress fields read as integers: a float there (1e300) was converted
// with undefined behaviour before the range checks saw it.
TEST(CheckpointFileLimits, FloatProgressFieldsAreFormatErrors) {
  set_random_seed(3);
  Sequential m({4}, {Dense(3, "softmax")});
  m.compile("sgd", "categorical_crossentropy");
  detail::FitProgress progress;
  progress.epoch = 1;
  const json identity = json::object();
  for (const char* field : {"epoch", "step", "global_step", "samples", "seed"}) {
    detail::Container c = detail::decode_container(
        detail::encode_checkpoint(m.state(), progress, identity), "ckpt", "checkpoint");
    c.header["progress"][field] = 1e300;
    const std::string bytes = detail::encode_container(std::move(c));
    detail::FitProgress out;
    test::expect_error<FormatError>(
        [&] { detail::decode_checkpoint(bytes, "forged.tandem", m.state(), out, identity); },
        {"forged.tandem", field, "whole number"});
  }
}

}  // namespace
}  // namespace tandem
