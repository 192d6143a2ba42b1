// fit / evaluate / predict / train_on_batch behaviour on small learnable problems.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tandem {
namespace {

Model small_mlp(int64_t features, int64_t classes, const std::string& out_act = "softmax") {
  auto in = Input({features});
  auto x = Dense(32, "relu")(in);
  auto out = Dense(classes, out_act)(x);
  return Model(in, out);
}

TEST(Fit, LearnsToyProblemAndReportsHistory) {
  set_random_seed(1);
  set_num_threads(2);
  const auto toy = test::make_toy(300, 4, 3, 1);
  Model model = small_mlp(4, 3);
  model.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  History h =
      model.fit(toy.x, toy.y_onehot, {.batch_size = 32, .epochs = 15, .verbose = 0, .seed = 3});
  ASSERT_EQ(h.epoch.size(), 15u);
  ASSERT_EQ(h.history["loss"].size(), 15u);
  EXPECT_LT(h.history["loss"].back(), 0.5 * h.history["loss"].front());
  EXPECT_GT(h.history["accuracy"].back(), 0.9);
  auto scores = model.evaluate(toy.x, toy.y_onehot, {.batch_size = 50, .verbose = 0});
  EXPECT_GT(scores["accuracy"], 0.9);
  Tensor p = model.predict(toy.x, {.batch_size = 64});
  ASSERT_EQ(p.shape(), (Shape{toy.x.dim(0), 3}));
  for (int64_t i = 0; i < p.dim(0); ++i) {
    EXPECT_NEAR(p[i * 3] + p[i * 3 + 1] + p[i * 3 + 2], 1.0, 1e-5);
  }
}

TEST(Fit, SameSeedSameWeightsDifferentSeedDifferent) {
  const auto toy = test::make_toy(300, 4, 3, 1);
  auto train = [&](uint64_t init_seed, uint64_t fit_seed) {
    set_random_seed(init_seed);
    Model m = small_mlp(4, 3);
    m.compile("rmsprop", "categorical_crossentropy");
    m.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 2, .verbose = 0, .seed = fit_seed});
    return m.get_weights();
  };
  const auto a = train(5, 7), b = train(5, 7), c = train(5, 8);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(test::max_abs_diff(a[i], b[i]), 0.0);
  EXPECT_GT(test::max_abs_diff(a[0], c[0]), 0.0);
}

TEST(Fit, PartialLastBatchCountsEverySampleOnce) {
  // 70 samples in batches of 32: 32, 32, 6. One epoch of plain SGD with lr 0 leaves the
  // weights, so the epoch loss must equal evaluate's loss over all 70 samples.
  set_random_seed(2);
  auto toy = test::make_toy(70, 4, 3, 9);
  Model model = small_mlp(4, 3);
  model.compile(SGD(0.0), "categorical_crossentropy", {"accuracy"});
  History h = model.fit(toy.x, toy.y_onehot, {.batch_size = 32, .epochs = 1, .verbose = 0});
  auto scores = model.evaluate(toy.x, toy.y_onehot, {.batch_size = 70, .verbose = 0});
  EXPECT_NEAR(h.history["loss"][0], scores["loss"], 1e-6);
  EXPECT_NEAR(h.history["accuracy"][0], scores["accuracy"], 1e-12);
  EXPECT_EQ(model.run_times().train_steps, 3);
}

TEST(Fit, ValidationSplitUsesTheLastSamples) {
  set_random_seed(3);
  auto toy = test::make_toy(100, 4, 3, 4);
  Model model = small_mlp(4, 3);
  model.compile(SGD(0.0), "categorical_crossentropy", {"accuracy"});
  History h = model.fit(toy.x, toy.y_onehot,
                        {.batch_size = 10, .epochs = 1, .verbose = 0, .validation_split = 0.2});
  ASSERT_EQ(h.history.count("val_loss"), 1u);
  ASSERT_EQ(h.history.count("val_accuracy"), 1u);
  Tensor x_val({20, 4}, std::vector<float>(toy.x.data() + 80 * 4, toy.x.data() + 100 * 4));
  Tensor y_val({20, 3},
               std::vector<float>(toy.y_onehot.data() + 80 * 3, toy.y_onehot.data() + 100 * 3));
  auto scores = model.evaluate(x_val, y_val, {.verbose = 0});
  EXPECT_NEAR(h.history["val_loss"][0], scores["loss"], 1e-6);
  // validation_data gives the same numbers.
  FitOptions with_data{.batch_size = 10, .epochs = 1, .verbose = 0};
  with_data.validation_data.emplace(x_val, y_val);
  History h2 = model.fit(toy.x, toy.y_onehot, with_data);
  EXPECT_NEAR(h2.history["val_loss"][0], scores["loss"], 1e-6);
}

