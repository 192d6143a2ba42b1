// The seed training step (batch B, fp32) against its floor: the sum of oneDNN's times for
// the step's GEMM shapes alone. For each thread count, interleaved, median of repetitions.
//   step_bench [--batch 128] [--threads 1,2] [--repeats 7] [--steps 10] [--json out.json]
// Prints ms/step, GFLOP/s, step/floor and the phase breakdown of the step.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>

#include "backend/backend.h"
#include "bench_util.h"
#include "model/model_state.h"
#include "parallel/strategy.h"
#include "tandem/tandem.h"

namespace tb = tandem::bench;

namespace {

struct Options {
  int64_t batch = 128;
  std::vector<int> threads = {1, 2};
  int repeats = 7;
  int steps = 10;
  std::string json;
};

// Unknown flags are an error and --help prints the usage (CLI11).
Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"The seed training step against its GEMM floor, per thread count"};
  app.add_option("--batch", o.batch, "global batch")->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "thread counts, e.g. 1,2")->delimiter(',');
  app.add_option("--repeats", o.repeats, "interleaved rounds (median)")->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "steps timed per round")->check(CLI::PositiveNumber);
  app.add_option("--json", o.json, "write the results here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return o;
}

// The GEMMs of one seed step, plain (no epilogues), on one backend.
struct Floor {
  std::unique_ptr<tandem::Backend> backend;
  std::vector<std::vector<float>> a, b, c;
  std::vector<tandem::GemmArgs> gemms;

  Floor(int threads, int64_t batch) : backend(tandem::make_cpu_backend(threads)) {
    const auto& w = tb::kSeedWidths;
    auto add = [&](int64_t m, int64_t n, int64_t k, bool ta, bool tb_) {
      a.emplace_back(m * k, 0.01f);
      b.emplace_back(k * n, 0.01f);
      c.emplace_back(m * n, 0.f);
      gemms.push_back({.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb_});
    };
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      add(batch, w[i + 1], w[i], false, false);            // forward
      add(w[i], w[i + 1], batch, true, false);             // kernel gradient
      if (i > 0) add(batch, w[i], w[i + 1], false, true);  // input gradient
    }
    for (size_t i = 0; i < gemms.size(); ++i) {
      gemms[i].a = a[i].data(), gemms[i].b = b[i].data(), gemms[i].c = c[i].data();
    }
  }
  void run() {
    for (const auto& g : gemms) backend->gemm(g);
  }
};

struct Step {
  tandem::Model model;
  std::unique_ptr<tandem::detail::Strategy> strategy;
  tandem::Tensor x, y;
  std::vector<int64_t> rows;
  uint64_t seed = 0;

  Step(int threads, int64_t batch) : model(tb::seed_model()), x({batch, 784}), y({batch, 10}) {
    model.compile(tandem::RMSprop(), "categorical_crossentropy", {"accuracy"});
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (auto& v : x.values()) v = u(gen);
    for (int64_t i = 0; i < batch; ++i) y[i * 10 + i % 10] = 1.f;
    rows.resize(batch);
    std::iota(rows.begin(), rows.end(), 0);
    strategy = tandem::detail::make_single_device_strategy(model.state(), threads);
    strategy->prepare(batch);
  }
  double run() { return strategy->train_step(x, y, rows, ++seed).loss_sum; }
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const double flops = tb::seed_step_flops(o.batch);
  struct Config {
    int threads;
    std::unique_ptr<Floor> floor;
    std::unique_ptr<Step> step;
    std::vector<double> floor_s, step_s;
  };
  std::vector<Config> configs;
  for (int t : o.threads) {
    configs.push_back({t, std::make_unique<Floor>(t, o.batch), std::make_unique<Step>(t, o.batch)});
  }
  // Verify before timing: the loss is finite and a step moves the weights; the floor's
  // GEMMs produce what a dot product says.
  for (auto& c : configs) {
    const auto before = c.step->model.get_weights();
    const double loss = c.step->run();
    const auto after = c.step->model.get_weights();
    if (!std::isfinite(loss) || before[0][0] == after[0][0]) {
      std::cerr << "step_bench: the step did not train (loss " << loss << ")\n";
      return 1;
    }
    c.floor->run();
    const auto& g = c.floor->gemms[0];
    if (std::abs(g.c[0] - 0.01f * 0.01f * g.k) > 1e-6f * g.k) {
      std::cerr << "step_bench: GEMM result wrong\n";
      return 1;
    }
    c.floor->run();
    c.step->strategy->prepare(o.batch);  // resets the phase timers
  }
  for (int r = 0; r < o.repeats; ++r) {
    for (auto& c : configs) {
      c.floor_s.push_back(tb::seconds_per_call([&] { c.floor->run(); }, o.steps));
      c.step_s.push_back(tb::seconds_per_call([&] { c.step->run(); }, o.steps));
    }
  }
  nlohmann::json out = {{"batch", o.batch},
                        {"step_gflop", flops / 1e9},
                        {"repeats", o.repeats},
                        {"steps_per_repeat", o.steps},
                        {"configs", nlohmann::json::array()}};
  std::printf("seed step, batch %lld, %.2f GFLOP/step, median of %d x %d steps\n",
              static_cast<long long>(o.batch), flops / 1e9, o.repeats, o.steps);
  std::printf("%8s %12s %12s %12s %12s %10s\n", "threads", "floor ms", "floor GF/s", "step ms",
              "step GF/s", "step/floor");
  for (auto& c : configs) {
    const double floor = tb::median(c.floor_s), step = tb::median(c.step_s);
    std::printf("%8d %12.2f %12.1f %12.2f %12.1f %10.3f\n", c.threads, floor * 1e3,
                flops / floor / 1e9, step * 1e3, flops / step / 1e9, step / floor);
    const tandem::PhaseTimes t = c.step->strategy->times();
    nlohmann::json phases;
    std::printf("         phases (ms/step):");
    for (int p = 0; p < static_cast<int>(tandem::Phase::count); ++p) {
      const double ms = t[static_cast<tandem::Phase>(p)] / t.steps * 1e3;
      if (ms > 0) std::printf(" %s %.2f", tandem::phase_name(static_cast<tandem::Phase>(p)), ms);
      phases[tandem::phase_name(static_cast<tandem::Phase>(p))] = ms;
    }
    std::printf("\n");
    out["configs"].push_back({{"threads", c.threads},
                              {"floor_ms", floor * 1e3},
                              {"step_ms", step * 1e3},
                              {"floor_gflops", flops / floor / 1e9},
                              {"step_gflops", flops / step / 1e9},
                              {"step_over_floor", step / floor},
                              {"phase_ms", phases},
                              {"floor_ms_all", c.floor_s},
                              {"step_ms_all", c.step_s}});
  }
  if (!o.json.empty()) std::ofstream(o.json) << out.dump(2) << "\n";
}
