// Data-parallel scaling of the seed training step on CPU devices. For each global batch,
// every configuration is built once, then timed interleaved (one repetition of each in
// turn), median of the repetitions:
//   1x1        one device, one core (the baseline)
//   1xN        one device using all N cores through intra-op threads
//   Dx1 <s>    D devices of one core, strategy s (mirrored | host); mirrored also with
//              bucketed sharded updates instead of weight-gradient shards, with a
//              parameter copy per replica, and with the all-reduce reducer
//   scaling_bench [--batches 128,512] [--devices 2] [--repeats 5] [--steps 4] [--json F]
//                 [--bucket-mb 4]   (a list adds one mirrored row per bucket size)
//                 [--deterministic 1] (adds deterministic-mode rows: 1 device, D devices)
//                 [--profile this-machine-cpu] (the cost model's speedups vs the measured)
// Prints ms/step, samples/s, speedup vs 1x1, efficiency, and the phases of a step per
// replica (forward, backward, exposed all-reduce, optimizer, data, idle).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "bench_util.h"
#include "model/model_state.h"
#include "parallel/strategy.h"
#include "prediction_check.h"
#include "tandem/tandem.h"

namespace tb = tandem::bench;

namespace {

struct Config {
  std::string name;
  int devices;
  int threads_per_device;
  std::string strategy;
  tandem::Model model;
  std::unique_ptr<tandem::detail::Strategy> run;
  std::vector<double> seconds;

