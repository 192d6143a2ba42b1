// Checkpoints and resume through the API, in one process: an interrupted fit resumed from
// an epoch or a mid-epoch step checkpoint (with Dropout and shuffling, so the RNG and data
// order must be restored) ends with the uninterrupted fit's weights and history, bit for
// bit; corrupt and truncated checkpoints fall back to the previous one; a checkpoint of
// another model or batch size is refused by name.
#include "train/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "model/container.h"
#include "test_util.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

Model model_with_dropout(uint64_t seed) {
  set_random_seed(seed);
  Sequential m({6}, {Dense(24, "relu"), Dropout(0.3), Dense(12, "tanh"), Dense(3, "softmax")});
  m.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  return m;
}

// The message of the ConfigError `f` throws ("" when it throws none).
std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

void expect_same_weights(const Model& a, const Model& b) {
  const auto wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t k = 0; k < wa.size(); ++k) {
    EXPECT_EQ(test::max_abs_diff(wa[k], wb[k]), 0.0) << "weight array " << k;
  }
}

struct ToyFit {
  test::Toy toy = test::make_toy(150, 6, 3, 21);
  FitOptions options{.batch_size = 16, .epochs = 4, .verbose = 0, .seed = 77};
};

TEST(Checkpoint, ResumeFromAnEpochCheckpointEqualsTheUninterruptedFit) {
  ToyFit run;
  test::TempDir dir;
  Model reference = model_with_dropout(1);
  const History full = reference.fit(run.toy.x, run.toy.y_onehot, run.options);

  FitOptions first = run.options;
  first.epochs = 2;
  first.checkpoint_dir = dir.file("ckpt");
  first.checkpoint_every = 1;
  model_with_dropout(1).fit(run.toy.x, run.toy.y_onehot, first);
  EXPECT_TRUE(fs::exists(dir.file("ckpt/ckpt-000000020.tandem")));  // 10 steps per epoch

  // A new process: a freshly built model (other initial weights) resumes.
  Model resumed = model_with_dropout(99);
  FitOptions rest = run.options;
  rest.checkpoint_dir = dir.file("ckpt");
  rest.checkpoint_every = 1;
  rest.resume = true;
  const History h = resumed.fit(run.toy.x, run.toy.y_onehot, rest);
  expect_same_weights(reference, resumed);
  EXPECT_EQ(h.epoch, full.epoch);
  EXPECT_EQ(h.history.at("loss"), full.history.at("loss"));
  EXPECT_EQ(resumed.state().iterations, reference.state().iterations);
}

TEST(Checkpoint, ResumeMidEpochRestoresDataOrderDropoutAndPartialSums) {
  ToyFit run;
  test::TempDir dir;
  Model reference = model_with_dropout(2);
  const History full = reference.fit(run.toy.x, run.toy.y_onehot, run.options);

  // Checkpoints every 7 steps; keep them all, then resume from the one at step 21 (epoch 3,
  // step 1 of 10) as if the run had died right after it.
  FitOptions o = run.options;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 7;
  o.checkpoint_unit = "step";
  o.keep_checkpoints = 100;
  model_with_dropout(2).fit(run.toy.x, run.toy.y_onehot, o);
  for (const auto& entry : fs::directory_iterator(dir.file("ckpt"))) {
    if (entry.path().filename() != "ckpt-000000021.tandem") fs::remove(entry.path());
  }
  Model resumed = model_with_dropout(3);
  o.resume = true;
  const History h = resumed.fit(run.toy.x, run.toy.y_onehot, o);
  expect_same_weights(reference, resumed);
  EXPECT_EQ(h.history.at("loss"), full.history.at("loss"));
  EXPECT_EQ(h.history.at("accuracy"), full.history.at("accuracy"));
}

