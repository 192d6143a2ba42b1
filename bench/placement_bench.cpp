// Where the host puts two devices' cores, over time, and what it costs: every --interval
// seconds for --seconds, the hand-off between the two devices' cores (window_check.h,
// handoff_seconds: a cache line passed back and forth 1000 times, the slower of one before and
// one after), their cache reading (cache_seconds: each device at once streaming half its
// core's private cache, the slower of one before and one after), calibrate's shards' update
// (update_contention's shard round: device 0 alone updating --kb of parameters with RMSprop,
// then both devices each updating its half of one buffer both had just read, the devices' mean
// over half the time alone; the median of --rounds rounds; 0: not timed), and with --steps, a
// model's training step at --batch on 2 devices (weight-gradient sharding) and on 1 (the mean
// of --steps steps each, after one untimed). A sample sits apart when its hand-off is over
// apart_handoff() (3) times the run's fastest, crowded when near and its cache reading is over
// kCrowdedCache (1.4) times the run's fastest. Prints each sample, then the share apart and
// crowded, the longest runs, and the shards' update and the steps in each state (medians).
// With --settle, each sample reads the hand-off and the caches once more, --settle seconds
// after the reading that follows the steps, when the steps' devices have stopped spinning for
// their next task (kDeviceSpinSeconds), and prints the three readings' medians and how many of
// each were crowded (against the fastest of all readings, settled ones included): whether a
// reading right after another group's work reads that work.
// With --flush-denormals, every thread flushes denormal floats to zero (x86's FTZ and DAZ,
// set before the devices start, which inherit them): the steps train the same batch for the
// whole run, and on the Xeon of 2026-12-07 ran 2-3x slower after its first 7 s without it.
//   placement_bench [--seconds 300] [--interval 0.5] [--kb 256] [--rounds 5]
//                   [--steps 0] [--model 784,256,256,10] [--batch 32] [--settle 0]
//                   [--flush-denormals] [--json out.json]
// docs/SCALING.md, "Where the host puts the two vCPUs", "Crowded caches" and "The windows on the
// Xeon, and a cache reading that depends on its reader", cites its figures.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include "advise/at_once_probes.h"
#include "advise/step_run.h"
#include "advise/window_check.h"
#include "core/atomic_file.h"
#include "parallel/device_group.h"

namespace td = tandem::detail;

namespace {

struct Options {
  double seconds = 300, interval = 0.5;
  int64_t kb = 256;
  int rounds = 5;
  int steps = 0;
  std::vector<int64_t> model = {784, 256, 256, 10};
  int64_t batch = 32;
  double settle = 0;
  bool flush_denormals = false;
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Where the host puts two devices' cores over time, and the shards' update and a model's "
      "steps there"};
  app.add_option("--seconds", o.seconds, "how long to sample")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--interval", o.interval, "seconds between samples")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--kb", o.kb, "parameters of the update, KiB")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  app.add_option("--rounds", o.rounds, "update rounds per sample (median; 0: not timed)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--steps", o.steps, "steps timed per sample on 2 devices and 1 (0: none)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--model", o.model, "the model's widths, input to output")->delimiter(',');
  app.add_option("--batch", o.batch, "the steps' global batch")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  app.add_option("--settle", o.settle,
                 "seconds after the reading that follows the steps to read once more (0: not)")
      ->check(CLI::Range(0.0, 60.0));
  app.add_flag("--flush-denormals", o.flush_denormals,
               "flush denormal floats to zero in every thread (x86)");
  app.add_option("--json", o.json, "write the samples here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  if (o.model.size() < 2) {
    std::fprintf(stderr, "placement_bench: --model needs an input and an output width\n");
    std::exit(2);
  }
  return o;
}

// Denormal floats flushed to zero on this thread, and on every thread it starts after (x86's
// FTZ and DAZ, which a new thread inherits); elsewhere, a clear error.
void flush_denormals() {
#if defined(__x86_64__) || defined(__i386__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#else
  std::fprintf(stderr, "placement_bench: --flush-denormals is for x86 CPUs only\n");
  std::exit(2);
#endif
}

