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
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "advise/step_run.h"
#include "advise/window_check.h"
#include "core/aligned_buffer.h"
#include "core/atomic_file.h"
#include "optim/optimizer_kernel.h"
#include "parallel/device_group.h"
#include "tandem/optimizers.h"

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

// The shards' update against one device's alone, as update_contention's shard round times it.
class ShardUpdate {
 public:
  ShardUpdate(td::DeviceGroup& group, int64_t bytes)
      : group_(group),
        n_(std::max<int64_t>(bytes / 4, 32)),
        kernel_(td::make_optimizer_kernel(tandem::RMSprop())) {
    for (tandem::AlignedBuffer* b : {&alone_, &alone_state_, &shared_, &shared_state_})
      b->resize(n_);
    for (auto& g : grads_) g.resize(n_);
    std::fill(alone_.data(), alone_.data() + n_, 0.5f);
    std::fill(shared_.data(), shared_.data() + n_, 0.5f);
    std::fill(alone_state_.data(), alone_state_.data() + n_, 0.f);
    std::fill(shared_state_.data(), shared_state_.data() + n_, 0.f);
  }

  // Shard time over half the alone time: the median of `rounds`.
  double ratio(int rounds) {
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) {
      value_ = -value_;
      ++iteration_;
      group_.run([&](int d) {
        if (d != 0) return;
        prepare(0, alone_.data());
        each_[0] = update(0, alone_.data(), alone_state_.data(), 0, n_);
      });
      const double alone = each_[0];
      group_.run([&](int d) {
        prepare(d, shared_.data());
        group_.barrier().wait();  // both have read the whole buffer
        each_[d] = update(d, shared_.data(), shared_state_.data(), n_ * d / 2, n_ * (d + 1) / 2);
      });
      ratios.push_back((each_[0] + each_[1]) / alone);  // mean over alone / 2
    }
    return td::median_of(ratios);
  }

  // Whether what the passes read and updated stayed finite (they ran, and ran right).
  bool finite() const {
    double sum = sink_[0] + sink_[1];
    for (const tandem::AlignedBuffer* b : {&alone_, &shared_}) {
      for (int64_t i = 0; i < n_; i += 16) sum += b->data()[i];
    }
    return std::isfinite(sum);
  }

 private:
  // The device's gradients written and a float of every parameter line read, as backward and
  // forward leave them.
  void prepare(int d, const float* w) {
    std::fill(grads_[d].data(), grads_[d].data() + n_, value_);
    double sum = 0;
    for (int64_t i = 0; i < n_; i += 16) sum += w[i];
    sink_[d] += sum;
  }

  // The device's update of [begin, end): seconds.
  double update(int d, float* w, float* s, int64_t begin, int64_t end) {
    float* slots[] = {s};
    const auto start = tandem::Clock::now();
    kernel_->update(w, grads_[d].data(), slots, begin, end, iteration_, 1e-3, 1, 0);
    return tandem::seconds_since(start);
  }

  td::DeviceGroup& group_;
  int64_t n_;
  std::unique_ptr<td::OptimizerKernel> kernel_;
  tandem::AlignedBuffer alone_, alone_state_, shared_, shared_state_, grads_[2];
  double each_[2] = {0, 0};
  double sink_[2] = {0, 0};
  float value_ = 1e-4f;
  int64_t iteration_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  td::DeviceGroup group(td::plan_devices(2, 1));
  ShardUpdate update(group, o.kb << 10);
  struct Sample {
    double at, handoff, ratio;
  };
  std::vector<Sample> samples;
  const auto start = tandem::Clock::now();
  while (tandem::seconds_since(start) < o.seconds) {
    const double before = td::handoff_seconds(group);
    const double ratio = update.ratio(o.rounds);
    const double after = td::handoff_seconds(group);
    samples.push_back({tandem::seconds_since(start), std::max(before, after), ratio});
    std::printf("%8.1f s  hand-off %6.0f ns  shards' update %5.2fx\n", samples.back().at,
                samples.back().handoff * 1e9, ratio);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
  }
  if (!update.finite()) {
    std::fprintf(stderr, "placement_bench: the update's parameters became non-finite\n");
    return 1;
  }
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