TEST(Fit, SparseLabelsAndBytesInputs) {
  set_random_seed(4);
  auto toy = test::make_toy(200, 4, 3, 5);
  // uint8 inputs scaled on the fly equal the same floats given directly.
  ByteArray bytes({200, 4});
  Tensor floats({200, 4});
  for (int64_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>((toy.x[i] + 1.f) * 127.f);
    floats[i] = bytes[i] * (1.f / 255);  // what scaled() computes
  }
  ByteArray labels({200});
  for (int64_t i = 0; i < 200; ++i) labels[i] = static_cast<uint8_t>(toy.y_labels[i]);
  auto run = [&](const Samples& x) {
    set_random_seed(11);
    Model m = small_mlp(4, 3);
    m.compile(Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
    return m.fit(x, labels, {.batch_size = 20, .epochs = 3, .verbose = 0, .seed = 1});
  };
  History a = run(scaled(bytes, 1.f / 255)), b = run(floats);
  EXPECT_EQ(a.history["loss"], b.history["loss"]);
  EXPECT_LT(a.history["loss"].back(), a.history["loss"].front());
}

TEST(Fit, TrainOnBatchReturnsLossBeforeUpdate) {
  set_random_seed(5);
  auto toy = test::make_toy(16, 4, 3, 6);
  Model model = small_mlp(4, 3);
  model.compile(SGD(0.5), "categorical_crossentropy", {"accuracy"});
  const double before = model.evaluate(toy.x, toy.y_onehot, {.verbose = 0})["loss"];
  auto logs = model.train_on_batch(toy.x, toy.y_onehot);
  EXPECT_NEAR(logs["loss"], before, 1e-6);
  EXPECT_LT(model.evaluate(toy.x, toy.y_onehot, {.verbose = 0})["loss"], before);
}

// train_on_batch keeps its strategy between calls: steps on batches of 8, 16 and 8 rows
// are bitwise the same steps as fit gives, compile() replaces the optimizer it uses (a
// stale one would be a use-after-free under ASan), and another thread count still trains.
TEST(Fit, TrainOnBatchKeepsItsStrategyAcrossBatchesCompilesAndThreads) {
  auto toy = test::make_toy(16, 4, 3, 12);
  const Samples x(toy.x), y(toy.y_onehot);
  set_random_seed(13);
  Model kept = small_mlp(4, 3);
  set_random_seed(13);
  Model fitted = small_mlp(4, 3);
  kept.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  fitted.compile(Adam(0.01), "categorical_crossentropy", {"accuracy"});
  for (const int64_t rows : {8, 16, 8}) {
    const double loss = kept.train_on_batch(x.slice(0, rows), y.slice(0, rows)).at("loss");
    const History h = fitted.fit(x.slice(0, rows), y.slice(0, rows),
                                 {.batch_size = rows, .epochs = 1, .verbose = 0, .shuffle = false});
    EXPECT_EQ(loss, h.history.at("loss").front()) << rows << " rows";
    const auto a = kept.get_weights(), b = fitted.get_weights();
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(test::max_abs_diff(a[k], b[k]), 0.0) << rows << " rows, array " << k;
    }
  }
  kept.compile(SGD(0.0), "categorical_crossentropy");
  const auto before = kept.get_weights();
  kept.train_on_batch(x, y);
  for (size_t k = 0; k < before.size(); ++k) {
    EXPECT_EQ(test::max_abs_diff(before[k], kept.get_weights()[k]), 0.0) << "array " << k;
  }
  kept.compile(SGD(0.5), "categorical_crossentropy");
  const int threads = num_threads();
  set_num_threads(1);
  const double first = kept.train_on_batch(x, y).at("loss");
  set_num_threads(threads);
  EXPECT_LT(kept.train_on_batch(x, y).at("loss"), first);
}

TEST(Fit, DropoutOnlyInTraining) {
  set_random_seed(6);
  auto in = Input({8});
  auto out = Dense(2)(Dropout(0.5)(in));
  Model model(in, out);
  model.compile(SGD(0.0), "mse");
  auto toy = test::make_toy(10, 8, 2, 7);
  Tensor a = model.predict(toy.x), b = model.predict(toy.x);
  EXPECT_EQ(test::max_abs_diff(a, b), 0.0);  // inference is deterministic: no dropout
  // In training the loss differs from inference's (masks drop half the inputs).
  const double eval = model.evaluate(toy.x, toy.y_onehot, {.verbose = 0})["loss"];
  const double train = model.train_on_batch(toy.x, toy.y_onehot)["loss"];
  EXPECT_NE(eval, train);
}

TEST(Fit, VerboseTwoPrintsOneLinePerEpoch) {
  set_random_seed(7);
  auto toy = test::make_toy(40, 4, 3, 8);
  Model model = small_mlp(4, 3);
  model.compile("sgd", "categorical_crossentropy", {"accuracy"});
  testing::internal::CaptureStdout();
  model.fit(toy.x, toy.y_onehot, {.batch_size = 10, .epochs = 2, .verbose = 2});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("Epoch 1/2\n4/4 - "), std::string::npos) << out;
  EXPECT_NE(out.find("Epoch 2/2\n4/4 - "), std::string::npos) << out;
  EXPECT_NE(out.find(" - loss: "), std::string::npos);
  EXPECT_NE(out.find(" - accuracy: "), std::string::npos);
  EXPECT_NE(out.find("s/step\n"), std::string::npos);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// compile() during fit would free the optimizer state the running step uses.
