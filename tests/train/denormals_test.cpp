// Denormal floats flushed while tandem computes (core/denormals.h): on the caller's thread
// and its OpenMP team for the call, on the devices' threads; the caller back in its own
// bits for callbacks and after the call, its team in the caller's bits after it (the
// enclosing call's when nested), exceptions included. Each check computes with a denormal
// and looks at the result, so a thread in the wrong mode gives a wrong number.
#include "core/denormals.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <ostream>

#include "skip.h"
#include "test_util.h"

namespace tandem {
namespace {

using detail::Denormals;

constexpr float kTiny = 1e-40f;  // a denormal float32
constexpr float kHuge = 1e30f;   // kTiny * kHuge = 1e-10, a normal float

// Whether this thread computes with denormals: 1e-40 * 1 is 1e-40 kept, 0 flushed.
bool computes_denormals() {
  volatile float tiny = kTiny;
  volatile float one = 1.f;
  return tiny * one != 0.f;
}

// y = w x, one weight, no bias: w = 1e-40 reads as 0 where denormals are flushed.
Model tiny_weight_model() {
  auto in = Input({1});
  auto out = Dense(1, "linear", {.use_bias = false})(in);
  Model model(in, out);
  model.set_weights({Tensor({1, 1}, {kTiny})});
  return model;
}

Tensor column(std::vector<float> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor({n, 1}, std::move(values));
}

// How many of a team of `threads` compute with denormals (each thread tries).
int team_keeping(int threads) {
  std::atomic<int> kept{0};
#pragma omp parallel num_threads(threads)
  if (computes_denormals()) ++kept;
  return kept.load();
}

// Restores the process's setting, the thread count and the test thread's mode whatever a
// test does.
class DenormalFloats : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!detail::can_flush_denormals()) TANDEM_SKIP("this CPU cannot flush denormals");
    ASSERT_EQ(detail::thread_denormals(), Denormals::kept);
    ASSERT_TRUE(computes_denormals());
    threads_ = num_threads();
    omp_threads_ = omp_get_max_threads();
    set_num_threads(2);
    ASSERT_EQ(team_keeping(2), 2);
  }
  void TearDown() override {
    set_flush_denormals(true);
    set_num_threads(threads_);
#pragma omp parallel num_threads(2)
    detail::set_thread_denormals(Denormals::kept);
    omp_set_num_threads(omp_threads_);  // the backend sets the caller's
  }

 private:
  int threads_ = 0, omp_threads_ = 1;
};

TEST_F(DenormalFloats, ACallsTeamFlushesAndFollowsTheCallerAfter) {
  {
    const detail::ComputeDenormals fp(2);
    EXPECT_FALSE(computes_denormals());
    EXPECT_EQ(team_keeping(2), 0);
  }
  EXPECT_TRUE(computes_denormals());
  EXPECT_EQ(team_keeping(2), 2);
  // A team thread that flushed before a call that keeps denormals has the caller's bits
  // after it, as a thread OpenMP starts anew would.
#pragma omp parallel num_threads(2)
  if (omp_get_thread_num() != 0) detail::set_thread_denormals(Denormals::flushed);
  ASSERT_EQ(team_keeping(2), 1);
  set_flush_denormals(false);
  {
    const detail::ComputeDenormals fp(2);
    EXPECT_EQ(team_keeping(2), 2);
  }
  EXPECT_EQ(team_keeping(2), 2);
}

TEST_F(DenormalFloats, ACallNestedInACallbackLeavesTheOuterTeamFlushed) {
  const detail::ComputeDenormals outer(4);
  EXPECT_EQ(team_keeping(4), 0);
  {
    const detail::ScopedThreadDenormals callback(outer.caller_bits());
    EXPECT_TRUE(computes_denormals());
    // A smaller region ends threads 2 and 3 (libgomp); the nested call starts them again
    // from a caller that keeps denormals, and hands them back to the outer call's bits.
    EXPECT_EQ(team_keeping(2), 1);
    const detail::ComputeDenormals inner(4);  // a predict inside the callback
    EXPECT_EQ(team_keeping(4), 0);
  }
  EXPECT_FALSE(computes_denormals());
  EXPECT_EQ(team_keeping(4), 0);
}

#if defined(__x86_64__)
TEST_F(DenormalFloats, ACallersPartialBitsComeBackExactly) {
  constexpr uint32_t kFlushToZeroOnly = 0x8000;  // FTZ without DAZ
  detail::set_thread_denormal_bits(kFlushToZeroOnly);
  EXPECT_EQ(detail::thread_denormals(), Denormals::kept);
  { const detail::ComputeDenormals fp(1); }
  EXPECT_EQ(detail::thread_denormal_bits(), kFlushToZeroOnly);
  { const detail::ComputeDenormals fp(2); }
  EXPECT_EQ(detail::thread_denormal_bits(), kFlushToZeroOnly);
}
#endif

TEST_F(DenormalFloats, ThreadModeIsWhatTheArithmeticDoes) {
  detail::set_thread_denormals(Denormals::flushed);
  EXPECT_EQ(detail::thread_denormals(), Denormals::flushed);
  EXPECT_FALSE(computes_denormals());
  {
    const detail::ScopedThreadDenormals kept(detail::denormal_bits(Denormals::kept));
    EXPECT_TRUE(computes_denormals());
  }
  EXPECT_FALSE(computes_denormals());
  detail::set_thread_denormals(Denormals::kept);
  EXPECT_TRUE(computes_denormals());
}

