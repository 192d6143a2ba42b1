// The timeline (--profile / FitOptions::trace_path): valid Chrome trace JSON with a lane
// per device, every phase, every layer's forward and backward, and nothing recorded when
// tracing is off.
#include "profile/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/model_state.h"
#include "test_util.h"

namespace tandem {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);  // throws on invalid JSON
}

TEST(Trace, FitWritesEveryPhaseLayerAndLaneAsChromeTraceEvents) {
  test::TempDir dir;
  auto toy = test::make_toy(96, 5, 3, 8);
  set_random_seed(8);
  Sequential m({5}, {Dense(16, "relu", {.name = "hidden"}), Dense(3, "softmax", {.name = "out"})});
  m.compile(SGD(0.1), "categorical_crossentropy", {"accuracy"});
  m.fit(toy.x, toy.y_onehot,
        {.batch_size = 16,
         .epochs = 2,
         .verbose = 0,
         .validation_split = 0.25,
         .devices = 2,
         .threads_per_device = 1,
         .shared_parameters = false,
         .trace_path = dir.file("t.json")});
  const json trace = read_json(dir.file("t.json"));
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::set<std::string> lanes, phases, forward, backward;
  int steps = 0;
  for (const auto& e : trace.at("traceEvents")) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    if (e.at("ph") == "M") {
      if (e.at("name") == "thread_name") lanes.insert(e.at("args").at("name"));
      continue;
    }
    ASSERT_EQ(e.at("ph"), "X");
    ASSERT_GE(e.at("dur").get<double>(), 0.0);
    ASSERT_GE(e.at("ts").get<double>(), 0.0);
    const std::string cat = e.at("cat"), name = e.at("name");
    if (cat == "phase") phases.insert(name);
    if (cat == "forward") forward.insert(name);
    if (cat == "backward") backward.insert(name);
    if (cat == "idle") phases.insert("idle");
    steps += name == "train step";
  }
  EXPECT_EQ(steps, 2 * 5);  // 72 training samples / 16 per step, 2 epochs
  EXPECT_EQ(lanes, (std::set<std::string>{"main", "device 0", "device 1"}));
  for (const char* phase :
       {"data", "forward", "loss", "backward", "allreduce", "optimizer", "idle"}) {
    EXPECT_TRUE(phases.count(phase)) << "no '" << phase << "' event";
  }
  EXPECT_EQ(forward, (std::set<std::string>{"hidden", "out"}));
  EXPECT_EQ(backward, (std::set<std::string>{"hidden", "out"}));
}

TEST(Trace, NothingIsRecordedWhenOff) {
  EXPECT_EQ(detail::Tracer::active(), nullptr);
  EXPECT_EQ(detail::Tracer::lane(), nullptr);
  auto toy = test::make_toy(32, 5, 3, 9);
  set_random_seed(9);
  Sequential m({5}, {Dense(3, "softmax")});
  m.compile(SGD(0.1), "categorical_crossentropy");
  m.fit(toy.x, toy.y_onehot, {.batch_size = 16, .epochs = 1, .verbose = 0});
  EXPECT_EQ(detail::Tracer::active(), nullptr);
  detail::Tracer tracer;
  EXPECT_EQ(tracer.event_count(), 0);
}

TEST(Trace, UnwritablePathFailsBeforeTraining) {
  auto toy = test::make_toy(32, 5, 3, 9);
  Sequential m({5}, {Dense(3, "softmax")});
  m.compile(SGD(0.1), "categorical_crossentropy");
  test::expect_error<IoError>(
      [&] {
        m.fit(toy.x, toy.y_onehot,
              {.batch_size = 16, .verbose = 0, .trace_path = "/nonexistent/dir/t.json"});
      },
      {"/nonexistent/dir/t.json", "does not exist"});
  EXPECT_EQ(m.state().iterations, 0);
}

}  // namespace
}  // namespace tandem