TEST(Fit, CompileInsideFitIsRefused) {
  class Recompile : public Callback {
   public:
    void on_epoch_end(int, const Logs&) override {
      try {
        model().compile("adam", "mean_squared_error");
      } catch (const ConfigError& e) {
        message = e.what();
      }
    }
    std::string message;
  };
  const auto toy = test::make_toy(64, 4, 3, 1);
  Model model = small_mlp(4, 3);
  model.compile("sgd", "categorical_crossentropy");
  auto cb = std::make_shared<Recompile>();
  model.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {cb}});
  EXPECT_NE(cb->message.find("fit is running"), std::string::npos) << cb->message;
  model.compile("adam", "categorical_crossentropy");  // after fit: fine
}

// A batch larger than the data sizes nothing beyond the data (it used to reserve buffers for
// batch_size rows: 2^40 rows was a bad_alloc, 2^62 an overflow).
TEST(Fit, BatchLargerThanTheDataIsOneBatch) {
  const auto toy = test::make_toy(40, 4, 3, 1);
  Model model = small_mlp(4, 3);
  model.compile("sgd", "categorical_crossentropy", {"acc"});
  for (int64_t batch : {int64_t{1} << 40, int64_t{1} << 62}) {
    const History h = model.fit(toy.x, toy.y_onehot, {.batch_size = batch, .verbose = 0});
    EXPECT_EQ(model.run_times().train_steps, 1);
    // metrics=["acc"] names the logs "acc", as Keras does.
    EXPECT_EQ(h.history.count("acc"), 1u);
    EXPECT_EQ(h.history.count("accuracy"), 0u);
  }
}

// A named accuracy computes what it names, as Keras's does ("binary_accuracy" on a softmax
// output compares each output with 0.5); "accuracy" picks by shapes, as Keras 3 does. A named
// accuracy that cannot read the loss's labels is an error naming both.
TEST(Fit, NamedAccuraciesComputeWhatTheyName) {
  // Two samples, three outputs: predicted classes 0 and 2, labels 0 and 1.
  auto in = Input({3});
  Model model(in, Activation("linear")(in));
  const Tensor x({2, 3}, {0.9f, 0.2f, 0.1f, 0.1f, 0.3f, 0.6f});
  const Tensor onehot({2, 3}, {1, 0, 0, 0, 1, 0});
  const Tensor sparse({2, 1}, {0, 1});
  auto accuracy = [&](const std::string& loss, const std::string& metric, const Tensor& y) {
    model.compile("sgd", loss, {metric});
    return model.evaluate(x, y).at(metric);
  };
  EXPECT_DOUBLE_EQ(accuracy("categorical_crossentropy", "accuracy", onehot), 0.5);
  EXPECT_DOUBLE_EQ(accuracy("categorical_crossentropy", "Accuracy", onehot), 0.5);
  EXPECT_DOUBLE_EQ(accuracy("categorical_crossentropy", "categorical_accuracy", onehot), 0.5);
  // Element-wise with threshold 0.5: sample 0 gets 3 of 3 right, sample 1 gets 1 of 3.
  EXPECT_DOUBLE_EQ(accuracy("categorical_crossentropy", "binary_accuracy", onehot), 4.0 / 6);
  EXPECT_DOUBLE_EQ(accuracy("mean_squared_error", "binary_accuracy", onehot), 4.0 / 6);
  // Soft labels never equal a thresholded output, as in Keras.
  EXPECT_DOUBLE_EQ(
      accuracy("mean_squared_error", "binary_accuracy", Tensor({2, 3}, {1, 0, 0, 0, 0, 0.7f})),
      (3.0 + 2.0) / 6);
  // Binary cross-entropy on several outputs: Keras 3's "accuracy" is categorical.
  EXPECT_DOUBLE_EQ(accuracy("binary_crossentropy", "accuracy", onehot), 0.5);
  EXPECT_DOUBLE_EQ(accuracy("binary_crossentropy", "binary_accuracy", onehot), 4.0 / 6);
  EXPECT_DOUBLE_EQ(accuracy("sparse_categorical_crossentropy", "accuracy", sparse), 0.5);
  EXPECT_DOUBLE_EQ(
      accuracy("sparse_categorical_crossentropy", "sparse_categorical_accuracy", sparse), 0.5);
  test::expect_error<ConfigError>(
      [&] { model.compile("sgd", "sparse_categorical_crossentropy", {"categorical_accuracy"}); },
      {"metric 'categorical_accuracy'", "sparse_categorical_crossentropy takes class indices"});
  test::expect_error<ConfigError>(
      [&] { model.compile("sgd", "categorical_crossentropy", {"sparse_categorical_accuracy"}); },
      {"metric 'sparse_categorical_accuracy' reads class indices"});
  test::expect_error<ConfigError>([&] { model.compile("sgd", "mse", {"top_k_accuracy"}); },
                                  {"unknown metric 'top_k_accuracy'"});
}

}  // namespace
}  // namespace tandem