// The shards' update over half of device 0's alone (at_once_probes.h's rounds, without own's
// between them): the median of `rounds`.
double shard_ratio(td::UpdateAtOnce& update, int rounds) {
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    update.next_round();
    const double alone = update.alone();
    ratios.push_back(2 * update.shard() / alone);  // the devices' mean over alone / 2
  }
  return td::median_of(ratios);
}

// A model's steps on `devices` devices of one thread (weight-gradient sharding on several).
std::unique_ptr<td::StepRun> step_run(const Options& o, int devices) {
  td::StrategyOptions so;
  so.devices = devices;
  so.threads_per_device = 1;
  return std::make_unique<td::StepRun>(td::dense_stack(o.model), o.batch, so);
}

double median_or_zero(const std::vector<double>& v) {
  return v.empty() ? 0.0 : td::median_of(v);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.flush_denormals) flush_denormals();  // before any device starts
  td::DeviceGroup group(td::plan_devices(2, 1));
  td::UpdateAtOnce update(group, o.kb << 10, 1);
  std::unique_ptr<td::StepRun> two, one;
  if (o.steps > 0) {
    two = step_run(o, 2);
    one = step_run(o, 1);
  }
  uint64_t seed = 1;
  // The hand-off and cache readings before and after the sample's work, and the ones --settle
  // seconds later (0: not read); its state judges the slower of before and after.
  struct Sample {
    double at, ratio, two, one;
    double handoff_before, handoff_after, handoff_settled;
    double cache_before, cache_after, cache_settled;
    double handoff() const { return std::max(handoff_before, handoff_after); }
    double cache() const { return std::max(cache_before, cache_after); }
  };
  std::vector<Sample> samples;
  const auto start = tandem::Clock::now();
  while (tandem::seconds_since(start) < o.seconds) {
    const double handoff_before = td::handoff_seconds(group);
    const double cache_before = td::cache_seconds(group);
    const double ratio = o.rounds > 0 ? shard_ratio(update, o.rounds) : 0;
    double two_seconds = 0, one_seconds = 0;
    if (two) {
      two->settle(seed);
      two->time(o.steps, seed);
      one->settle(seed);
      one->time(o.steps, seed);
      two_seconds = two->seconds().back();
      one_seconds = one->seconds().back();
    }
    const double handoff_after = td::handoff_seconds(group);
    const double cache_after = td::cache_seconds(group);
    double handoff_settled = 0, cache_settled = 0;
    if (o.settle > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(o.settle));
      handoff_settled = td::handoff_seconds(group);
      cache_settled = td::cache_seconds(group);
    }
    samples.push_back({tandem::seconds_since(start), ratio, two_seconds, one_seconds,
                       handoff_before, handoff_after, handoff_settled, cache_before, cache_after,
                       cache_settled});
    const Sample& s = samples.back();
    std::printf(
        "%8.1f s  hand-off %6.0f ns  cache %6.1f us  shards' update %5.2fx  steps %7.3f ms on 2 "
        "devices, %7.3f ms on 1\n",
        s.at, s.handoff() * 1e9, s.cache() * 1e6, ratio, two_seconds * 1e3, one_seconds * 1e3);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
  }
  update.check_finite();
  for (const Sample& s : samples) {
    if (!std::isfinite(s.two) || !std::isfinite(s.one)) {
      std::fprintf(stderr, "placement_bench: a step timed non-finite at %.1f s\n", s.at);
      return 1;
    }
  }
  const double fastest = td::best_handoff_seconds(2), fastest_cache = td::best_cache_seconds(2);
  // By state: near and not crowded, near and crowded, apart.
  enum class State { near, crowded, apart };
  constexpr int kStates = 3;
  const auto name = [](State s) {
    return s == State::near ? "near" : s == State::crowded ? "crowded" : "apart";
  };
  struct Tally {
    std::vector<double> ratios, twos, ones;
    int count = 0, run = 0, longest = 0;
  };
  std::array<Tally, kStates> tally;
  nlohmann::json rows = nlohmann::json::array();
  for (const Sample& s : samples) {
    const State state = s.handoff() > td::apart_handoff() * fastest   ? State::apart
                        : td::cache_crowded(s.cache(), fastest_cache) ? State::crowded
                                                                      : State::near;
    for (int k = 0; k < kStates; ++k) {
      Tally& t = tally[static_cast<size_t>(k)];
      t.run = k == static_cast<int>(state) ? t.run + 1 : 0;
      t.longest = std::max(t.longest, t.run);
    }
    Tally& t = tally[static_cast<size_t>(state)];
    ++t.count;
    t.ratios.push_back(s.ratio);
    t.twos.push_back(s.two);
    t.ones.push_back(s.one);
    rows.push_back({{"at", s.at},
                    {"handoff", s.handoff()},
                    {"cache", s.cache()},
                    {"shard_ratio", s.ratio},
                    {"two_devices", s.two},
                    {"one_device", s.one},
                    {"state", name(state)},
                    {"apart", state == State::apart},
                    {"handoff_before", s.handoff_before},
                    {"handoff_after", s.handoff_after},
                    {"cache_before", s.cache_before},
                    {"cache_after", s.cache_after}});
    if (o.settle > 0) {
      rows.back()["handoff_settled"] = s.handoff_settled;
      rows.back()["cache_settled"] = s.cache_settled;
    }
  }
  const double n = static_cast<double>(std::max<size_t>(samples.size(), 1));
  const Tally &apart = tally[static_cast<size_t>(State::apart)],
              &crowded = tally[static_cast<size_t>(State::crowded)];
  std::printf(
      "%zu samples over %.0f s: %d apart (%.1f%%; a hand-off over %.0fx the fastest, %.0f ns), "
      "the longest run %d samples; %d crowded (%.1f%%; near, a cache reading over %.1fx the "
      "fastest, %.1f us), the longest run %d samples\n",
      samples.size(), o.seconds, apart.count, 100.0 * apart.count / n, td::apart_handoff(),
      fastest * 1e9, apart.longest, crowded.count, 100.0 * crowded.count / n, td::kCrowdedCache,
      fastest_cache * 1e6, crowded.longest);
  for (const State state : {State::near, State::crowded, State::apart}) {
    const Tally& t = tally[static_cast<size_t>(state)];
    std::printf("  %-8s %4d samples", name(state), t.count);
    if (o.rounds > 0) {
      std::printf(": shards' update of %lld KiB %.2fx", static_cast<long long>(o.kb),
                  median_or_zero(t.ratios));
    }
    if (two) {
      std::printf("%s steps at %lld: %.3f ms on 2 devices, %.3f ms on 1", o.rounds > 0 ? ";" : ":",
                  static_cast<long long>(o.batch), median_or_zero(t.twos) * 1e3,
                  median_or_zero(t.ones) * 1e3);
    }
    std::printf(" (medians)\n");
  }
  if (o.settle > 0) {
    // Each reading alone: before the sample's work, right after it, and --settle seconds later.
    struct Reading {
      const char* name;
      double Sample::*handoff;
      double Sample::*cache;
    };
    for (const Reading& r :
         {Reading{"before", &Sample::handoff_before, &Sample::cache_before},
          Reading{"after", &Sample::handoff_after, &Sample::cache_after},
          Reading{"settled", &Sample::handoff_settled, &Sample::cache_settled}}) {
      std::vector<double> handoffs, caches;
      int crowded_here = 0, apart_here = 0;
      for (const Sample& s : samples) {
        handoffs.push_back(s.*r.handoff);
        caches.push_back(s.*r.cache);
        apart_here += s.*r.handoff > td::apart_handoff() * fastest;
        crowded_here += td::cache_crowded(s.*r.cache, fastest_cache);
      }
      std::printf(
          "  %-8s reading: hand-off %.0f ns, cache %.1f us (medians); %d apart, %d crowded\n",
          r.name, median_or_zero(handoffs) * 1e9, median_or_zero(caches) * 1e6, apart_here,
          crowded_here);
    }
  }
  if (!o.json.empty()) {
    const nlohmann::json out = {{"seconds", o.seconds},
                                {"interval", o.interval},
                                {"kb", o.kb},
                                {"rounds", o.rounds},
                                {"steps", o.steps},
                                {"model", o.model},
                                {"batch", o.batch},
                                {"fastest_handoff", fastest},
                                {"fastest_cache", fastest_cache},
                                {"settle", o.settle},
                                {"flush_denormals", o.flush_denormals},
                                {"samples", rows}};
    tandem::write_file_atomically(o.json, out.dump(1) + "\n");
  }
  return 0;
}