TEST_F(DenormalFloats, PredictAndEvaluateFlushOnTheCallersTeamAndRestoreIt) {
  Model model = tiny_weight_model();
  model.compile(SGD(0.0), "mean_squared_error");
  const Tensor x = column({kHuge, kHuge}), y = column({0.f, 0.f});
  EXPECT_EQ(model.predict(x, {.verbose = 0})[0], 0.f);
  EXPECT_EQ(model.evaluate(x, y, {.verbose = 0})["loss"], 0.0);
  // The caller and every thread of its team are back in the caller's mode.
  EXPECT_TRUE(computes_denormals());
  EXPECT_EQ(team_keeping(2), 2);

  set_flush_denormals(false);
  EXPECT_FALSE(flush_denormals());
  EXPECT_NEAR(model.predict(x, {.verbose = 0})[0], 1e-10, 1e-12);
  EXPECT_GT(model.evaluate(x, y, {.verbose = 0})["loss"], 0.0);
}

// One step of SGD with learning rate 0 writes w - 0 * g back: the weight itself where the
// updating thread keeps denormals, 0 where it flushes them.
struct Placement {
  int devices;
  const char* strategy;
  const char* reducer;
};

void PrintTo(const Placement& p, std::ostream* os) {
  *os << p.devices << " device(s), " << p.strategy << ", " << p.reducer;
}

class FitDenormalFloats : public DenormalFloats, public ::testing::WithParamInterface<Placement> {};

TEST_P(FitDenormalFloats, DevicesFlushAndCallbacksRunInTheCallersMode) {
  const Placement run = GetParam();
  const Tensor x = column({kHuge, kHuge}), y = column({0.f, 0.f});
  // Checks the callback's own arithmetic, and predicts from inside it (a call nested in fit)
  // with a model of its own, whose weight is still 1e-40.
  struct Probe : Callback {
    explicit Probe(Tensor x) : x(std::move(x)) {}
    Tensor x;
    Model other = tiny_weight_model();
    std::atomic<int> calls{0}, flushed{0};
    std::vector<float> predicted;
    void on_train_batch_end(int64_t, const Logs&) override {
      ++calls;
      if (!computes_denormals()) ++flushed;
      predicted.push_back(other.predict(x, {.verbose = 0})[0]);
      if (!computes_denormals()) ++flushed;
    }
  };
  for (const bool flush : {true, false}) {
    SCOPED_TRACE(flush ? "flushed" : "kept");
    set_flush_denormals(flush);
    Model model = tiny_weight_model();
    model.compile(SGD(0.0), "mean_squared_error");
    auto probe = std::make_shared<Probe>(x);
    const History h = model.fit(x, y,
                                {.batch_size = 2,
                                 .epochs = 1,
                                 .verbose = 0,
                                 .validation_data = std::pair<Samples, Samples>{x, y},
                                 .callbacks = {probe},
                                 .devices = run.devices,
                                 .strategy = run.strategy,
                                 .threads_per_device = 1,
                                 .reducer = run.reducer});
    EXPECT_EQ(model.get_weights()[0][0], flush ? 0.f : kTiny);
    // Validation runs after the step, on the updated weight (0 where flushed).
    if (flush) {
      EXPECT_EQ(h.history.at("val_loss")[0], 0.0);
    } else {
      EXPECT_GT(h.history.at("val_loss")[0], 0.0);
    }
    EXPECT_EQ(probe->calls.load(), 1);
    EXPECT_EQ(probe->flushed.load(), 0);  // the callback ran in the test thread's mode
    // The other model's 1e-40 * 1e30: 0 flushed, 1e-10 kept.
    ASSERT_EQ(probe->predicted.size(), 1u);
    if (flush) {
      EXPECT_EQ(probe->predicted[0], 0.f);
    } else {
      EXPECT_NEAR(probe->predicted[0], 1e-10, 1e-12);
    }
    EXPECT_TRUE(computes_denormals());
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, FitDenormalFloats,
                         ::testing::Values(Placement{1, "mirrored", "sharded"},
                                           Placement{2, "mirrored", "sharded"},
                                           Placement{2, "mirrored", "allreduce"},
                                           Placement{2, "host", "sharded"}),
                         [](const auto& info) {
                           return std::to_string(info.param.devices) + "_" + info.param.strategy +
                                  "_" + info.param.reducer;
                         });

TEST_F(DenormalFloats, AFitEndedByACallbackRestoresTheCallerAndItsTeam) {
  struct Thrower : Callback {
    void on_train_batch_end(int64_t, const Logs&) override {
      throw ConfigError("the callback's own error");
    }
  };
  Model model = tiny_weight_model();
  model.compile(SGD(0.0), "mean_squared_error");
  EXPECT_THROW(
      model.fit(column({kHuge, kHuge}), column({0.f, 0.f}),
                {.batch_size = 2, .verbose = 0, .callbacks = {std::make_shared<Thrower>()}}),
      ConfigError);
  EXPECT_TRUE(computes_denormals());
  EXPECT_EQ(team_keeping(2), 2);
}

TEST_F(DenormalFloats, TrainOnBatchFlushesAndRestores) {
  Model model = tiny_weight_model();
  model.compile(SGD(0.0), "mean_squared_error");
  model.train_on_batch(column({kHuge, kHuge}), column({0.f, 0.f}));
  EXPECT_EQ(model.get_weights()[0][0], 0.f);
  EXPECT_TRUE(computes_denormals());
  EXPECT_EQ(team_keeping(2), 2);
}

}  // namespace
}  // namespace tandem