  Config(std::string n, int d, int t, std::string s, int64_t batch, int64_t bucket_bytes,
         bool deterministic = false, bool shared = true, const char* reducer = "sharded",
         bool shard_weight_gradients = true)
      : name(std::move(n)),
        devices(d),
        threads_per_device(t),
        strategy(std::move(s)),
        model(tb::seed_model()) {
    model.compile(tandem::RMSprop(), "categorical_crossentropy", {"accuracy"});
    tandem::detail::StrategyOptions o;
    o.devices = d;
    o.threads_per_device = t;
    o.kind = tandem::detail::parse_strategy(strategy);
    o.bucket_bytes = bucket_bytes;
    o.deterministic = deterministic;
    o.shared_parameters = shared;
    o.reducer = tandem::detail::parse_reducer(reducer);
    o.shard_weight_gradients = shard_weight_gradients;
    run = tandem::detail::make_strategy(model.state(), o);
    run->prepare(batch);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> batches = {128, 512};
  int devices = 2, repeats = 5, steps = 4;
  std::string json_path;
  std::vector<int64_t> bucket_mb = {4};
  bool deterministic = false;
  std::string profile;
  CLI::App app{
      "Data-parallel scaling on CPU devices: 1 device vs N (mirrored, host), "
      "predicted beside measured"};
  app.add_option("--batches", batches, "global batches, e.g. 128,512")->delimiter(',');
  app.add_option("--devices", devices, "devices of the parallel runs")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "interleaved rounds (median)")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "steps timed per round")->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "write the results here");
  app.add_option("--bucket-mb", bucket_mb, "gradient bucket sizes, e.g. 1,4,25")->delimiter(',');
  app.add_option("--deterministic", deterministic, "1: deterministic mode");
  app.add_option("--profile", profile, "hardware profile to predict with");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  nlohmann::json out = {{"devices", devices},
                        {"repeats", repeats},
                        {"steps", steps},
                        {"results", nlohmann::json::array()}};
  std::vector<tb::MeasuredSpeedup> measured;
  for (const int64_t batch : batches) {
    const tb::SeedBatch data = tb::seed_batch(batch);
    const tandem::Tensor &x = data.x, &y = data.y;
    const std::vector<int64_t>& rows = data.rows;

    std::vector<std::unique_ptr<Config>> configs;
    const int64_t mb = 1 << 20;
    configs.push_back(std::make_unique<Config>("1x1", 1, 1, "mirrored", batch, 4 * mb));
    configs.push_back(std::make_unique<Config>("1x" + std::to_string(devices) + " intra-op", 1,
                                               devices, "mirrored", batch, 4 * mb));
    const std::string d = std::to_string(devices);
    for (int64_t b : bucket_mb) {
      const std::string name =
          d + "x1 mirrored" + (bucket_mb.size() > 1 ? " " + std::to_string(b) + "MB" : "");
      configs.push_back(std::make_unique<Config>(name, devices, 1, "mirrored", batch, b * mb));
    }
    configs.push_back(std::make_unique<Config>(d + "x1 host", devices, 1, "host", batch, 4 * mb));
    configs.push_back(std::make_unique<Config>(d + "x1 mirrored buckets", devices, 1, "mirrored",
                                               batch, 4 * mb, false, true, "sharded", false));
    configs.push_back(std::make_unique<Config>(d + "x1 mirrored copies", devices, 1, "mirrored",
                                               batch, 4 * mb, false, false));
    configs.push_back(std::make_unique<Config>(d + "x1 mirrored allreduce", devices, 1, "mirrored",
                                               batch, 4 * mb, false, false, "allreduce"));
    if (deterministic) {
      configs.push_back(
          std::make_unique<Config>("1x1 deterministic", 1, 1, "mirrored", batch, 4 * mb, true));
      configs.push_back(std::make_unique<Config>(d + "x1 deterministic", devices, 1, "mirrored",
                                                 batch, 4 * mb, true));
    }
    // Verify, then warm up: all configurations start from the same weights, so their first
    // step's loss must agree.
    double first_loss = 0;
    for (auto& c : configs) {
      const double loss = c->run->train_step(x, y, rows, 7).loss_sum / batch;
      if (&c == &configs.front()) first_loss = loss;
      if (!std::isfinite(loss) || std::abs(loss - first_loss) > 1e-4 * std::abs(first_loss)) {
        std::cerr << "scaling_bench: " << c->name << " loss " << loss << " != " << first_loss
                  << "\n";
        return 1;
      }
      c->run->prepare(batch);
    }
    uint64_t seed = 100;
    for (int r = 0; r < repeats; ++r) {
      for (auto& c : configs) {
        c->seconds.push_back(
            tb::seconds_per_call([&] { c->run->train_step(x, y, rows, ++seed); }, steps));
      }
    }
    const double base = tb::median(configs.front()->seconds);
    std::printf(
        "\nseed model, global batch %lld, median of %d x %d steps (ms per step; phases per "
        "replica)\n",
        static_cast<long long>(batch), repeats, steps);
    std::printf("%-18s %9s %10s %8s %6s | %8s %8s %9s %8s %6s %6s\n", "config", "ms/step",
                "samples/s", "speedup", "eff", "forward", "backward", "allreduce", "optim", "data",
                "idle");
    for (auto& c : configs) {
      const double s = tb::median(c->seconds);
      const double speedup = base / s;
      const int cores = c->devices * c->threads_per_device;
      const tandem::PhaseTimes t = c->run->times();
      auto ms = [&](tandem::Phase p) { return t[p] / std::max<int64_t>(t.steps, 1) * 1e3; };
      std::printf("%-18s %9.2f %10.0f %8.2f %5.0f%% | %8.2f %8.2f %9.2f %8.2f %6.2f %6.2f\n",
                  c->name.c_str(), s * 1e3, batch / s, speedup, 100 * speedup / cores,
                  ms(tandem::Phase::forward), ms(tandem::Phase::backward),
                  ms(tandem::Phase::allreduce), ms(tandem::Phase::optimizer),
                  ms(tandem::Phase::data) + ms(tandem::Phase::loss), ms(tandem::Phase::idle));
      nlohmann::json phases;
      for (int p = 0; p < static_cast<int>(tandem::Phase::count); ++p) {
        phases[tandem::phase_name(static_cast<tandem::Phase>(p))] =
            ms(static_cast<tandem::Phase>(p));
      }
      out["results"].push_back({{"batch", batch},
                                {"config", c->name},
                                {"devices", c->devices},
                                {"threads_per_device", c->threads_per_device},
                                {"strategy", c->strategy},
                                {"ms_per_step", s * 1e3},
                                {"samples_per_second", batch / s},
                                {"speedup_vs_1x1", speedup},
                                {"efficiency", speedup / cores},
                                {"phase_ms_per_replica", phases},
                                {"ms_per_step_all", c->seconds}});
      const std::string d = std::to_string(devices);
      if (c->name == d + "x1 mirrored" || c->name == d + "x1 host") {
        measured.push_back({batch, c->strategy, devices, s * 1e3, base * 1e3});
      }
    }
  }
  if (!profile.empty()) tb::print_prediction_check(profile, measured, out);
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
}
