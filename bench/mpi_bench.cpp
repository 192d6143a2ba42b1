// Multi-process scaling of the seed training step over MPI, run under mpirun:
//   mpirun -np 2 --bind-to core build/bench/mpi_bench [--batches 128,512] [--repeats 7]
//          [--steps 4] [--json F] [--profile this-machine-mpi]
// For each global batch, one interleaved run (one repetition of each configuration in
// turn, median of the repetitions):
//   1 rank         rank 0 trains the whole batch alone on its core (the others wait)
//   N ranks        every rank takes 1/N of the batch; buckets all-reduced over MPI
//   N ranks bf16   the same, gradients sent as bfloat16
// Then the all-reduce alone: the seed's whole gradient (50.75 MB) and a 4 MB bucket,
// float32 and bf16, with algbw = bytes / time and busbw = algbw * 2 (n - 1) / n.
// Rank 0 prints ms/step, speedup, and the phases of a step per rank.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "bench_util.h"
#include "model/model_state.h"
#include "parallel/strategy.h"
#include "parallel/world.h"
#include "prediction_check.h"
#include "tandem/mpi.h"
#include "tandem/tandem.h"

namespace tb = tandem::bench;
namespace td = tandem::detail;

namespace {

struct Config {
  std::string name;
  bool alone;  // rank 0 only
  tandem::Model model;
  std::unique_ptr<td::Strategy> run;
  std::vector<double> seconds;

  Config(std::string n, bool alone_, bool bf16, int64_t batch)
      : name(std::move(n)), alone(alone_), model(tb::seed_model()) {
    model.compile(tandem::RMSprop(), "categorical_crossentropy", {"accuracy"});
    td::StrategyOptions o;
    o.devices = 1;
    o.threads_per_device = 1;
    o.world = alone ? nullptr : td::current_world();
    o.gradient_comm.bf16 = bf16;
    if (!alone || tandem::mpi::rank() == 0) {
      run = td::make_strategy(model.state(), o);
      run->prepare(batch);
    }
  }
  bool runs_here() const { return run != nullptr; }
};

// Seconds per all-reduce of `count` floats, median of `repeats` x `calls`.
double allreduce_seconds(td::Communicator& comm, int64_t count, int repeats, int calls) {
  std::vector<float> data(count, 1.f);
  comm.allreduce(data.data(), count);  // warm
  std::vector<double> runs;
  for (int r = 0; r < repeats; ++r) {
    comm.barrier();
    runs.push_back(tb::seconds_per_call([&] { comm.allreduce(data.data(), count); }, calls));
  }
  double median = tb::median(runs);
  MPI_Bcast(&median, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);  // rank 0's figure everywhere
  return median;
}

}  // namespace

