// The standard callbacks, each observed through its effect.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace tandem {
namespace {

Model mlp() {
  auto in = Input({4});
  return Model(in, Dense(3, "softmax")(Dense(16, "relu")(in)));
}

TEST(Callbacks, EarlyStoppingStopsAfterPatienceAndRestoresBest) {
  set_random_seed(1);
  auto toy = test::make_toy(60, 4, 3, 2);
  Model m = mlp();
  // lr 0: the monitored loss never improves after the first epoch.
  m.compile(SGD(0.0), "categorical_crossentropy");
  auto stop = EarlyStopping({.monitor = "loss", .patience = 2, .restore_best_weights = true});
  History h = m.fit(toy.x, toy.y_onehot,
                    {.batch_size = 20, .epochs = 10, .verbose = 0, .callbacks = {stop}});
  EXPECT_EQ(h.epoch.size(), 3u);  // epoch 0 sets the best; 1 and 2 wait; stop after 2
}

TEST(Callbacks, EarlyStoppingKeepsGoingWhileImproving) {
  set_random_seed(2);
  auto toy = test::make_toy(200, 4, 3, 3);
  Model m = mlp();
  m.compile(Adam(0.01), "categorical_crossentropy");
  auto stop = EarlyStopping({.monitor = "loss", .min_delta = 1e-9, .patience = 1});
  History h = m.fit(toy.x, toy.y_onehot,
                    {.batch_size = 20, .epochs = 4, .verbose = 0, .seed = 1, .callbacks = {stop}});
  EXPECT_EQ(h.epoch.size(), 4u);
}

TEST(Callbacks, ModelCheckpointWritesEachEpochOrOnlyTheBest) {
  test::TempDir dir;
  set_random_seed(3);
  auto toy = test::make_toy(60, 4, 3, 4);
  Model m = mlp();
  m.compile(Adam(0.01), "categorical_crossentropy");
  auto every = ModelCheckpoint(dir.file("ck-{epoch:02d}.tandem"), {.monitor = "loss"});
  m.fit(toy.x, toy.y_onehot, {.batch_size = 20, .epochs = 3, .verbose = 0, .callbacks = {every}});
  for (const char* f : {"ck-01.tandem", "ck-02.tandem", "ck-03.tandem"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.file(f))) << f;
  }
  Model back = Model::load(dir.file("ck-03.tandem"));
  EXPECT_EQ(test::max_abs_diff(back.predict(toy.x), m.predict(toy.x)), 0.0);

  // save_best_only: with lr 0 the loss never improves after epoch 1, so the file written
  // then must be the one still there after epoch 2. A probe after the checkpoint records
  // the file's inode at each epoch's end: every save renames a new file into place (made
  // before the old one goes, so its inode differs), while timestamps are too coarse.
  struct FileIdentities : Callback {
    std::string path;
    std::vector<ino_t> seen;
    void on_epoch_end(int, const Logs&) override {
      struct stat st {};
      ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
      seen.push_back(st.st_ino);
    }
  };
  for (const bool best_only : {true, false}) {
    Model n = mlp();
    n.compile(SGD(0.0), "categorical_crossentropy");
    const std::string path = dir.file(best_only ? "best.tandem" : "every.tandem");
    auto checkpoint = ModelCheckpoint(
        path, {.monitor = "loss", .save_best_only = best_only, .save_weights_only = true});
    auto probe = std::make_shared<FileIdentities>();
    probe->path = path;
    n.fit(toy.x, toy.y_onehot,
          {.batch_size = 20, .epochs = 2, .verbose = 0, .callbacks = {checkpoint, probe}});
    ASSERT_EQ(probe->seen.size(), 2u);
    if (best_only) {
      EXPECT_EQ(probe->seen[0], probe->seen[1]) << "epoch 2 did not improve: no new write";
    } else {
      EXPECT_NE(probe->seen[0], probe->seen[1]) << "every epoch writes";
    }
  }
}

TEST(Callbacks, TerminateOnNaNStopsAtTheFirstBadBatch) {
  set_random_seed(4);
  auto toy = test::make_toy(40, 4, 3, 5);
  toy.y_onehot[13 * 3 + 1] = std::nanf("");  // sample 13's target poisons its batch
  Model m = mlp();
  m.compile(SGD(0.1), "categorical_crossentropy");
  testing::internal::CaptureStdout();
  History h = m.fit(toy.x, toy.y_onehot,
                    {.batch_size = 10,
                     .epochs = 5,
                     .verbose = 0,
                     .shuffle = false,
                     .callbacks = {TerminateOnNaN()}});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("Batch 1: Invalid loss"), std::string::npos) << out;
  EXPECT_EQ(h.epoch.size(), 1u);
}

TEST(Callbacks, CSVLoggerWritesHeaderAndRows) {
  test::TempDir dir;
  set_random_seed(5);
  auto toy = test::make_toy(50, 4, 3, 6);
  Model m = mlp();
  m.compile("sgd", "categorical_crossentropy", {"accuracy"});
  m.fit(toy.x, toy.y_onehot,
        {.batch_size = 10,
         .epochs = 2,
         .verbose = 0,
         .validation_split = 0.2,
         .callbacks = {CSVLogger(dir.file("log.csv"))}});
  std::ifstream in(dir.file("log.csv"));
  std::string header, row1, row2, extra;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header, "epoch,accuracy,loss,val_accuracy,val_loss");
  EXPECT_EQ(row1.rfind("0,", 0), 0u);
  EXPECT_EQ(row2.rfind("1,", 0), 0u);
  EXPECT_FALSE(std::getline(in, extra));
}

TEST(Callbacks, LearningRateSchedulerSetsRatePerEpoch) {
  set_random_seed(6);
  auto toy = test::make_toy(20, 4, 3, 7);
  Model m = mlp();
  m.compile(SGD(0.1), "categorical_crossentropy");
  std::vector<double> seen;
  auto schedule = LearningRateScheduler([&](int epoch, double lr) {
    seen.push_back(lr);
    return 0.1 / (epoch + 1);
  });
  m.fit(toy.x, toy.y_onehot,
        {.batch_size = 10, .epochs = 3, .verbose = 0, .callbacks = {schedule}});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_DOUBLE_EQ(seen[1], 0.1);
  EXPECT_DOUBLE_EQ(seen[2], 0.05);
  EXPECT_DOUBLE_EQ(m.learning_rate(), 0.1 / 3);
}

}  // namespace
}  // namespace tandem
