// Where the host puts two devices' cores, over time, and what it costs: every --interval
// seconds for --seconds, the hand-off between the two devices' cores (window_check.h,
// handoff_seconds: a cache line passed back and forth 1000 times, the slower of one before and
// one after) and calibrate's shards' update (update_contention's shard round: device 0 alone
// updating --kb of parameters with RMSprop, then both devices each updating its half of one
// buffer both had just read, the devices' mean over half the time alone; the median of
// --rounds rounds). A sample sits apart when its hand-off is over apart_handoff() (3) times the
// run's fastest. Prints each sample, then the share apart, the longest run of samples apart,
// and the shards' update near and apart (medians).
//   placement_bench [--seconds 300] [--interval 0.5] [--kb 256] [--rounds 5] [--json out.json]
// docs/SCALING.md, "Where the host puts the two vCPUs", cites its figures.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

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
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Where the host puts two devices' cores over time, and the shards' update there"};
  app.add_option("--seconds", o.seconds, "how long to sample")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--interval", o.interval, "seconds between samples")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--kb", o.kb, "parameters of the update, KiB")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  app.add_option("--rounds", o.rounds, "update rounds per sample (median)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--json", o.json, "write the samples here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return o;
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

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  td::DeviceGroup group(td::plan_devices(2, 1));
  td::UpdateAtOnce update(group, o.kb << 10, 1);
  struct Sample {
    double at, handoff, ratio;
  };
  std::vector<Sample> samples;
  const auto start = tandem::Clock::now();
  while (tandem::seconds_since(start) < o.seconds) {
    const double before = td::handoff_seconds(group);
    const double ratio = shard_ratio(update, o.rounds);
    const double after = td::handoff_seconds(group);
    samples.push_back({tandem::seconds_since(start), std::max(before, after), ratio});
    std::printf("%8.1f s  hand-off %6.0f ns  shards' update %5.2fx\n", samples.back().at,
                samples.back().handoff * 1e9, ratio);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
  }
  update.check_finite();
  const double fastest = td::best_handoff_seconds(2);
  std::vector<double> near, apart;
  int run = 0, longest = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const Sample& s : samples) {
    const bool is_apart = s.handoff > td::apart_handoff() * fastest;
    (is_apart ? apart : near).push_back(s.ratio);
    run = is_apart ? run + 1 : 0;
    longest = std::max(longest, run);
    rows.push_back(
        {{"at", s.at}, {"handoff", s.handoff}, {"shard_ratio", s.ratio}, {"apart", is_apart}});
  }
  const auto median = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : td::median_of(v);
  };
  std::printf(
      "%zu samples over %.0f s: %zu apart (%.1f%%; a hand-off over %.0fx the fastest, %.0f ns), "
      "the longest run %d samples; the shards' update of %lld KiB over half of one device's: "
      "%.2fx near, %.2fx apart (medians)\n",
      samples.size(), o.seconds, apart.size(),
      100.0 * apart.size() / std::max<size_t>(samples.size(), 1), td::apart_handoff(),
      fastest * 1e9, longest, static_cast<long long>(o.kb), median(near), median(apart));
  if (!o.json.empty()) {
    const nlohmann::json out = {
        {"seconds", o.seconds}, {"interval", o.interval},     {"kb", o.kb},
        {"rounds", o.rounds},   {"fastest_handoff", fastest}, {"samples", rows}};
    tandem::write_file_atomically(o.json, out.dump(1) + "\n");
  }
  return 0;
}