int main(int argc, char** argv) {
  tandem::mpi::Session mpi(argc, argv);
  const int ranks = tandem::mpi::size(), me = tandem::mpi::rank();
  std::vector<int64_t> batches = {128, 512};
  int repeats = 7, steps = 4;
  std::string json_path, profile;
  CLI::App app{"Multi-process scaling over MPI: 1 rank vs all ranks (run under mpirun)"};
  app.add_option("--batches", batches, "global batches, e.g. 128,512")->delimiter(',');
  app.add_option("--repeats", repeats, "interleaved rounds (median)")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "steps timed per round")->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "write the results here (rank 0)");
  app.add_option("--profile", profile, "hardware profile to predict with");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return me == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
  }
  if (ranks < 2) {
    std::fprintf(stderr, "mpi_bench: run under mpirun with 2 or more ranks\n");
    return 2;
  }
  td::World& world = *td::current_world();
  nlohmann::json out = {{"ranks", ranks},
                        {"repeats", repeats},
                        {"steps", steps},
                        {"results", nlohmann::json::array()}};
  std::vector<tb::MeasuredSpeedup> measured;
  for (const int64_t batch : batches) {
    const tb::SeedBatch data = tb::seed_batch(batch);
    const tandem::Tensor &x = data.x, &y = data.y;
    const std::vector<int64_t>& rows = data.rows;
    const std::string n = std::to_string(ranks);
    std::vector<std::unique_ptr<Config>> configs;
    configs.push_back(std::make_unique<Config>("1 rank", true, false, batch));
    configs.push_back(std::make_unique<Config>(n + " ranks", false, false, batch));
    configs.push_back(std::make_unique<Config>(n + " ranks bf16", false, true, batch));
    // Warm up (primitives, buffers) and check the first step agrees.
    double first_loss = NAN;
    for (auto& c : configs) {
      if (c->runs_here()) {
        const double loss = c->run->train_step(x, y, rows, 7).loss_sum / batch;
        if (std::isnan(first_loss)) first_loss = loss;
        if (!(std::abs(loss - first_loss) <= 1e-3 * std::abs(first_loss))) {
          std::fprintf(stderr, "mpi_bench: %s first loss %g != %g\n", c->name.c_str(), loss,
                       first_loss);
          tandem::mpi::abort(1);
        }
        c->run->prepare(batch);  // phase timers restart
      }
      world.barrier();
    }
    uint64_t seed = 100;
    for (int r = 0; r < repeats; ++r) {
      for (auto& c : configs) {
        world.barrier();
        if (c->runs_here()) {
          c->seconds.push_back(
              tb::seconds_per_call([&] { c->run->train_step(x, y, rows, ++seed); }, steps));
        }
      }
    }
    world.barrier();
    if (me == 0) {
      const double base = tb::median(configs.front()->seconds);
      std::printf(
          "\nseed model, global batch %lld, %d ranks of one core, median of %d x %d "
          "steps (ms per step; phases per rank)\n",
          static_cast<long long>(batch), ranks, repeats, steps);
      std::printf("%-14s %9s %10s %8s | %8s %8s %9s %8s %6s %6s\n", "config", "ms/step",
                  "samples/s", "speedup", "forward", "backward", "allreduce", "optim", "data",
                  "idle");
      for (auto& c : configs) {
        const double s = tb::median(c->seconds);
        const tandem::PhaseTimes t = c->run->times();
        auto ms = [&](tandem::Phase p) { return t[p] / std::max<int64_t>(t.steps, 1) * 1e3; };
        std::printf("%-14s %9.2f %10.0f %8.2f | %8.2f %8.2f %9.2f %8.2f %6.2f %6.2f\n",
                    c->name.c_str(), s * 1e3, batch / s, base / s, ms(tandem::Phase::forward),
                    ms(tandem::Phase::backward), ms(tandem::Phase::allreduce),
                    ms(tandem::Phase::optimizer), ms(tandem::Phase::data) + ms(tandem::Phase::loss),
                    ms(tandem::Phase::idle));
        nlohmann::json phases;
        for (int p = 0; p < static_cast<int>(tandem::Phase::count); ++p) {
          phases[tandem::phase_name(static_cast<tandem::Phase>(p))] =
              ms(static_cast<tandem::Phase>(p));
        }
        out["results"].push_back({{"batch", batch},
                                  {"config", c->name},
                                  {"ms_per_step", s * 1e3},
                                  {"samples_per_second", batch / s},
                                  {"speedup", base / s},
                                  {"seconds", c->seconds},
                                  {"phase_ms", phases}});
        if (c->name == n + " ranks")
          measured.push_back({batch, "mirrored", ranks, s * 1e3, base * 1e3});
      }
    }
  }
  // The all-reduce alone: the whole seed gradient, and one default-size bucket.
  const int64_t seed_floats = tb::seed_model().state().graph->param_buffer_size();
  if (me == 0) {
    std::printf("\nall-reduce between %d ranks, median of %d x 5 calls\n", ranks, repeats);
    std::printf("%-10s %10s %9s %12s %12s\n", "payload", "MB", "ms", "algbw GB/s", "busbw GB/s");
  }
  for (const bool bf16 : {false, true}) {
    auto comm = world.gradient_communicator({.bf16 = bf16});
    for (const int64_t count : {seed_floats, int64_t{1} << 20}) {
      const double s = allreduce_seconds(*comm, count, repeats, 5);
      const double bytes = 4.0 * count;  // the gradient's size, whatever crosses the wire
      const double algbw = bytes / s / 1e9, busbw = algbw * 2.0 * (ranks - 1) / ranks;
      const std::string payload = bf16 ? "bf16" : "float32";
      if (me == 0) {
        std::printf("%-10s %10.2f %9.2f %12.2f %12.2f\n", payload.c_str(), bytes / 1e6, s * 1e3,
                    algbw, busbw);
      }
      out["allreduce"].push_back({{"payload", payload},
                                  {"megabytes", bytes / 1e6},
                                  {"ms", s * 1e3},
                                  {"algbw_gb_s", algbw},
                                  {"busbw_gb_s", busbw}});
    }
  }
  if (me == 0 && !profile.empty()) tb::print_prediction_check(profile, measured, out);
  if (me == 0 && !json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}