TEST(Checkpoint, CorruptAndTruncatedCheckpointsFallBackToTheLastGoodOne) {
  ToyFit run;
  test::TempDir dir;
  Model reference = model_with_dropout(4);
  reference.fit(run.toy.x, run.toy.y_onehot, run.options);

  FitOptions o = run.options;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 1;
  model_with_dropout(4).fit(run.toy.x, run.toy.y_onehot, o);
  detail::CheckpointDir ckpt(dir.file("ckpt"), 3);
  const auto files = ckpt.list();
  ASSERT_EQ(files.size(), 3u);  // epochs 2, 3, 4: only the newest 3 are kept
  fs::resize_file(files[2], fs::file_size(files[2]) - 10);
  {
    std::fstream f(files[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x55');
  }
  std::ostringstream warnings;
  const auto found = ckpt.newest_intact(warnings);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->path, files[0]);
  EXPECT_NE(warnings.str().find("skipping checkpoint " + files[2]), std::string::npos);
  EXPECT_NE(warnings.str().find("falling back to " + files[1]), std::string::npos);
  EXPECT_NE(warnings.str().find("skipping checkpoint " + files[1]), std::string::npos);

  Model resumed = model_with_dropout(5);
  o.resume = true;
  resumed.fit(run.toy.x, run.toy.y_onehot, o);
  expect_same_weights(reference, resumed);
}

TEST(Checkpoint, ResumeRefusesAnotherModelOrBatchSize) {
  ToyFit run;
  test::TempDir dir;
  FitOptions o = run.options;
  o.epochs = 1;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 1;
  model_with_dropout(6).fit(run.toy.x, run.toy.y_onehot, o);
  o.resume = true;
  o.epochs = 2;

  set_random_seed(6);
  Sequential other({6}, {Dense(8, "relu"), Dense(3, "softmax")});
  other.compile(Adam(0.01), "categorical_crossentropy");
  test::expect_error<ConfigError>(
      [&] { other.fit(run.toy.x, run.toy.y_onehot, o); },
      {"cannot resume from", "ckpt-000000010.tandem", "architecture differs"});
  FitOptions bigger = o;
  bigger.batch_size = 32;
  test::expect_error<ConfigError>(
      [&] { model_with_dropout(6).fit(run.toy.x, run.toy.y_onehot, bigger); },
      {"batch_size differs", "(16 there, 32 here)"});
}

TEST(Checkpoint, AFreshRunRefusesAnotherRunsCheckpointsUnlessToldToReplaceThem) {
  ToyFit run;
  test::TempDir dir;
  FitOptions o = run.options;
  o.epochs = 2;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 1;
  model_with_dropout(8).fit(run.toy.x, run.toy.y_onehot, o);
  const auto before = detail::CheckpointDir(dir.file("ckpt"), 3).list();
  ASSERT_EQ(before.size(), 2u);
  // A second fresh run into the same directory would delete them: refused, naming them.
  const std::string refused =
      config_error_of([&] { model_with_dropout(8).fit(run.toy.x, run.toy.y_onehot, o); });
  EXPECT_THAT(refused, HasSubstr("holds 2 checkpoints (newest " + before.back()));
  EXPECT_THAT(refused, HasSubstr("--overwrite-checkpoints"));
  EXPECT_EQ(detail::CheckpointDir(dir.file("ckpt"), 3).list(), before);
  // Told to: an earlier, longer run's checkpoint further on goes too (a later resume would
  // continue that other run).
  fs::copy_file(dir.file("ckpt/ckpt-000000020.tandem"), dir.file("ckpt/ckpt-000000990.tandem"));
  o.overwrite_checkpoints = true;
  model_with_dropout(8).fit(run.toy.x, run.toy.y_onehot, o);
  const auto files = detail::CheckpointDir(dir.file("ckpt"), 3).list();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files.back()).filename(), "ckpt-000000020.tandem");
}

// Every difference from the checkpoint's run is listed, and only named fields may differ;
// what is used is then this run's value.
TEST(Checkpoint, ResumeListsEveryDifferenceUnlessOverridden) {
  ToyFit run;
  test::TempDir dir;
  FitOptions o = run.options;
  o.epochs = 1;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 1;
  model_with_dropout(8).fit(run.toy.x, run.toy.y_onehot, o);
  o.epochs = 2;
  o.resume = true;
  o.batch_size = run.options.batch_size * 2;
  Model other = model_with_dropout(8);
  other.compile(Adam(0.5), "categorical_crossentropy", {"accuracy"});
  const std::string refused = config_error_of([&] { other.fit(run.toy.x, run.toy.y_onehot, o); });
  for (const char* field : {"batch_size", "learning_rate"}) {
    EXPECT_THAT(refused, HasSubstr(std::string("its ") + field + " differs"));
  }
  o.resume_overrides = {"batch_size", "learning_rate"};
  other.fit(run.toy.x, run.toy.y_onehot, o);
  EXPECT_DOUBLE_EQ(other.learning_rate(), 0.5);  // this run's rate, as overridden
  o.resume_overrides = {"architecture"};
  EXPECT_THAT(config_error_of([&] { other.fit(run.toy.x, run.toy.y_onehot, o); }),
              HasSubstr("not a field a resume may change"));
}

// Sets stop_training after a given batch of a given epoch.
class StopAt : public Callback {
 public:
  StopAt(int epoch, int64_t batch) : epoch_(epoch), batch_(batch) {}
  void on_epoch_begin(int epoch, const Logs&) override { current_ = epoch; }
  void on_train_batch_end(int64_t batch, const Logs&) override {
    if (current_ == epoch_ && batch == batch_) model().stop_training = true;
  }

 private:
  int epoch_, current_ = -1;
  int64_t batch_;
};

// A checkpoint whose numbers are out of range (a negative step used to crash the resume)
// is a FormatError naming the field; resume then falls back to the one before it.
TEST(Checkpoint, OutOfRangeFieldsAreFormatErrors) {
  ToyFit run;
  test::TempDir dir;
  FitOptions o = run.options;
  o.epochs = 1;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 1;
  o.checkpoint_unit = "step";
  model_with_dropout(8).fit(run.toy.x, run.toy.y_onehot, o);
  const auto files = detail::CheckpointDir(dir.file("ckpt"), 3).list();
  ASSERT_GE(files.size(), 1u);
  for (const auto& [field, value] : std::vector<std::pair<std::string, double>>{
           {"step", -5}, {"epoch", -1}, {"global_step", -2}, {"samples", -3}}) {
    detail::Container c = detail::read_container(files.back(), "checkpoint");
    c.header["progress"][field] = static_cast<int64_t>(value);
    const std::string bytes = detail::encode_container(std::move(c));
    Model m = model_with_dropout(8);
    detail::FitProgress progress;
    try {
      detail::decode_checkpoint(bytes, "forged", m.state(), progress, nlohmann::json::object());
      ADD_FAILURE() << field << " " << value << " was accepted";
    } catch (const FormatError& e) {
      EXPECT_THAT(e.what(), HasSubstr("out of range: " + field)) << e.what();
    }
  }
}

TEST(Checkpoint, AnEpochStoppedEarlyIsNotCheckpointedAsFinished) {
  ToyFit run;
  test::TempDir dir;
  FitOptions o = run.options;
  o.checkpoint_dir = dir.file("ckpt");
  o.checkpoint_every = 1;
  o.callbacks = {std::make_shared<StopAt>(1, 3)};
  model_with_dropout(9).fit(run.toy.x, run.toy.y_onehot, o);
  const auto files = detail::CheckpointDir(dir.file("ckpt"), 3).list();
  ASSERT_EQ(files.size(), 1u);  // epoch 1 only; epoch 2 stopped after 4 of 10 steps
  EXPECT_EQ(fs::path(files.back()).filename(), "ckpt-000000010.tandem");
}

TEST(Checkpoint, OptionsAreChecked) {
  ToyFit run;
  Model m = model_with_dropout(7);
  FitOptions o = run.options;
  o.checkpoint_every = 2;
  test::expect_error<ConfigError>([&] { m.fit(run.toy.x, run.toy.y_onehot, o); },
                                  {"checkpoint_dir"});
  o.checkpoint_dir = "/tmp/unused";
  o.checkpoint_unit = "hour";
  test::expect_error<ConfigError>([&] { m.fit(run.toy.x, run.toy.y_onehot, o); },
                                  {"checkpoint_unit", "hour"});
  o.checkpoint_unit = "epoch";
  o.grad_compression = "fp8";
  test::expect_error<ConfigError>([&] { m.fit(run.toy.x, run.toy.y_onehot, o); }, {"fp8"});
  o.grad_compression = "bf16";
  o.deterministic = true;
  test::expect_error<ConfigError>([&] { m.fit(run.toy.x, run.toy.y_onehot, o); },
                                  {"cannot be deterministic"});
}

TEST(Checkpoint, DirectoryThatCannotBeCreatedIsAnIoError) {
  test::TempDir dir;
  std::ofstream(dir.file("plain_file")) << "x";
  test::expect_error<IoError>([&] { detail::CheckpointDir(dir.file("plain_file/sub"), 3); },
                              {"plain_file/sub", "cannot create the checkpoint directory"});
}

TEST(Samples, FingerprintFollowsValuesShapeAndSlice) {
  const auto toy = test::make_toy(40, 4, 3, 1);
  const Samples a(toy.x);
  EXPECT_EQ(a.fingerprint(), Samples(toy.x).fingerprint());
  Tensor changed(toy.x.shape());  // a copy with its own storage
  std::copy(toy.x.values().begin(), toy.x.values().end(), changed.values().begin());
  changed[17] += 1e-6f;
  EXPECT_NE(a.fingerprint(), Samples(changed).fingerprint());
  EXPECT_NE(a.slice(0, 39).fingerprint(), a.fingerprint());
  EXPECT_EQ(a.slice(5, 20).fingerprint(), a.slice(5, 20).fingerprint());
  EXPECT_NE(a.slice(5, 20).fingerprint(), a.slice(6, 21).fingerprint());
}

}  // namespace
}  // namespace tandem
