// The dense cost model against the last held-out validation run, with no timing in the test:
// docs/results/validation.json (tandem bench validate --json, with the profile that `tandem
// calibrate` measured on one device right before it) is recomputed by this build's model.
// Every configuration that run found within its tolerances (15% on speedups, 20% on step
// times) must stay within them; the ones it missed are known misses (docs/SCALING.md says
// why): one may start to agree, none may be added. A deliberately broken profile must fail
// the same comparison, so the comparison can fail.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "advise/host_exchange_probe.h"
#include "advise/step_run.h"
#include "advise/validation.h"
#include "advise/window_check.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

json validation_run(const std::string& name = "validation.json") {
  const std::string path = std::string(TANDEM_TEST_DATA_DIR) + "/../../docs/results/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);
}

struct Outcome {
  int agreed = 0;        // configurations the run found within its tolerances
  int misses = 0;        // of those, the ones this build's model misses
  int known_misses = 0;  // configurations the run missed
  std::string worst;
};

// The committed rows' own predictions say which configurations that run missed.
Outcome compare(const json& run, const HardwareProfile& hw) {
  const Tolerances t;
  const auto rows = recompute_validation(run, hw);
  Outcome o;
  for (size_t i = 0; i < rows.size(); ++i) {
    ValidationRow committed = rows[i];
    committed.predicted_seconds = run.at("rows")[i].at("predicted_seconds").get<double>();
    committed.predicted_speedup = run.at("rows")[i].at("predicted_speedup").get<double>();
    const bool missed_now = validation_missed(rows[i], t);
    if (validation_missed(committed, t)) {
      ++o.known_misses;
      continue;
    }
    ++o.agreed;
    if (missed_now) {
      ++o.misses;
      o.worst += "\n  " + validation_misses({rows[i]}, t).front();
    }
  }
  return o;
}

HardwareProfile profile_of(const json& profile) {
  return parse_hardware_profile(profile, "validation.json");
}

TEST(ValidationRun, AgreesWithTheCommittedHeldOutRun) {
  const json run = validation_run();
  const Outcome o = compare(run, profile_of(run.at("profile")));
  EXPECT_EQ(o.agreed + o.known_misses, 80);  // 4 models x 4 batches x 5 configurations
  EXPECT_LE(o.known_misses, 14);             // docs/SCALING.md lists them
  EXPECT_EQ(o.misses, 0) << "configurations that agreed now miss:" << o.worst;
}

// The same over the run on 2 MPI ranks (docs/results/mpi_validation.json): float32, bf16 and
// deterministic ranks against one device, predicted by the hierarchical model.
TEST(ValidationRun, AgreesWithTheCommittedRunOnMpiRanks) {
  const json run = validation_run("mpi_validation.json");
  const Outcome o = compare(run, profile_of(run.at("profile")));
  EXPECT_EQ(o.agreed + o.known_misses, 64);  // 4 models x 4 batches x 4 configurations
  EXPECT_LE(o.known_misses, 11);             // docs/SCALING.md lists them
  EXPECT_EQ(o.misses, 0) << "configurations that agreed now miss:" << o.worst;
  // A link 4x slower fails it.
  json slow = run.at("profile");
  slow["rank_rank"]["bandwidth"] = slow["rank_rank"]["bandwidth"].get<double>() / 4;
  EXPECT_GT(compare(run, profile_of(slow)).misses, 0);
}

TEST(ValidationRun, ABrokenProfileFailsTheComparison) {
  const json run = validation_run();
  // The copy bandwidth (weights to the host strategy's devices, the all-reduce's copies)
  // halved: the host and all-reduce predictions move out of tolerance.
  json slow_copy = run.at("profile");
  slow_copy["host_device"]["bandwidth"] = slow_copy["host_device"]["bandwidth"].get<double>() / 2;
  slow_copy["device_device"]["bandwidth"] =
      slow_copy["device_device"]["bandwidth"].get<double>() / 2;
  EXPECT_GT(compare(run, profile_of(slow_copy)).misses, 0);
  // The dense rate overstated by half: every step time moves out of tolerance.
  json fast = run.at("profile");
  fast["device"]["sustained_flops"] = fast["device"]["sustained_flops"].get<double>() * 1.5;
  for (auto& curve : fast["device"]["dense_rates"]) {
    curve["sustained_flops"] = curve["sustained_flops"].get<double>() * 1.5;
  }
  EXPECT_GT(compare(run, profile_of(fast)).misses, 10);
}

// The advice's choices on the committed runs: where the measured repetitions of the two
// configurations separate, the order must be the one the model predicted. Mirrored over
// host holds on every pair; so does bf16 over float32 between 2 MPI ranks since bf16 is
// costed from the sweep's bf16-to-float32 ratio (the line's halved bytes predicted bf16
// faster at 784-8192-10, batch 32, where it measured 1.15x float32's step).
TEST(ValidationRun, TheAdvisedChoicesOnTheCommittedRuns) {
  const json run = validation_run();
  const auto host = check_advice(recompute_validation(run, profile_of(run.at("profile"))));
  ASSERT_EQ(host.size(), 16u);  // 4 models x 4 batches
  int separated = 0;
  for (const AdviceCheck& c : host) {
    EXPECT_EQ(c.choice, AdvisedChoice::mirrored_over_host);
    EXPECT_LT(c.predicted_ratio, 1) << c.model << " batch " << c.batch;
    EXPECT_FALSE(c.contradicted()) << c.model << " batch " << c.batch;
    separated += c.separated;
  }
  EXPECT_GE(separated, 6);  // the pairs that say something: 6 in the committed run
  const json mpi = validation_run("mpi_validation.json");
  const auto bf16 = check_advice(recompute_validation(mpi, profile_of(mpi.at("profile"))));
  ASSERT_EQ(bf16.size(), 16u);
  int contradicted = 0;
  for (const AdviceCheck& c : bf16) {
    EXPECT_EQ(c.choice, AdvisedChoice::bf16_over_float32);
    contradicted += c.contradicted();
  }
  EXPECT_EQ(contradicted, 0) << advice_check_table(bf16);
  // Without the sweep (the line alone), that pair contradicts the advice again.
  json line_only = mpi.at("profile");
  line_only["measurements"].erase("allreduce_sweep");
  const auto lined = check_advice(recompute_validation(mpi, profile_of(line_only)));
  EXPECT_THAT(advice_check_table(lined),
              ::testing::HasSubstr("contradicted: 784-8192-10, batch 32"));
  // The three runs on 2 ranks held out from the sweep's use: the 3 bf16 pairs that separate
  // beyond one configuration built twice all go the way the model predicts; with the line
  // alone, all 3 contradict it.
  int held_out = 0, held_out_lined = 0;
  for (int k = 1; k <= 3; ++k) {
    const json r = validation_run(fmt::format("repeated/held_out/mpi_run{}.json", k));
    for (const AdviceCheck& c :
         check_advice(recompute_validation(r, profile_of(r.at("profile"))))) {
      if (c.choice != AdvisedChoice::bf16_over_float32) continue;
      EXPECT_FALSE(c.contradicted()) << c.model << " batch " << c.batch;
      held_out += c.separated;
    }
    json no_sweep = r.at("profile");
    no_sweep["measurements"].erase("allreduce_sweep");
    for (const AdviceCheck& c : check_advice(recompute_validation(r, profile_of(no_sweep)))) {
      if (c.choice == AdvisedChoice::bf16_over_float32) held_out_lined += c.contradicted();
    }
  }
  EXPECT_EQ(held_out, 3);
  EXPECT_EQ(held_out_lined, 3);
}

// The check itself: a separated pair in the other order contradicts the advice, an
// overlapping one does not, a configuration without its partner is no pair.
TEST(ValidationRun, AnAdviceCheckCanFail) {
  auto row = [](std::string config, double predicted, std::vector<double> reps) {
    ValidationRow r;
    r.model = "784-64-10";
    r.batch = 32;
    r.config = std::move(config);
    r.predicted_seconds = predicted;
    r.measured_repetitions = reps;
    r.measured_seconds = reps[reps.size() / 2];
    return r;
  };
  const std::vector<ValidationRow> apart = {row("2 ranks bf16", 0.9, {1.2, 1.25, 1.3}),
                                            row("2 ranks", 1.0, {1.0, 1.05, 1.1})};
  const auto c = check_advice(apart);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].separated);
  EXPECT_TRUE(c[0].contradicted());
  EXPECT_THAT(advice_check_table(c), ::testing::HasSubstr("of which 1 contradicts"));
  const std::vector<ValidationRow> overlap = {row("2 devices mirrored (sharded)", 0.9, {1.0, 1.2}),
                                              row("2 devices host", 1.0, {1.1, 1.15})};
  const auto o = check_advice(overlap);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_FALSE(o[0].separated);
  EXPECT_FALSE(o[0].contradicted());
  EXPECT_TRUE(check_advice({row("2 ranks bf16", 0.9, {1.0})}).empty());
  // Predicted and measured in the same order: confirmed, not contradicted.
  const auto agree =
      check_advice({row("2 ranks bf16", 0.9, {0.8, 0.85}), row("2 ranks", 1.0, {1.0})});
  ASSERT_EQ(agree.size(), 1u);
  EXPECT_TRUE(agree[0].separated);
  EXPECT_FALSE(agree[0].contradicted());
  // A bucket size against the default, in-process and between ranks: 1 MB predicted faster
  // but measured slower, apart, contradicts; 25 MB forming the same buckets as the default
  // is predicted equal, and its separating (by chance) contradicts nothing.
  const auto buckets = check_advice(
      {row("2 devices mirrored (allreduce) 1 MB buckets", 0.9, {1.2, 1.3}),
       row("2 devices mirrored (allreduce)", 1.0, {1.0, 1.1}),
       row("2 ranks 25 MB buckets", 1.0, {0.95, 0.97}), row("2 ranks", 1.0, {1.0, 1.1})});
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].choice, AdvisedChoice::bucket_size_over_default);
  EXPECT_EQ(buckets[0].config, "2 devices mirrored (allreduce) 1 MB buckets");
  EXPECT_TRUE(buckets[0].contradicted());
  EXPECT_TRUE(buckets[1].separated);
  EXPECT_TRUE(buckets[1].predicted_equal());
  EXPECT_FALSE(buckets[1].contradicted());
  const std::string table = advice_check_table(buckets);
  EXPECT_THAT(table, ::testing::HasSubstr("a bucket size over the default: 1 pairs"));
  EXPECT_THAT(table, ::testing::HasSubstr("of which 1 contradicts"));
  EXPECT_THAT(table, ::testing::HasSubstr(
                         "and 1 pairs the model predicts equal (the same buckets): the runs "
                         "separate in 1"));
  // The run's control: the same configuration built twice measured 15% apart, so a bf16
  // pair 10% apart (every repetition apart) is within it, and neither confirms nor
  // contradicts; 30% apart it contradicts.
  auto controlled = [&](double bf16_seconds) {
    return check_advice({row("2 ranks bf16", 0.9, {bf16_seconds, bf16_seconds}),
                         row("2 ranks", 1.0, {1.0, 1.0}),
                         row("2 ranks 25 MB buckets", 1.0, {0.85, 0.85})});
  };
  const auto within = controlled(1.1);
  ASSERT_EQ(within.size(), 2u);
  EXPECT_FALSE(within[0].separated);
  EXPECT_TRUE(within[0].within_control);
  EXPECT_FALSE(within[0].contradicted());
  EXPECT_THAT(advice_check_table(within),
              ::testing::HasSubstr("1 pair whose repetitions separate is not counted"));
  EXPECT_THAT(advice_check_table(within), ::testing::HasSubstr("up to 15% apart"));
  const auto beyond = controlled(1.3);
  EXPECT_TRUE(beyond[0].separated);
  EXPECT_TRUE(beyond[0].contradicted());
  // "MB buckets" without a size before it pairs with nothing.
  EXPECT_TRUE(check_advice({row("MB buckets", 0.9, {1.0}), row("", 1.0, {1.0})}).empty());
}

// Repeated runs: a configuration misses only when it misses in more than half of them; runs
// of different configurations are refused, naming the run.
TEST(ValidationRun, RepeatedRunsMissOnlyByMajority) {
  auto row = [](std::string config, double predicted, double measured) {
    ValidationRow r;
    r.model = "784-64-10";
    r.batch = 32;
    r.config = std::move(config);
    r.devices = 2;
    r.predicted_seconds = predicted;
    r.measured_seconds = measured;
    r.predicted_speedup = r.measured_speedup = 1.5;
    return r;
  };
  // "2 ranks" is 30% off in runs 1 and 3, "2 ranks bf16" in run 2 only.
  const std::vector<std::vector<ValidationRow>> runs = {
      {row("2 ranks", 1.3, 1.0), row("2 ranks bf16", 1.0, 1.0)},
      {row("2 ranks", 1.0, 1.0), row("2 ranks bf16", 1.3, 1.0)},
      {row("2 ranks", 1.3, 1.0), row("2 ranks bf16", 1.0, 1.0)}};
  const std::vector<std::string> names = {"a.json", "b.json", "c.json"};
  const auto rows = repeated_validation(runs, names, Tolerances{});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].missed, 2);
  EXPECT_TRUE(rows[0].majority_missed());
  EXPECT_EQ(rows[1].missed, 1);
  EXPECT_FALSE(rows[1].majority_missed());
  EXPECT_EQ(rows[0].step_errors.size(), 3u);
  EXPECT_NEAR(rows[0].step_errors[0], 0.3, 1e-12);
  const std::string table = repeated_validation_table(rows);
  EXPECT_THAT(table, ::testing::HasSubstr("1 of 2 configurations out of tolerance in more than "
                                          "half of the 3 runs"));
  EXPECT_THAT(table, ::testing::HasSubstr("+0% to +30%"));
  // Two runs: one miss in two is not more than half.
  const auto two = repeated_validation({runs[0], runs[1]}, {"a.json", "b.json"}, Tolerances{});
  EXPECT_FALSE(two[0].majority_missed());
  auto other = runs;
  other[1][1].config = "2 ranks deterministic";
  test::expect_error<ConfigError>([&] { repeated_validation(other, names, Tolerances{}); },
                                  {"b.json", "2 ranks deterministic", "a.json"});
  other = runs;
  other[2].pop_back();
  test::expect_error<ConfigError>([&] { repeated_validation(other, names, Tolerances{}); },
                                  {"c.json", "1 configurations", "has 2"});
}

// The committed repeated runs (docs/results/repeated/: 3 runs on 2 MPI ranks, 3 on 2 CPU
// devices, each right after its own calibration) under the majority rule: a configuration
// that missed in at most half of them then must still do so with this build's model; the
// ones that missed in most are known misses (docs/SCALING.md). A link 4x slower, or dense
// rates 1.5x too fast, fails the same comparison.
struct RepeatedOutcome {
  int configurations = 0, known = 0, misses = 0;
  int missed_now = 0;  // by majority with this build's model, known or not
  std::string worst;
  std::vector<RepeatedRow> rows;  // with this build's model

  // The runs configuration `config` of `model` at `batch` missed in.
  int runs_missed(const std::string& model, int64_t batch, const std::string& config) const {
    for (const RepeatedRow& r : rows) {
      if (r.model == model && r.batch == batch && r.config == config) return r.missed;
    }
    ADD_FAILURE() << "no " << model << ", batch " << batch << ", " << config;
    return -1;
  }
};

// The `runs` runs of `kind` in `dir` from run `first` on, each recomputed from its profile
// after `edit`.
RepeatedOutcome compare_repeated(const std::string& kind, const std::function<void(json&)>& edit,
                                 const std::string& dir = "repeated", int runs = 3, int first = 1) {
  std::vector<std::vector<ValidationRow>> now, then;
  std::vector<std::string> names;
  for (int k = first; k < first + runs; ++k) {
    names.push_back(fmt::format("{}/{}_run{}.json", dir, kind, k));
    json run = validation_run(names.back());
    json profile = run.at("profile");
    edit(profile);
    now.push_back(recompute_validation(run, profile_of(profile)));
    then.push_back(now.back());
    for (size_t i = 0; i < then.back().size(); ++i) {
      then.back()[i].predicted_seconds = run.at("rows")[i].at("predicted_seconds").get<double>();
      then.back()[i].predicted_speedup = run.at("rows")[i].at("predicted_speedup").get<double>();
    }
  }
  const auto rows_now = repeated_validation(now, names, Tolerances{});
  const auto rows_then = repeated_validation(then, names, Tolerances{});
  RepeatedOutcome o;
  o.configurations = static_cast<int>(rows_now.size());
  o.rows = rows_now;
  for (size_t i = 0; i < rows_now.size(); ++i) {
    if (rows_now[i].majority_missed()) ++o.missed_now;
    if (rows_then[i].majority_missed()) {
      ++o.known;
    } else if (rows_now[i].majority_missed()) {
      ++o.misses;
      o.worst += fmt::format("\n  {}, batch {}, {}", rows_now[i].model, rows_now[i].batch,
                             rows_now[i].config);
    }
  }
  return o;
}

// A CPU held-out set of three runs (`dir`): 112 configurations, none that agreed in most runs
// misses now, at most `at_most` miss in most runs, and with `before` applied to every profile
// (the model the set was held out against) at least `before_at_least` do.
void expect_held_out_cpu_set(const std::string& dir, int at_most,
                             const std::function<void(json&)>& before, int before_at_least) {
  const RepeatedOutcome now = compare_repeated(
      "cpu", [](json&) {}, dir);
  EXPECT_EQ(now.configurations, 112);
  EXPECT_EQ(now.misses, 0) << "configurations that agreed in most runs now miss:" << now.worst;
  EXPECT_LE(now.missed_now, at_most);
  EXPECT_GE(compare_repeated("cpu", before, dir).missed_now, before_at_least);
}

// The held-out runs' known misses by majority, and how many configurations that agree now
// the line would miss (docs/SCALING.md, "The rate at few rows").
constexpr int kHeldOutRowsMpiKnown = 15, kHeldOutRowsMpiLine = 4;
constexpr int kHeldOutRowsCpuKnown = 25, kHeldOutRowsCpuLine = 10;
constexpr int kHeldOutRanksKnown = 17, kHeldOutRanksAlone = 6;
// docs/SCALING.md, "Deterministic mode measured with the caches emptied": missed in most runs
// with this model, and with the model before it (the same runs, its measurements removed).
constexpr int kHeldOutDeterministicMpi = 11, kHeldOutDeterministicMpiBefore = 15;
constexpr int kHeldOutDeterministicCpu = 11;
// docs/SCALING.md, "The update measured on each model": missed in most runs with this model,
// and with the update taken twice as fast as it ran.
constexpr int kHeldOutUpdateMpi = 7, kHeldOutUpdateMpiFast = 11;
constexpr int kHeldOutUpdateCpu = 10, kHeldOutUpdateCpuFast = 12;
// docs/SCALING.md, "The small model's rows, and its steps beside another core": the runs by the
// build whose element-wise loops run vectorized below the parallel grain (78ebb07).
constexpr int kHeldOutElementwiseMpi = 6, kHeldOutElementwiseMpiFast = 7;
constexpr int kHeldOutElementwiseCpu = 6, kHeldOutElementwiseCpuFast = 7;
// docs/SCALING.md, "Weight-gradient shards timed as they run": the runs on 2 CPU devices by the
// build that times them (9a587bc), missed in most with this model and with the rule before it
// (the same runs, their timings removed).
constexpr int kHeldOutShardsCpu = 5, kHeldOutShardsCpuBefore = 6;
// docs/SCALING.md, "A second CPU (2026-12-03, night)": the runs on the AMD EPYC (Zen 4) by
// 83d71a9 (held_out_zen4) and by the build that tried the exchange's passes (held_out_passes,
// whose profiles carry them; this model reads past them), missed in most with this model and
// with every model's measured steps removed (the line).
constexpr int kHeldOutZen4Cpu = 11, kHeldOutZen4CpuLine = 14;
constexpr int kHeldOutPassesCpu = 9, kHeldOutPassesCpuLine = 13;
// docs/SCALING.md, "The update on several devices at once": the runs on the same Zen 4 after
// the update's contention and the shared cache entered the profile (held_out_contention), missed
// in most with this model and with the model before (the same runs, those figures removed).
constexpr int kHeldOutContentionCpu = 7, kHeldOutContentionCpuBefore = 11;
// docs/SCALING.md, "Devices that spin for their next task": the runs by the build with spinning
// devices (held_out_spin_xeon), missed in most with this model and with the wake-up the build
// before paid.
constexpr int kHeldOutSpinXeonCpu = 3, kHeldOutSpinXeonCpuSleeping = 6;
// docs/SCALING.md, "A spin that ends on time": the runs by the build whose spin reads its clock
// before every yield (held_out_spin_fix_xeon), the same two ways.
constexpr int kHeldOutSpinFixXeonCpu = 1, kHeldOutSpinFixXeonCpuSleeping = 2;
// docs/SCALING.md, "Weight gradients timed as a step runs them": the runs by the build whose
// calibrate times them so (held_out_step_gemms_xeon), missed in most with this model and with
// those timings removed from every profile (the rule before).
constexpr int kHeldOutStepGemmsXeonCpu = 2, kHeldOutStepGemmsXeonCpuBefore = 4;
// docs/SCALING.md, "Steps at once over one shared parameter buffer": the runs by the build whose
// calibrate times the sharded reducer's steps with the devices at once
// (held_out_steps_at_once_xeon), missed in most with this model and with those timings removed
// from every profile (the rule before): one each, not the same one.
constexpr int kHeldOutStepsAtOnceXeonCpu = 1, kHeldOutStepsAtOnceXeonCpuBefore = 1;
// docs/SCALING.md, "A layer's weights and gradients in the shared cache (rejected)": the runs
// held out from that rule (held_out_layers), missed in most with this model, and with the shared
// cache's size removed from their profiles.
constexpr int kHeldOutLayersCpu = 4, kHeldOutLayersCpuNoCache = 5;
// held_out_exchange: deterministic copies and tree at the probe's times inside the shared
// cache (1 in most runs), and without the probe (3).
constexpr int kHeldOutExchangeCpu = 1, kHeldOutExchangeCpuNoProbe = 3;
// held_out_exchange_xeon: the same on the Xeon, the probe timed up to the shared cache (9 in
// most runs when measured, 7 with the host's copies at the cold rates), and as e26ceb0 took it,
// up to 4 MiB with 4 MiB's times for any larger model (11 when measured, 9 now).
constexpr int kHeldOutExchangeXeonCpu = 7, kHeldOutExchangeXeonCpuTo4MiB = 9;
// held_out_host_xeon: the host strategy's copy and sum at the cold rates for a model larger
// than the core's cache (5 in most runs), and at the warm ones (7: the model before).
constexpr int kHeldOutHostXeonCpu = 5, kHeldOutHostXeonCpuWarm = 7;
// held_out_fresh_zen4: 7 in most runs with the model as it is, 18 with the copy bandwidths
// halved (host_device and device_device: the host's and the all-reduce's copies and sums).
constexpr int kHeldOutFreshZen4Cpu = 7, kHeldOutFreshZen4CpuSlowCopies = 18;
// held_out_fresh_xeon: 1 in most of runs 2-4 (and of runs 1-3) with the model as it is; with
// every measured step of the models taken as 1.5 times faster than it ran, 100; with the
// deterministic exchange's timed copies and tree twice as long, 8.
constexpr int kHeldOutFreshXeonCpu = 1, kHeldOutFreshXeonCpuFastSteps = 100,
              kHeldOutFreshXeonCpuSlowExchange = 8;
// held_out_micro_xeon: 2 in most runs with the model as it is, and with the micro-shards'
// timings at once removed from every profile (the shares' rule) too; with those timings 1.5
// times as long, 18.
constexpr int kHeldOutMicroXeonCpu = 2, kHeldOutMicroXeonCpuShares = 2,
              kHeldOutMicroXeonCpuSlowMicro = 18;
// The all-reduce reducer's three configurations in a CPU set (the default bucket, 1 MB, 25 MB).
constexpr const char* kAllReduceConfigs[] = {"2 devices mirrored (allreduce)",
                                             "2 devices mirrored (allreduce) 1 MB buckets",
                                             "2 devices mirrored (allreduce) 25 MB buckets"};
// The host's and the all-reduce's copies and sums (host_device, device_device) at half the
// bandwidth calibrate measured.
void halve_copy_bandwidths(json& p) {
  for (const char* link : {"host_device", "device_device"}) {
    p[link]["bandwidth"] = p.at(link).at("bandwidth").get<double>() / 2;
  }
}
// held_out_host_probe_xeon: 1 in most runs with the model as it is; with the copy bandwidths
// halved (host_device and device_device), 14.
constexpr int kHeldOutHostProbeXeonCpu = 1, kHeldOutHostProbeXeonCpuSlowCopies = 14;
// held_out_caller_spin_xeon: none in most runs with the model as it is (2 when measured, by the
// ratio of the shared pass to the alone pass); with the copy bandwidths halved, 15; with the
// micro-shards' timings at once 1.5 times as long, 15.
constexpr int kHeldOutCallerSpinXeonCpu = 0, kHeldOutCallerSpinXeonCpuSlowCopies = 15,
              kHeldOutCallerSpinXeonCpuSlowMicro = 15;
// held_out_shared_seconds_xeon: 1 in most runs with the model as it is; with the copy
// bandwidths halved, 13.
constexpr int kHeldOutSharedSecondsXeonCpu = 1, kHeldOutSharedSecondsXeonCpuSlowCopies = 13;
// held_out_shared_landed_xeon: none in most runs with the model as it is; with the copy
// bandwidths halved, 13.
constexpr int kHeldOutSharedLandedXeonCpu = 0, kHeldOutSharedLandedXeonCpuSlowCopies = 13;
// held_out_rows_rule_xeon: 4 in most runs with the model as it is; with the copy bandwidths
// halved, 12.
constexpr int kHeldOutRowsRuleXeonCpu = 4, kHeldOutRowsRuleXeonCpuSlowCopies = 12;
// held_out_allreduce_xeon: none in most runs with the model as it is; with the copy bandwidths
// halved, 12.
constexpr int kHeldOutAllreduceXeonCpu = 0, kHeldOutAllreduceXeonCpuSlowCopies = 12;
// held_out_landed_zen4: 3 in most runs with the model as it is; with the copy bandwidths
// halved, 14.
constexpr int kHeldOutLandedZen4Cpu = 3, kHeldOutLandedZen4CpuSlowCopies = 14;
// held_out_own_steps_zen4: 8 in most runs with the model as it is; with the copy bandwidths
// halved, 18.
constexpr int kHeldOutOwnStepsZen4Cpu = 8, kHeldOutOwnStepsZen4CpuSlowCopies = 18;
// held_out_own_exchange_zen4: 10 in most runs with the model as it is; with the copy
// bandwidths halved, 24.
constexpr int kHeldOutOwnExchangeZen4Cpu = 10, kHeldOutOwnExchangeZen4CpuSlowCopies = 24;
// held_out_windows_zen4: 8 in most runs with the model as it is; with the copy bandwidths
// halved, 21.
constexpr int kHeldOutWindowsZen4Cpu = 8, kHeldOutWindowsZen4CpuSlowCopies = 21;
// held_out_quiet_zen4: 6 in most runs with the model as it is; with the copy bandwidths
// halved, 17.
constexpr int kHeldOutQuietZen4Cpu = 6, kHeldOutQuietZen4CpuSlowCopies = 17;
// held_out_crowded_zen4's one run: 7 missed with the model as it is; with the copy bandwidths
// halved, 20.
constexpr int kHeldOutCrowdedZen4Cpu = 7, kHeldOutCrowdedZen4CpuSlowCopies = 20;
// held_out_windows_xeon: 1 in most runs with the model as it is; with the copy bandwidths
// halved, 12.
constexpr int kHeldOutWindowsXeonCpu = 1, kHeldOutWindowsXeonCpuSlowCopies = 12;
// held_out_flushed_xeon (the first set on the Xeon of model 207, the tools computing with
// denormals flushed): 6 in most runs with the model as it is; with the copy bandwidths halved,
// 16.
constexpr int kHeldOutFlushedXeonCpu = 6, kHeldOutFlushedXeonCpuSlowCopies = 16;

// `edit` on each measured step of every model in profile `p` (dense_rates[].points and
// ranks_points).
void for_each_measured_step(json& p, const std::function<void(json&)>& edit) {
  for (auto& c : p["device"]["dense_rates"]) {
    for (const char* points : {"points", "ranks_points"}) {
      if (!c.contains(points)) continue;
      for (auto& q : c[points]) edit(q);
    }
  }
}

// Each measured step's update (dense_rates[].points and ranks_points) times `factor`; 0
// removes it (the model before: every model at the seed's update rate).
std::function<void(json&)> scale_updates(double factor) {
  return [factor](json& p) {
    for_each_measured_step(p, [factor](json& q) {
      if (factor == 0) {
        q.erase("update_seconds");
      } else {
        q["update_seconds"] = q["update_seconds"].get<double>() * factor;
      }
    });
  };
}

// Each measured step's forward and backward (dense_rates[].points and ranks_points) divided by
// `speedup`: the models' steps taken as that many times faster than they ran.
std::function<void(json&)> faster_steps(double speedup) {
  return [speedup](json& p) {
    for_each_measured_step(p, [speedup](json& q) {
      q["compute_seconds"] = q["compute_seconds"].get<double>() / speedup;
    });
  };
}

// The optimizer phase of every 1-device step in the held_out_update runs, predicted against
// measured: each model's own measured update puts every one within 20%; the seed's update
// rate, the model before, is off by more than 60% on the smallest model (which fits in the
// caches). Returns the worst error.
double worst_update_error(const std::function<void(json&)>& edit) {
  double worst = 0;
  for (const char* kind : {"mpi", "cpu"}) {
    for (int k = 1; k <= 3; ++k) {
      const json run =
          validation_run(fmt::format("repeated/held_out_update/{}_run{}.json", kind, k));
      json profile = run.at("profile");
      edit(profile);
      const auto rows = recompute_validation(run, profile_of(profile));
      for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].devices != 1) continue;
        const double measured =
            run.at("rows")[i].at("measured_phases").at("optimizer").get<double>();
        const double error = rows[i].predicted_phases.at("optimizer") / measured - 1;
        if (std::abs(error) > std::abs(worst)) worst = error;
      }
    }
  }
  return worst;
}

// The 784-256-256-10 model's 1-device step at a global batch, predicted against measured, in
// each run of a held-out set (MPI and CPU).
std::vector<double> small_model_step_errors(const std::string& dir, int64_t batch) {
  std::vector<double> errors;
  for (const char* kind : {"mpi", "cpu"}) {
    for (int k = 1; k <= 3; ++k) {
      const json run = validation_run(fmt::format("{}/{}_run{}.json", dir, kind, k));
      for (const ValidationRow& r : recompute_validation(run, profile_of(run.at("profile")))) {
        if (r.model == "784-256-256-10" && r.batch == batch && r.devices == 1) {
          errors.push_back(r.step_error());
        }
      }
    }
  }
  return errors;
}

// Below 128 rows that model's element-wise loops ran unvectorized (docs/PERFORMANCE.md,
// "Element-wise loops below the parallel grain"), so its curve, measured at 96 and 192 rows,
// ran above its step at 128 in every run before the fix; in every run after it the step is
// within a few percent.
TEST(ValidationRun, TheSmallModelsStepAt128RowsFollowsItsCurveOnceItsLoopsAreVectorized) {
  const auto before = small_model_step_errors("repeated/held_out_update", 128);
  const auto after = small_model_step_errors("repeated/held_out_elementwise", 128);
  ASSERT_EQ(before.size(), 6u);
  ASSERT_EQ(after.size(), 6u);
  EXPECT_GE(*std::min_element(before.begin(), before.end()), 0.06);
  for (double e : after) EXPECT_LE(std::abs(e), 0.04);
}

// Each model's measured steps removed from the profile: the rate line serves every model.
void rate_line(json& p) {
  for (auto& c : p["device"]["dense_rates"]) c.erase("points");
}

// Each profile's timed weight-gradient GEMMs removed: the rule before them (1/N of the
// GEMMs' fixed part).
void untimed_shards(json& p) {
  for (auto& c : p["device"]["dense_rates"]) c.erase("weight_grad_gemms");
}

// The sharded step of every model and batch in each of the held_out_shards runs: the model,
// the batch, the error with the timed GEMMs and with the rule before.
struct ShardedStep {
  std::string model;
  int64_t batch = 0;
  double now = 0, then = 0;
};
std::vector<ShardedStep> sharded_step_errors() {
  std::vector<ShardedStep> errors;
  for (int k = 1; k <= 3; ++k) {
    const json run = validation_run(fmt::format("repeated/held_out_shards/cpu_run{}.json", k));
    json before = run.at("profile");
    untimed_shards(before);
    const auto now = recompute_validation(run, profile_of(run.at("profile")));
    const auto then = recompute_validation(run, profile_of(before));
    for (size_t i = 0; i < now.size(); ++i) {
      if (now[i].config == "2 devices mirrored (sharded)") {
        errors.push_back({now[i].model, now[i].batch, now[i].step_error(), then[i].step_error()});
      }
    }
  }
  return errors;
}

// On the runs held out from the change, every model's sharded step at 16 rows per device
// (global batch 32) comes closer to measured with its weight-gradient GEMMs as timed (by 3.7
// to 10.3 points); the three large models' sharded steps at every batch are within 23% (before,
// at 32: up to 26%; at 128, 784-8192-10 went from -8%..+1% to +6%..+16%); fewer
// configurations miss in most runs.
TEST(ValidationRun, ShardedWeightGradientsFollowTheirTimedGemms) {
  const auto errors = sharded_step_errors();
  ASSERT_EQ(errors.size(), 48u);  // 4 models x 4 batches x 3 runs
  double worst_now = 0, worst_then_at_32 = 0;
  int at_32 = 0;
  for (const ShardedStep& e : errors) {
    if (e.batch == 32) {
      ++at_32;
      EXPECT_LE(std::abs(e.now), std::abs(e.then) - 0.03)
          << e.model << ": " << e.now << " against " << e.then;
    }
    if (e.model == "784-256-256-10") continue;  // its misses: lines another core holds
    worst_now = std::max(worst_now, std::abs(e.now));
    if (e.batch == 32) worst_then_at_32 = std::max(worst_then_at_32, std::abs(e.then));
  }
  EXPECT_EQ(at_32, 12);
  EXPECT_LE(worst_now, 0.23);
  EXPECT_GE(worst_then_at_32, 0.26);
  const RepeatedOutcome now = compare_repeated(
      "cpu", [](json&) {}, "repeated/held_out_shards");
  EXPECT_EQ(now.configurations, 112);
  EXPECT_LE(now.missed_now, kHeldOutShardsCpu);
  EXPECT_GE(compare_repeated("cpu", untimed_shards, "repeated/held_out_shards").missed_now,
            kHeldOutShardsCpuBefore);
}

// The first held-out runs on a second CPU model (AMD EPYC, Zen 4): this build's model predicts
// the runs by 83d71a9 as that build did (no configuration that agreed in most runs misses), the
// misses in most runs of both sets are bounded, and the rate line instead of each model's
// measured steps misses more.
TEST(ValidationRun, ASecondCpusHeldOutRunsAgreeByMajority) {
  const RepeatedOutcome zen4 = compare_repeated(
      "cpu", [](json&) {}, "repeated/held_out_zen4");
  EXPECT_EQ(zen4.misses, 0) << "configurations that agreed in most runs now miss:" << zen4.worst;
  for (const auto& [dir, known, line_misses] :
       {std::tuple{"repeated/held_out_zen4", kHeldOutZen4Cpu, kHeldOutZen4CpuLine},
        std::tuple{"repeated/held_out_passes", kHeldOutPassesCpu, kHeldOutPassesCpuLine}}) {
    const RepeatedOutcome now = compare_repeated(
        "cpu", [](json&) {}, dir);
    EXPECT_EQ(now.configurations, 112) << dir;
    EXPECT_LE(now.missed_now, known) << dir;
    EXPECT_GE(compare_repeated("cpu", rate_line, dir).missed_now, line_misses) << dir;
  }
}

// The runs held out from the update's contention and the shared cache (the model of adf137e
// recorded in the first two, this one in the third): no configuration that agreed in most runs
// misses, the misses in most runs are bounded, and the model without those figures misses more.
TEST(ValidationRun, TheUpdatesContentionHeldOutOnTheSecondCpu) {
  const std::string dir = "repeated/held_out_contention";
  const auto before = [](json& p) {
    for (const char* key :
         {"shared_cache_bytes", "update_contention", "update_contention_devices"}) {
      ASSERT_TRUE(p["device"].contains(key)) << key;
      p["device"].erase(key);
    }
  };
  expect_held_out_cpu_set(dir, kHeldOutContentionCpu, before, kHeldOutContentionCpuBefore);
}

// Three more runs on the Zen 4, held out from the shared cache's rules (adf137e) and from the
// layer rule they were measured for, which was rejected on them (its build recorded their
// predictions): no configuration that agreed in most runs misses, the misses in most runs are
// bounded, and without the cache's size the model misses more.
TEST(ValidationRun, TheSharedCacheRulesOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_layers";
  const auto no_cache = [](json& p) {
    ASSERT_TRUE(p["device"].contains("shared_cache_bytes"));
    p["device"].erase("shared_cache_bytes");
  };
  expect_held_out_cpu_set(dir, kHeldOutLayersCpu, no_cache, kHeldOutLayersCpuNoCache);
}

// Three runs measured after deterministic mode's exchange was timed on the devices at once
// (calibrate's deterministic_exchange), chosen on earlier runs: within the bound with the
// probe, and the small model's deterministic steps missed without it.
TEST(ValidationRun, DeterministicCopiesInTheSharedCacheOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_exchange";
  const auto no_probe = [](json& p) {
    ASSERT_TRUE(p["device"].contains("deterministic_exchange"));
    for (const char* key : {"deterministic_exchange", "deterministic_exchange_devices",
                            "deterministic_exchange_shards"}) {
      p["device"].erase(key);
    }
  };
  expect_held_out_cpu_set(dir, kHeldOutExchangeCpu, no_probe, kHeldOutExchangeCpuNoProbe);
}

// Three runs on the Xeon (a 480 MiB level 3, which holds every model's deterministic buffers)
// after calibrate timed the exchange up to the largest size that fits it: within the bound,
// and with the probe cut to 4 MiB and its 4 MiB times taken for the larger models (the rule
// before) the seed's deterministic steps at 32 and 128 miss.
TEST(ValidationRun, TheDeterministicExchangeTimedUpToTheSharedCacheOnTheXeon) {
  const std::string dir = "repeated/held_out_exchange_xeon";
  const auto to_4_mib = [](json& p) {
    json cut = json::array();
    for (const json& e : p.at("device").at("deterministic_exchange")) {
      if (e.at("bytes").get<int64_t>() <= int64_t{4} << 20) cut.push_back(e);
    }
    ASSERT_LT(cut.size(), p["device"]["deterministic_exchange"].size());
    const json last = cut.back();
    const double far = std::ldexp(1.0, 40), scale = far / last.at("bytes").get<double>();
    cut.push_back({{"bytes", static_cast<int64_t>(far)},
                   {"copy", last.at("copy").get<double>() * scale},
                   {"tree", last.at("tree").get<double>() * scale}});
    p["device"]["deterministic_exchange"] = cut;
  };
  expect_held_out_cpu_set(dir, kHeldOutExchangeXeonCpu, to_4_mib, kHeldOutExchangeXeonCpuTo4MiB);
}

// Three runs on the Xeon after the host strategy's weight copy and gradient sum took the cold
// rates where the model outgrows the core's cache (chosen on held_out_exchange_xeon): within
// the bound, and with the cold rates set to the warm ones (the model before, on these
// profiles, whose deterministic exchange all falls in the probe's range) the seed's and the
// deep model's host steps at 32 miss.
TEST(ValidationRun, TheHostsCopiesAtTheColdRatesOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_host_xeon";
  const auto warm = [](json& p) {
    p["device"]["cold_copy_bandwidth"] = p.at("host_device").at("bandwidth");
    p["device"]["cold_sum_bandwidth"] = p.at("host").at("memory_bandwidth");
  };
  expect_held_out_cpu_set(dir, kHeldOutHostXeonCpu, warm, kHeldOutHostXeonCpuWarm);
}

// The wake-up the build before the spinning devices paid, in a profile of a build with them:
// its probe's 45.9 us in held_out_host_xeon's run 3.
void woken_from_sleep(json& p) {
  ASSERT_LT(p.at("device").at("fork_join").get<double>(), 20e-6);
  p["device"]["fork_join"] = 45.9e-6;
}

// Three runs on the Xeon by the build whose device threads spin for their next task and whose
// calibrate times the wake-up with tasks that outlast the spin: within the bound, and with the
// wake-up the build before paid (woken_from_sleep) the small model's host and all-reduce steps
// at 32 miss.
TEST(ValidationRun, DevicesThatSpinForTheirNextTaskOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_spin_xeon";
  expect_held_out_cpu_set(dir, kHeldOutSpinXeonCpu, woken_from_sleep, kHeldOutSpinXeonCpuSleeping);
}

// Three runs on the Xeon by the build whose spin reads its clock before every yield (the cost
// model unchanged): within the bound, and with the wake-up the build before the spin paid the
// model misses more.
TEST(ValidationRun, ASpinThatEndsOnTimeOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_spin_fix_xeon";
  expect_held_out_cpu_set(dir, kHeldOutSpinFixXeonCpu, woken_from_sleep,
                          kHeldOutSpinFixXeonCpuSleeping);
}

// A profile's weight-gradient GEMM points without the fields `keys` (at least one removed).
void without_point_fields(json& p, std::initializer_list<const char*> keys) {
  int removed = 0;
  for (json& curve : p.at("device").at("dense_rates")) {
    for (json& timed : curve.at("weight_grad_gemms")) {
      for (json& point : timed.at("points")) {
        for (const char* k : keys) removed += static_cast<int>(point.erase(k));
      }
    }
  }
  ASSERT_GT(removed, 0);
}

// A profile's weight-gradient GEMMs without the timings as a step runs them (profiles before
// 2026-12-05): the warm or cold shares of the weight-gradient part instead.
void without_step_timings(json& p) {
  without_point_fields(p, {"whole_step", "shard_step", "input_step"});
}

// Three runs on the Xeon by the build whose calibrate times each model's backward GEMMs as a
// step runs them: within the bound, and with those timings removed the model misses more; the
// deep 6 x 1024 model's sharded step at 32 (the one the last set missed) misses in one run now,
// in two without them.
TEST(ValidationRun, WeightGradientsTimedAsAStepRunsThemOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_step_gemms_xeon";
  expect_held_out_cpu_set(dir, kHeldOutStepGemmsXeonCpu, without_step_timings,
                          kHeldOutStepGemmsXeonCpuBefore);
  const std::string deep = "784-1024-1024-1024-1024-1024-1024-10";
  const std::string sharded = "2 devices mirrored (sharded)";
  const auto as_is = [](json&) {};
  EXPECT_LE(compare_repeated("cpu", as_is, dir).runs_missed(deep, 32, sharded), 1);
  EXPECT_GE(compare_repeated("cpu", without_step_timings, dir).runs_missed(deep, 32, sharded), 2);
}

// A profile's weight-gradient GEMMs without the steps at once (profiles before 2026-12-05,
// later), as the points' four fields or the array `steps_at_once`: the step-timed GEMMs' saved
// share of one device's backward instead.
void without_steps_at_once(json& p) {
  int arrays = 0;
  for (json& curve : p.at("device").at("dense_rates")) {
    for (json& timed : curve.at("weight_grad_gemms")) {
      arrays += static_cast<int>(timed.erase("steps_at_once"));
    }
  }
  if (arrays > 0) return;
  without_point_fields(p, {"forward_alone", "backward_alone", "forward_shared", "backward_shared"});
}

// A profile's steps at once (the `steps_at_once` arrays) at the weight-gradient points' rows
// only, as calibrate times them: the rejected grid's rows between them removed.
void at_the_points_rows_only(json& p) {
  int removed = 0;
  for (json& curve : p.at("device").at("dense_rates")) {
    for (json& timed : curve.at("weight_grad_gemms")) {
      std::set<int64_t> rows;
      for (const json& point : timed.at("points")) rows.insert(point.at("rows").get<int64_t>());
      json kept = json::array();
      for (json& at_once : timed.at("steps_at_once")) {
        if (rows.count(at_once.at("rows").get<int64_t>()) > 0) {
          kept.push_back(at_once);
        } else {
          ++removed;
        }
      }
      ASSERT_EQ(kept.size(), rows.size());
      timed["steps_at_once"] = kept;
    }
  }
  ASSERT_GT(removed, 0);
}

// Three runs on the Xeon by the build whose calibrate times each model's steps with the
// devices at once over one shared parameter buffer: one configuration missed in most runs, as
// with those timings removed, but not the same one. 784-256-256-10's sharded step at 32 (which
// the last set missed in every run) misses in one (in none when they were measured, by the
// ratio of the shared pass to the alone pass), in two without them; the deep 6 x 1024 model's in
// none; 784-8192-10's at 128 (64 rows, between the probe's 48 and 96) misses in two, in none
// without them.
TEST(ValidationRun, StepsAtOnceOverOneSharedBufferOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_steps_at_once_xeon";
  expect_held_out_cpu_set(dir, kHeldOutStepsAtOnceXeonCpu, without_steps_at_once,
                          kHeldOutStepsAtOnceXeonCpuBefore);
  const std::string sharded = "2 devices mirrored (sharded)";
  const std::string deep = "784-1024-1024-1024-1024-1024-1024-10";
  const RepeatedOutcome now = compare_repeated(
      "cpu", [](json&) {}, dir);
  const RepeatedOutcome before = compare_repeated("cpu", without_steps_at_once, dir);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, sharded), 1);
  EXPECT_EQ(before.runs_missed("784-256-256-10", 32, sharded), 2);
  EXPECT_EQ(now.runs_missed(deep, 32, sharded), 0);
  EXPECT_EQ(now.runs_missed("784-8192-10", 128, sharded), 2);
  EXPECT_EQ(before.runs_missed("784-8192-10", 128, sharded), 0);
}

// Three runs on the Xeon by a build that timed the steps at once also at thirds of an octave
// between the calibration rows below 192 (docs/SCALING.md, "Steps at once at thirds of an
// octave (rejected)"): 1 configuration missed in most runs with the thirds and without them
// (784-256-256-10's sharded step at 32, in 2 either way). 784-8192-10's sharded step at 128 (64
// rows, what the grid was for) misses in no run either way, and its step at 32 in none. By the
// ratio of the shared pass to the alone pass (the model when the set was measured) that step at
// 32 missed in all 3 runs with the thirds and in 2 without, so 2 configurations missed in most
// runs either way.
TEST(ValidationRun, StepsAtOnceAtThirdsOfAnOctaveOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_thirds_xeon";
  const std::string sharded = "2 devices mirrored (sharded)";
  const RepeatedOutcome thirds = compare_repeated(
      "cpu", [](json&) {}, dir);
  const RepeatedOutcome points = compare_repeated("cpu", at_the_points_rows_only, dir);
  EXPECT_EQ(thirds.configurations, 112);
  EXPECT_EQ(thirds.misses, 0) << "configurations that agreed in most runs now miss:"
                              << thirds.worst;
  EXPECT_EQ(thirds.missed_now, 1);
  EXPECT_EQ(points.missed_now, 1);
  EXPECT_EQ(thirds.runs_missed("784-8192-10", 128, sharded), 0);
  EXPECT_EQ(points.runs_missed("784-8192-10", 128, sharded), 0);
  EXPECT_EQ(thirds.runs_missed("784-8192-10", 32, sharded), 0);
  EXPECT_EQ(points.runs_missed("784-8192-10", 32, sharded), 0);
  EXPECT_EQ(thirds.runs_missed("784-256-256-10", 32, sharded), 2);
  EXPECT_EQ(points.runs_missed("784-256-256-10", 32, sharded), 2);
}

// A profile's steps at once without the rounds' medians (each `steps_at_once` entry's `median`):
// the ratio of the best of the rounds, the rule before held_out_median_xeon.
void without_medians(json& p) {
  int removed = 0;
  for (json& curve : p.at("device").at("dense_rates")) {
    for (json& timed : curve.at("weight_grad_gemms")) {
      for (json& at_once : timed.at("steps_at_once")) removed += at_once.erase("median");
    }
  }
  ASSERT_GT(removed, 0);
}

// Three runs on the Xeon by the build whose calibrate records the steps at once's median of
// the rounds beside their best (docs/SCALING.md, "Steps at once from the rounds' medians"),
// recomputed with the medians (the model now) and with the best (the model before); the
// criterion, fixed before the runs, in docs/results/repeated/README.md. One configuration
// missed in most runs either way (784-256-256-10's deterministic step at 32, in every run).
// When measured, by the ratio of the shared pass to the alone pass: 5 misses over the 3 runs
// against 6, 784-8192-10's sharded step at 32 in none against 1, and the sharded steps' summed
// |step error| 2.36 against 2.62. At the shared pass's own seconds: 4 misses against 5, that step
// in none either way, and the summed |step error| 1.55 against 1.45; by the rule by rows (the
// model since: those seconds below 32 rows per device, the ratio from 32): 5 misses against 5,
// and 1.76 against 1.71. The set's criterion that the medians' summed error be the smaller no
// longer holds here. Over the 3
// runs of each of six later Xeon and Zen 4 sets (docs/SCALING.md, "The shared pass's seconds,
// landed") the median |step error| of the sharded steps at 32 was smaller with the medians in
// five; the medians are kept on that description, not on a held-out check.
TEST(ValidationRun, StepsAtOnceFromTheRoundsMediansOnAFreshHeldOutSet) {
  const std::string dir = "repeated/held_out_median_xeon";
  const std::string sharded = "2 devices mirrored (sharded)";
  const RepeatedOutcome median = compare_repeated(
      "cpu", [](json&) {}, dir);
  const RepeatedOutcome best = compare_repeated("cpu", without_medians, dir);
  EXPECT_EQ(median.configurations, 112);
  EXPECT_EQ(median.misses, 0) << "configurations that agreed in most runs now miss:"
                              << median.worst;
  EXPECT_EQ(median.missed_now, 1);
  EXPECT_EQ(best.missed_now, 1);
  const auto summed = [&](const RepeatedOutcome& o) {
    int misses = 0;
    double step_errors = 0;
    for (const RepeatedRow& r : o.rows) {
      misses += r.missed;
      if (r.config != sharded) continue;
      for (const double e : r.step_errors) step_errors += std::abs(e);
    }
    return std::pair{misses, step_errors};
  };
  const auto [median_misses, median_errors] = summed(median);
  const auto [best_misses, best_errors] = summed(best);
  EXPECT_EQ(median_misses, 5);
  EXPECT_EQ(best_misses, 5);
  EXPECT_NEAR(median_errors, 1.762, 0.0005);
  EXPECT_NEAR(best_errors, 1.715, 0.0005);
  EXPECT_EQ(median.runs_missed("784-8192-10", 32, sharded), 0);
  EXPECT_EQ(best.runs_missed("784-8192-10", 32, sharded), 0);
  EXPECT_EQ(median.runs_missed("784-256-256-10", 32, "2 devices mirrored deterministic"), 3);
  EXPECT_EQ(best.runs_missed("784-256-256-10", 32, "2 devices mirrored deterministic"), 3);
}

// A fresh MPI set with no change under test (`dir`): 96 configurations, none that agreed in
// most runs misses now, `missed` miss in most runs, and `line` with the all-reduce sweep removed
// from every profile (every bucket on the link's line). Returns the model's outcome.
RepeatedOutcome expect_fresh_mpi_set(const std::string& dir, int missed, int line) {
  const RepeatedOutcome now = compare_repeated(
      "mpi", [](json&) {}, dir);
  EXPECT_EQ(now.configurations, 96);
  EXPECT_EQ(now.misses, 0) << "configurations that agreed in most runs now miss:" << now.worst;
  EXPECT_EQ(now.missed_now, missed);
  const RepeatedOutcome without_sweep = compare_repeated(
      "mpi", [](json& p) { ASSERT_EQ(p["measurements"].erase("allreduce_sweep"), 1u); }, dir);
  EXPECT_EQ(without_sweep.missed_now, line);
  return now;
}

// The hardware profile run k (1 to 3) of the CPU set `dir` was predicted with.
HardwareProfile cpu_run_profile(const std::string& dir, int k) {
  return profile_of(validation_run(fmt::format("{}/cpu_run{}.json", dir, k)).at("profile"));
}

// A fresh CPU set (`dir`): 112 configurations, none that agreed in most runs misses now,
// `missed` miss in most runs, and `slow_copies` or more with the copy bandwidths halved
// (halve_copy_bandwidths). Returns the model's outcome.
RepeatedOutcome expect_fresh_cpu_set(const std::string& dir, int missed, int slow_copies) {
  const RepeatedOutcome now = compare_repeated(
      "cpu", [](json&) {}, dir);
  EXPECT_EQ(now.configurations, 112);
  EXPECT_EQ(now.misses, 0) << "configurations that agreed in most runs now miss:" << now.worst;
  EXPECT_EQ(now.missed_now, missed);
  EXPECT_GE(compare_repeated("cpu", halve_copy_bandwidths, dir).missed_now, slow_copies);
  return now;
}

// Three fresh runs on 2 MPI ranks by the build of 4b67b06 (2026-12-05, the session after; no
// change under test, the first MPI set since held_out_elementwise): 2 of 96 configurations
// missed in most runs (784-8192-10's deterministic step at 32 and 784-256-256-10's bf16 step at
// 32, both in every run), fewer than the 6 written down before the runs; with the all-reduce
// sweep removed from the profiles (every bucket on the link's line) 17.
TEST(ValidationRun, TheModelOnAFreshMpiSet) {
  const RepeatedOutcome now = expect_fresh_mpi_set("repeated/held_out_mpi_xeon", 2, 17);
  EXPECT_EQ(now.runs_missed("784-8192-10", 32, "2 ranks deterministic"), 3);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 ranks bf16"), 3);
}

// Three fresh runs on the Zen 4 by the build of 02a2b8b (2026-12-05, later; no change under
// test, every change chosen on the Xeon since held_out_exchange held out on a second CPU): 7 of
// 112 missed in most runs, against the 1 written down before them. Six are 784-256-256-10's
// configurations over one shared parameter buffer at 32 and 128, missed in runs 2 and 3 only,
// whose update ran 3.5-7 times as long there; the seventh, the seed's deterministic step at 32,
// in all 3 (its micro-shards slowed by the memory share). With the copy bandwidths halved 18
// miss; each bound fails when tightened by one.
TEST(ValidationRun, TheModelOnAFreshZen4Set) {
  const std::string dir = "repeated/held_out_fresh_zen4";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutFreshZen4Cpu, kHeldOutFreshZen4CpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-4096-2048-512-64-10", 32, "2 devices mirrored deterministic"), 3);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices host"), 3);
  for (const int64_t batch : {32, 128}) {
    for (const char* config :
         {"2 devices mirrored (sharded)", "2 devices mirrored deterministic"}) {
      EXPECT_EQ(now.runs_missed("784-256-256-10", batch, config), 2) << batch << " " << config;
    }
    EXPECT_EQ(now.runs_missed("784-256-256-10", batch, "2 devices mirrored (allreduce)"), 0);
  }
  EXPECT_EQ(now.runs_missed("784-256-256-10", 128, "2 devices host"), 2);
}

// Four runs on the Xeon by the build of 6882688 (2026-12-05/06, 23:27-00:19 UTC; no change under
// test, the model that missed 7 on the Zen 4 back on the CPU it was chosen on). Run 1 is disturbed:
// all six 2-device configurations of 784-256-256-10 at 32 missed in it while another process ran on
// one of the two cores, so run 4 replaced it (decided before runs 2 and 3 were read). 1 of 112
// missed in most of runs 2-4 (the seed's host step at 32, in 2), within the 2 written down
// before; runs 1-3 give the same 1.
TEST(ValidationRun, TheModelOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_fresh_xeon";
  const std::string host = "2 devices host";
  const auto as_is = [](json&) {};
  const RepeatedOutcome now = compare_repeated("cpu", as_is, dir, 3, 2);
  EXPECT_EQ(now.configurations, 112);
  EXPECT_EQ(now.misses, 0) << "configurations that agreed in most runs now miss:" << now.worst;
  EXPECT_EQ(now.missed_now, kHeldOutFreshXeonCpu);
  EXPECT_EQ(now.runs_missed("784-4096-2048-512-64-10", 32, host), 2);
  const RepeatedOutcome first_three = compare_repeated("cpu", as_is, dir, 3, 1);
  EXPECT_EQ(first_three.missed_now, kHeldOutFreshXeonCpu);
  EXPECT_EQ(first_three.runs_missed("784-4096-2048-512-64-10", 32, host), 2);
  const RepeatedOutcome run1 = compare_repeated("cpu", as_is, dir, 1, 1);
  for (const char* config : {"2 devices mirrored (sharded)", "2 devices mirrored deterministic",
                             "2 devices mirrored (allreduce)", "2 devices host"}) {
    EXPECT_EQ(run1.runs_missed("784-256-256-10", 32, config), 1) << "run 1, " << config;
  }
  const auto slow_exchange = [](json& p) {
    for (auto& e : p["device"]["deterministic_exchange"]) {
      for (const char* part : {"copy", "tree"}) e[part] = e.at(part).get<double>() * 2;
    }
  };
  EXPECT_GE(compare_repeated("cpu", faster_steps(1.5), dir, 3, 2).missed_now,
            kHeldOutFreshXeonCpuFastSteps);
  EXPECT_GE(compare_repeated("cpu", slow_exchange, dir, 3, 2).missed_now,
            kHeldOutFreshXeonCpuSlowExchange);
}

// `edit` on the micro-shards' timings at once (forward_micro and backward_micro of every
// steps_at_once entry and its median) in profile `p`, and on each weight_grad_gemms entry that
// holds them; fails where the profile has none.
void for_each_micro_timing(
    json& p, const std::function<void(json&, const char*)>& on_time,
    const std::function<void(json&)>& on_entry = [](json&) {}) {
  int timed = 0;
  for (json& curve : p.at("device").at("dense_rates")) {
    for (json& shards : curve.at("weight_grad_gemms")) {
      if (!shards.contains("micro_shards")) continue;
      for (json& at_once : shards.at("steps_at_once")) {
        for (json* t : {&at_once, &at_once.at("median")}) {
          for (const char* k : {"forward_micro", "backward_micro"}) {
            on_time(*t, k);
            ++timed;
          }
        }
      }
      on_entry(shards);
    }
  }
  ASSERT_GT(timed, 0);
}

// A profile without the micro-shards timed at once (profiles before 2026-12-06): deterministic
// mode's micro-shards slowed by the devices' shares instead.
void without_micro_shards(json& p) {
  for_each_micro_timing(
      p, [](json& t, const char* k) { t.erase(k); },
      [](json& shards) { shards.erase("micro_shards"); });
}

// Three runs on the Xeon by the build of 1da6e43, whose calibrate and validation refits time
// deterministic mode's micro-shards with every device at once (2026-12-06, 03:20-04:10 UTC): 2 of
// 112 missed in most runs (784-256-256-10's host step and 784-8192-10's with 1 MB buckets, both
// at 32), within the 2 written down before them; none of the 16 deterministic configurations in
// most runs, as with the shares' rule on the same runs (written down before: no more). With the
// micro-shards' timings 1.5 times as long, every deterministic configuration misses.
TEST(ValidationRun, MicroShardsTimedAtOnceOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_micro_xeon";
  const RepeatedOutcome now = compare_repeated(
      "cpu", [](json&) {}, dir);
  EXPECT_EQ(now.configurations, 112);
  EXPECT_EQ(now.misses, 0) << "configurations that agreed in most runs now miss:" << now.worst;
  EXPECT_EQ(now.missed_now, kHeldOutMicroXeonCpu);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices host"), 2);
  EXPECT_EQ(now.runs_missed("784-8192-10", 32, "2 devices mirrored (allreduce) 1 MB buckets"), 2);
  const RepeatedOutcome shares = compare_repeated("cpu", without_micro_shards, dir);
  EXPECT_EQ(shares.missed_now, kHeldOutMicroXeonCpuShares);
  const auto deterministic_missed = [](const RepeatedOutcome& o) {
    int missed = 0, configurations = 0;
    for (const RepeatedRow& r : o.rows) {
      if (r.config != "2 devices mirrored deterministic") continue;
      ++configurations;
      if (r.majority_missed()) ++missed;
    }
    EXPECT_EQ(configurations, 16);
    return missed;
  };
  EXPECT_EQ(deterministic_missed(now), 0);
  EXPECT_EQ(deterministic_missed(shares), 0);
  const auto slow_micro = [](json& p) {
    for_each_micro_timing(p, [](json& t, const char* k) { t[k] = t.at(k).get<double>() * 1.5; });
  };
  const RepeatedOutcome slow = compare_repeated("cpu", slow_micro, dir);
  EXPECT_GE(slow.missed_now, kHeldOutMicroXeonCpuSlowMicro);
  EXPECT_EQ(deterministic_missed(slow), 16);
}

// Three fresh runs on the Xeon by the build whose calibrate times the host strategy's copies at
// once (846d47b; 2026-12-06, 06:59-07:39 UTC), which the model does not use: 1 of 112 missed
// in most runs (784-256-256-10's deterministic step at 32, in all 3), within the 2 written down
// before them. The rule that costs the host's copies at the probe's times missed 3 there (not
// landed; docs/SCALING.md, "The host's copies timed at once"). Every profile carries the probe,
// from 64 KiB to the 2 MiB L2, so a later rule can be recomputed on these runs.
TEST(ValidationRun, TheHostsCopiesProbeOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_host_probe_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutHostProbeXeonCpu, kHeldOutHostProbeXeonCpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices mirrored deterministic"), 3);
  for (const int64_t batch : {32, 128}) {
    EXPECT_EQ(now.runs_missed("784-256-256-10", batch, "2 devices host"), 0) << batch;
  }
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = cpu_run_profile(dir, k);
    ASSERT_EQ(hw.device.host_exchange_devices, 2) << "run " << k;
    ASSERT_EQ(hw.device.host_exchange.size(), 6u) << "run " << k;
    EXPECT_EQ(hw.device.host_exchange.front().bytes, int64_t{64} << 10) << "run " << k;
    EXPECT_EQ(hw.device.host_exchange.back().bytes, int64_t{2} << 20) << "run " << k;
  }
}

// Three runs on the Xeon by the build of 9b5e4f7 (2026-12-06, 10:16-10:53 UTC), whose
// DeviceGroup caller spins up to 2 ms and whose micro-shards probe runs the step's sums between
// its passes: 2 of 112 missed in most runs (784-8192-10's and the deep model's sharded steps at
// 32, over-predicted), within the 2 written down before them; none since the sharded step takes
// the shared pass's own seconds, which these runs led to; 784-256-256-10's deterministic
// step at 32 missed in 1 (in all 3 of held_out_host_probe_xeon's), its step 7.5-10.4% under
// in each (docs/SCALING.md, "The caller's spin and the micro-shards' sums, held out").
TEST(ValidationRun, TheCallersSpinAndTheMicroShardsSumsOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_caller_spin_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutCallerSpinXeonCpu, kHeldOutCallerSpinXeonCpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-8192-10", 32, "2 devices mirrored (sharded)"), 0);
  EXPECT_EQ(
      now.runs_missed("784-1024-1024-1024-1024-1024-1024-10", 32, "2 devices mirrored (sharded)"),
      0);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices mirrored deterministic"), 1);
  const auto slow_micro = [](json& p) {
    for_each_micro_timing(p, [](json& t, const char* k) { t[k] = t.at(k).get<double>() * 1.5; });
  };
  EXPECT_GE(compare_repeated("cpu", slow_micro, dir).missed_now,
            kHeldOutCallerSpinXeonCpuSlowMicro);
}

// The median |step error| of a 3-run set's steps whose configuration starts with `prefix`, at
// every batch, or at `batch` only; `expected` of them (a check of the prefix).
double median_step_error(const RepeatedOutcome& o, const std::string& prefix, size_t expected,
                         int64_t batch = 0) {
  std::vector<double> errors;
  for (const RepeatedRow& r : o.rows) {
    if (!r.config.starts_with(prefix) || (batch != 0 && r.batch != batch)) continue;
    for (const double e : r.step_errors) errors.push_back(std::abs(e));
  }
  if (errors.size() != expected || expected == 0) {
    ADD_FAILURE() << errors.size() << " step errors of '" << prefix << "', not " << expected;
    return -1;
  }
  std::sort(errors.begin(), errors.end());
  return expected % 2 == 1 ? errors[expected / 2]
                           : (errors[expected / 2 - 1] + errors[expected / 2]) / 2;
}

// The same of the 2-device sharded steps of its 4 models: at every batch (48), or at `batch`
// only (12).
double sharded_median_error(const RepeatedOutcome& o, int64_t batch = 0) {
  return median_step_error(o, "2 devices mirrored (sharded)", batch != 0 ? 12u : 48u, batch);
}

// Three more runs on the Xeon by the build of 90dec46 (2026-12-06, 11:49-12:31 UTC), held out
// for the rule that a sharded step's forward and backward take the steps-at-once probe's shared
// pass's own seconds, which that build did not use (docs/SCALING.md, "A fresh set for the shared
// pass's seconds"): 1 of 112 missed in most runs with it and without it (784-256-256-10's host
// step at 32, in 2 of 3), within the 2 written down before them. The median |step error| of the
// four models' 2-device sharded steps at 32 was 4.2% over the 3 runs, against 9.0% by the ratio
// of the shared pass to the alone pass (the model when they ran).
TEST(ValidationRun, TheSharedPassSecondsOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_shared_seconds_xeon";
  const RepeatedOutcome now = expect_fresh_cpu_set(dir, kHeldOutSharedSecondsXeonCpu,
                                                   kHeldOutSharedSecondsXeonCpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices host"), 2);
  EXPECT_NEAR(sharded_median_error(now, 32), 0.042, 0.0005);
}

// Three runs on the Xeon by the build of fbf9d0b (2026-12-06, next session, 13:47-14:28 UTC),
// whose model takes the shared pass's seconds: none of 112 missed in most runs, within the 2
// written down before them (docs/SCALING.md, "The shared pass's seconds on a fresh set"). The
// median |step error| of the four models' 2-device sharded steps at the four batches over the 3
// runs was 4.0% (2.6% by the ratio of the shared pass to the alone pass, recomputed by the build
// before: the criteria for the rule at 32 and at 2048 failed); by the rule by rows written after
// it (the model since) 2.6%. 784-256-256-10's host step at 32, missed in most runs of the set
// before, misses in none (+14% to +18%).
TEST(ValidationRun, TheLandedSharedPassOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_shared_landed_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutSharedLandedXeonCpu, kHeldOutSharedLandedXeonCpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices host"), 0);
  EXPECT_NEAR(sharded_median_error(now), 0.0256, 0.0005);
}

// Three runs on the Xeon by the build of 70f55a4 (2026-12-06, next session, 15:29-16:09 UTC),
// held out for rows_rule.patch (the shared pass's seconds below 32 rows per device, the ratio
// from 32), which that build did not use: 4 of 112 missed in most runs either way, over the 2
// written down before them, all four all-reduce steps at 32 (speedup under-predicted); the median
// |step error| of the 48 sharded steps 3.4% by the rule (the model since), 3.5% by the build's
// (docs/SCALING.md, "The rule by rows on a fresh set").
TEST(ValidationRun, TheRuleByRowsOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_rows_rule_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutRowsRuleXeonCpu, kHeldOutRowsRuleXeonCpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices mirrored (allreduce) 1 MB buckets"),
            3);
  EXPECT_NEAR(sharded_median_error(now), 0.0337, 0.0005);
}

// Three runs on the Xeon by the build of d83dc87 (2026-12-06, evening, 18:04-18:43 UTC), whose
// profiles carry the all-reduce of one bucket timed at once, held out for allreduce_rule.patch
// (each bucket at the probe's seconds), which that build does not use: none of 112 missed in most
// runs (3, 3 and 1 per run), within the 2 written down before them, the rule by rows replicated;
// the median |step error| of the 48 sharded steps 4.0%, and of the 144 all-reduce steps 2.7%
// (docs/SCALING.md, "The all-reduce timed at once"). The profiles' tables are checked here too:
// 2 devices, 4 KiB to 64 MiB.
TEST(ValidationRun, TheAllreduceProbeOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_allreduce_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutAllreduceXeonCpu, kHeldOutAllreduceXeonCpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices mirrored (allreduce)"), 1);
  EXPECT_NEAR(sharded_median_error(now), 0.0399, 0.0005);
  // The all-reduce steps (3 bucket settings): 144, and the 36 at 32. allreduce_rule.patch gave
  // 3.5% and 5.6%.
  const std::string allreduce = "2 devices mirrored (allreduce)";
  EXPECT_NEAR(median_step_error(now, allreduce, 144), 0.0270, 0.0005);
  EXPECT_NEAR(median_step_error(now, allreduce, 36, 32), 0.0296, 0.0005);
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = cpu_run_profile(dir, k);
    ASSERT_EQ(hw.device.allreduce_exchange_devices, 2) << "run " << k;
    ASSERT_EQ(hw.device.allreduce_exchange.size(), 15u) << "run " << k;
    EXPECT_EQ(hw.device.allreduce_exchange.front().bytes, 4096) << "run " << k;
    EXPECT_EQ(hw.device.allreduce_exchange.back().bytes, int64_t{64} << 20) << "run " << k;
  }
}

// Three runs on the Zen 4 by the build of b4a1e06 (2026-12-06, night, 20:44-21:39 UTC), the first
// on that CPU since held_out_fresh_zen4: every change since chosen on the Xeon held out on a
// second CPU (docs/SCALING.md, "The landed model on a fresh Zen 4 set"). 3 of 112 missed in most
// runs (3, 11 and 11 per run), over the 2 written down before them: 784-256-256-10's host step and
// its all-reduce step with 25 MB buckets at 32 (both in every run), and the deep model's sharded
// step at 32 (in 2). The seed's deterministic step at 32, missed in all 3 runs of the set before
// (its micro-shards slowed by the memory share), misses in none with the micro-shards timed at
// once. The median |step error| of the 48 sharded steps 3.6% (the shared pass's seconds at every
// row count 3.4%, the ratio 3.8%), of the 144 all-reduce steps 4.3% and of the 36 at 32 9.1%
// (cold_allreduce_rule.patch: 4.9% and 12.1%, and 6 missed). Run 2's calibration timed two
// devices' shards of one 256 KiB buffer's update at 14.9 times one device's whole update, the
// other two at 2.8 and 3.5: it ran in a window in which a buffer the other core has read costs
// several times its usual to update, which its validation did not.
TEST(ValidationRun, TheLandedModelOnAFreshZen4Set) {
  const std::string dir = "repeated/held_out_landed_zen4";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutLandedZen4Cpu, kHeldOutLandedZen4CpuSlowCopies);
  const std::string small = "784-256-256-10", seed = "784-4096-2048-512-64-10";
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices host"), 3);
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices mirrored (allreduce) 25 MB buckets"), 3);
  EXPECT_EQ(
      now.runs_missed("784-1024-1024-1024-1024-1024-1024-10", 32, "2 devices mirrored (sharded)"),
      2);
  EXPECT_EQ(now.runs_missed(seed, 32, "2 devices mirrored deterministic"), 0);
  EXPECT_NEAR(sharded_median_error(now), 0.036, 0.0005);
  const std::string allreduce = "2 devices mirrored (allreduce)";
  EXPECT_NEAR(median_step_error(now, allreduce, 144), 0.043, 0.0005);
  EXPECT_NEAR(median_step_error(now, allreduce, 36, 32), 0.091, 0.0005);
  std::vector<double> shard_at_256k;
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = cpu_run_profile(dir, k);
    ASSERT_EQ(hw.device.update_contention_devices, 2) << "run " << k;
    ASSERT_FALSE(hw.device.update_contention.empty()) << "run " << k;
    ASSERT_EQ(hw.device.update_contention.front().bytes, 256 << 10) << "run " << k;
    shard_at_256k.push_back(hw.device.update_contention.front().shard);
  }
  EXPECT_NEAR(shard_at_256k[0], 2.78, 0.005);
  EXPECT_NEAR(shard_at_256k[1], 14.86, 0.005);
  EXPECT_NEAR(shard_at_256k[2], 3.54, 0.005);
}

// `check` on every steps-at-once entry of every model in each of the set's 3 runs, after checking
// that each run's profile has the 4 models' curves, one device count's timings each, at 9 row
// counts (bench validate's refits).
void for_each_steps_at_once(
    const std::string& dir,
    const std::function<void(int, const DenseRateCurve&, const StepsAtOnceSeconds&)>& check) {
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = cpu_run_profile(dir, k);
    ASSERT_EQ(hw.device.dense_rates.size(), 4u) << "run " << k;
    for (const DenseRateCurve& c : hw.device.dense_rates) {
      ASSERT_EQ(c.weight_grad_gemms.size(), 1u) << "run " << k;
      const std::vector<StepsAtOnceSeconds>& at_once = c.weight_grad_gemms[0].at_once;
      ASSERT_EQ(at_once.size(), 9u) << "run " << k;
      for (const StepsAtOnceSeconds& a : at_once) check(k, c, a);
    }
  }
}

// Three fresh runs on the Zen 4 by the build of 483df40 (2026-12-07, 00:33-01:31 UTC), which
// times every model's steps at once over each device's own copy and the wait for the last
// device's backward (forward_own, backward_own, wait_own; not used by the model), held out for
// three rules written down before them (docs/SCALING.md, "Steps over own copies and the wait for
// the last device"): all three newly miss configurations the model does not. The model misses 8
// of 112 in most runs, against the 2 written down: six of 784-256-256-10 at 32 and 128 (its
// all-reduce exchange put at the memory rates, 0.117-0.132 ms against 0.034-0.053 measured; its
// host copies; its deterministic step, in run 2 after a calibration that timed two devices'
// shards of a 256 KiB update at 12.4 times one device's whole update), 784-8192-10's sharded
// step at 32 and the deep model's all-reduce step with 1 MB buckets at 32. The median |step
// error| of the 144 all-reduce steps is 5.3%, of the 36 at 32 11.3%, of the 48 sharded 3.3%.
TEST(ValidationRun, TheOwnStepsProbeOnAFreshZen4Set) {
  const std::string dir = "repeated/held_out_own_steps_zen4";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutOwnStepsZen4Cpu, kHeldOutOwnStepsZen4CpuSlowCopies);
  const std::string small = "784-256-256-10", allreduce = "2 devices mirrored (allreduce)";
  EXPECT_EQ(now.runs_missed("784-8192-10", 32, "2 devices mirrored (sharded)"), 2);
  EXPECT_EQ(now.runs_missed(small, 32, allreduce), 2);
  EXPECT_EQ(now.runs_missed(small, 32, allreduce + " 1 MB buckets"), 3);
  EXPECT_EQ(now.runs_missed(small, 32, allreduce + " 25 MB buckets"), 2);
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices mirrored deterministic"), 2);
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices host"), 3);
  EXPECT_EQ(now.runs_missed(small, 128, "2 devices host"), 2);
  EXPECT_EQ(
      now.runs_missed("784-1024-1024-1024-1024-1024-1024-10", 32, allreduce + " 1 MB buckets"), 2);
  EXPECT_NEAR(sharded_median_error(now), 0.033, 0.0005);
  EXPECT_NEAR(median_step_error(now, allreduce, 144), 0.053, 0.0005);
  EXPECT_NEAR(median_step_error(now, allreduce, 36, 32), 0.113, 0.0005);
  // Every run timed every model's steps over own copies at its 9 row counts (bench validate's
  // refits), the medians and the best; run 2's calibration ran in the window where the
  // shards' update ran long.
  for_each_steps_at_once(dir, [](int k, const DenseRateCurve&, const StepsAtOnceSeconds& a) {
    EXPECT_TRUE(a.best.has_own() && a.median.has_own()) << "run " << k << ", " << a.rows;
    EXPECT_GE(a.median.wait_own, a.best.wait_own) << "run " << k << ", " << a.rows;
  });
  const HardwareProfile run2 = cpu_run_profile(dir, 2);
  ASSERT_FALSE(run2.device.update_contention.empty());
  EXPECT_NEAR(run2.device.update_contention.front().shard, 12.36, 0.005);
}

// Three fresh runs on the Zen 4 by the build of 05340fa (2026-12-07, 04:06-05:09 UTC), whose
// own pass ends in the all-reduce of each device's gradients (exchange_own; not used by the
// model), held out for two rules written down before them (docs/SCALING.md, "The all-reduce as
// the own steps pay it"): the exchange at the all-reduce probe's time passes its criteria on this
// CPU (7 missed, none newly; 4.9% and 7.4% against the model's 6.0% and 14.2%), the own pass's
// all-reduce newly misses the seed's all-reduce step at 32. The model misses 10 of 112 in most
// runs, against the 2 written down; run 2's refit timed 784-256-256-10's steps at once at 1.73-1.90
// times its steps alone at every row count (0.91-1.16 in runs 1 and 3), and its calibration two
// devices' shards of a 256 KiB update at 11.6 times one device's whole update (3.3 and 3.5).
TEST(ValidationRun, TheOwnExchangeProbeOnAFreshZen4Set) {
  const std::string dir = "repeated/held_out_own_exchange_zen4";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutOwnExchangeZen4Cpu, kHeldOutOwnExchangeZen4CpuSlowCopies);
  const std::string small = "784-256-256-10", seed = "784-4096-2048-512-64-10",
                    deep = "784-1024-1024-1024-1024-1024-1024-10",
                    allreduce = "2 devices mirrored (allreduce)",
                    sharded = "2 devices mirrored (sharded)",
                    deterministic = "2 devices mirrored deterministic", host = "2 devices host";
  EXPECT_EQ(now.runs_missed(seed, 32, host), 2);
  EXPECT_EQ(now.runs_missed(seed, 32, allreduce + " 1 MB buckets"), 2);
  EXPECT_EQ(now.runs_missed(seed, 32, allreduce), 1);  // C misses it in 2
  EXPECT_EQ(now.runs_missed(small, 32, sharded), 2);
  EXPECT_EQ(now.runs_missed(small, 32, host), 2);
  EXPECT_EQ(now.runs_missed(small, 32, allreduce + " 1 MB buckets"), 2);
  EXPECT_EQ(now.runs_missed(small, 32, allreduce + " 25 MB buckets"), 2);
  EXPECT_EQ(now.runs_missed(small, 2048, sharded), 2);
  EXPECT_EQ(now.runs_missed(small, 2048, deterministic), 2);
  EXPECT_EQ(now.runs_missed(deep, 32, sharded), 2);
  EXPECT_EQ(now.runs_missed(deep, 32, deterministic), 2);
  EXPECT_NEAR(sharded_median_error(now), 0.035, 0.0005);
  EXPECT_NEAR(median_step_error(now, allreduce, 144), 0.060, 0.0005);
  EXPECT_NEAR(median_step_error(now, allreduce, 36, 32), 0.142, 0.0005);
  // Every run timed every model's own steps with their all-reduce at its 9 row counts (bench
  // validate's refits), the best and the medians; the all-reduce no shorter than the wait. Run
  // 2's refit of the small model ran in a window where the steps at once ran long, and its
  // calibration's shards' update too.
  for_each_steps_at_once(dir, [](int k, const DenseRateCurve& c, const StepsAtOnceSeconds& a) {
    EXPECT_TRUE(a.best.has_exchange() && a.median.has_exchange()) << "run " << k;
    EXPECT_GE(a.median.exchange_own, a.best.exchange_own) << "run " << k << ", " << a.rows;
    EXPECT_GE(a.best.exchange_own, a.best.wait_own) << "run " << k << ", " << a.rows;
    EXPECT_GE(a.median.exchange_own, a.median.wait_own) << "run " << k << ", " << a.rows;
    if (c.widths == std::vector<int64_t>{784, 256, 256, 10}) {
      const double ratio = a.modelled_shared_over_alone();
      EXPECT_TRUE(k == 2 ? ratio > 1.7 : ratio < 1.2) << "run " << k << ", " << a.rows;
    }
  });
  const double shard_at_256k[] = {3.31, 11.63, 3.46};
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = cpu_run_profile(dir, k);
    ASSERT_FALSE(hw.device.update_contention.empty()) << "run " << k;
    EXPECT_NEAR(hw.device.update_contention.front().shard, shard_at_256k[k - 1], 0.005)
        << "run " << k;
  }
}

// Three fresh runs on the Zen 4 by the build of 633fc6f (2026-12-07, evening), whose calibrate
// times its update at once and steps at once between hand-offs of the devices' cores and times
// again the units whose cores were apart, and whose validation records where each repetition
// ran; the model unchanged. No calibration kept a disturbed window, and each timed the shards'
// update with the cores near (2.60-2.71 times one device's at 256 KiB; criteria 1 and 2); 8 of
// 112 missed in most runs (as many from the near repetitions only: near_only.py); with the copy
// bandwidths halved 21. Every configuration's repetitions carry their windows; 98, 82 and 113
// of each run's 560 ran apart.
TEST(ValidationRun, TheWindowsOnAFreshZen4Set) {
  const std::string dir = "repeated/held_out_windows_zen4";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutWindowsZen4Cpu, kHeldOutWindowsZen4CpuSlowCopies);
  const std::string small = "784-256-256-10", wide = "784-8192-10";
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices host"), 3);
  EXPECT_EQ(now.runs_missed(wide, 32, "2 devices mirrored (sharded)"), 2);
  EXPECT_EQ(now.runs_missed(small, 128, "2 devices host"), 3);
  const int apart_in_run[] = {98, 82, 113};
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = profile_of(validation_run(fmt::format("{}/p{}.json", dir, k)));
    EXPECT_TRUE(hw.device.update_contention_window.recorded()) << "run " << k;
    EXPECT_EQ(disturbed_windows(hw), std::vector<std::string>{}) << "run " << k;
    ASSERT_GE(hw.device.update_contention.size(), 2u) << "run " << k;
    for (size_t i = 0; i < 2; ++i) {  // 256 KiB and 1 MiB
      EXPECT_GE(hw.device.update_contention[i].shard, 2.0) << "run " << k;
      EXPECT_LE(hw.device.update_contention[i].shard, 5.0) << "run " << k;
    }
    const json run = validation_run(fmt::format("{}/cpu_run{}.json", dir, k));
    const double fastest = run.at("concurrency_probes").at("best_handoff").get<double>();
    ASSERT_GT(fastest, 0) << "run " << k;
    int apart = 0, repetitions = 0;
    for (const json& row : run.at("rows")) {
      const auto handoffs = row.at("handoff_per_repetition").get<std::vector<double>>();
      ASSERT_EQ(handoffs.size(), row.at("per_repetition").size()) << "run " << k;
      ASSERT_EQ(row.at("steal_per_repetition").size(), handoffs.size()) << "run " << k;
      for (const double h : handoffs) apart += h > kApartHandoff * fastest;
      repetitions += static_cast<int>(handoffs.size());
    }
    EXPECT_EQ(repetitions, 560) << "run " << k;
    EXPECT_EQ(apart, apart_in_run[k - 1]) << "run " << k;
  }
}

// Three fresh runs on the Zen 4 by the build of dca6e5d (2026-12-07, night), whose probes of
// devices at once wait for a quiet window before timing a disturbed round again, and whose
// calibrate times the host's copies up to the shared cache's share (measured, not used); the
// model unchanged. No calibration and no refit kept a disturbed window (criterion 1; the last
// set's refits kept three); the probes waited, the seed's refit in run 1 its whole minute. Run
// 1's shards' update at 1 MiB read 1.96, under the 2.0 written down (criterion 3 fails by 0.04).
// 6 of 112 missed in most runs; with the copy bandwidths halved 17.
TEST(ValidationRun, TheQuietWindowsOnAFreshZen4Set) {
  const std::string dir = "repeated/held_out_quiet_zen4";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutQuietZen4Cpu, kHeldOutQuietZen4CpuSlowCopies);
  const std::string small = "784-256-256-10", deep = "784-1024-1024-1024-1024-1024-1024-10";
  for (const char* config : kAllReduceConfigs) {
    EXPECT_EQ(now.runs_missed(small, 32, config), 3) << config;
  }
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices host"), 2);
  EXPECT_EQ(now.runs_missed(small, 128, "2 devices host"), 2);
  EXPECT_EQ(now.runs_missed(deep, 32, "2 devices mirrored (sharded)"), 2);
  // Every run's calibration and refits: no disturbed window kept; the polls each waited (the
  // calibration's update at once and steps at once, then the refits' steps of the four models).
  const int calibration_waits[3][2] = {{11, 51}, {0, 21}, {0, 202}};
  const int refit_waits[3][4] = {{240, 110, 31, 40}, {182, 3, 6, 30}, {38, 0, 0, 86}};
  const double shard_at_1mib[] = {1.96, 2.09, 2.15};
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = profile_of(validation_run(fmt::format("{}/p{}.json", dir, k)));
    EXPECT_EQ(disturbed_windows(hw), std::vector<std::string>{}) << "run " << k;
    EXPECT_EQ(hw.device.update_contention_window.waits, calibration_waits[k - 1][0]) << k;
    ASSERT_EQ(hw.device.dense_rates.size(), 1u) << "run " << k;
    EXPECT_EQ(hw.device.dense_rates[0].weight_grad_gemms.at(0).at_once_window.waits,
              calibration_waits[k - 1][1])
        << "run " << k;
    ASSERT_GE(hw.device.update_contention.size(), 2u) << "run " << k;
    EXPECT_NEAR(hw.device.update_contention[1].shard, shard_at_1mib[k - 1], 0.005) << k;
    // The host's copies up to 4.57 MiB: the 1 MiB L2, then the 32 MiB L3's seventh.
    std::vector<int64_t> sizes;
    for (const HostExchangeSeconds& e : hw.device.host_exchange) sizes.push_back(e.bytes);
    EXPECT_EQ(sizes, host_exchange_sizes(int64_t{1} << 20, int64_t{32} << 20, 2)) << k;
    const HardwareProfile refits = cpu_run_profile(dir, k);
    EXPECT_EQ(disturbed_windows(refits), std::vector<std::string>{}) << "run " << k;
    ASSERT_EQ(refits.device.dense_rates.size(), 4u) << "run " << k;
    for (size_t m = 0; m < 4; ++m) {
      EXPECT_EQ(refits.device.dense_rates[m].weight_grad_gemms.at(0).at_once_window.waits,
                refit_waits[k - 1][m])
          << "run " << k << ", model " << m;
    }
  }
}

// A set's placement.json (bench/placement_bench) by state, as placement_bench judges its
// samples: apart (a hand-off over kApartHandoff times the run's fastest), then, near, crowded
// or not against the run's fastest cache reading; the 2-device steps of each near state.
struct PlacementStates {
  int apart = 0;
  std::vector<double> crowded, quiet;
};
PlacementStates placement_states(const std::string& dir) {
  const json placement = validation_run(dir + "/placement.json");
  const double fastest_handoff = placement.at("fastest_handoff").get<double>();
  const double fastest_cache = placement.at("fastest_cache").get<double>();
  PlacementStates states;
  for (const json& s : placement.at("samples")) {
    if (s.at("handoff").get<double>() > kApartHandoff * fastest_handoff) {
      ++states.apart;
      continue;
    }
    (cache_crowded(s.at("cache").get<double>(), fastest_cache) ? states.crowded : states.quiet)
        .push_back(s.at("two_devices").get<double>());
  }
  return states;
}

// held_out_crowded_zen4 (2026-12-07, afternoon): 90f01fd's build judged a window whose cache
// reading (each device streaming half its L2) was over 1.4x the fastest as crowded, and timed
// its unit again. The placement sample found 75% of the samples crowded, and in them
// 784-256-256-10's sharded step of 2 devices at 32 over 10% slower (criterion 1). Run 1 spent
// every probe's and every model's minute of polls and kept 48% of its repetitions disturbed; the
// set was stopped there, and b28c957 records crowding without judging it. Its one run: 7 of 112
// missed; the profiles' windows read as b28c957 reads 90f01fd's (not counted). And a lead run by
// b28c957: the counts recorded, no window or repetition kept apart.
TEST(ValidationRun, TheCrowdedCachesRunOnTheZen4) {
  const std::string dir = "repeated/held_out_crowded_zen4";
  const RepeatedOutcome now = compare_repeated(
      "cpu", [](json&) {}, dir, 1);
  EXPECT_EQ(now.configurations, 112);
  EXPECT_EQ(now.misses, 0) << "configurations that agreed now miss:" << now.worst;
  EXPECT_EQ(now.missed_now, kHeldOutCrowdedZen4Cpu);
  EXPECT_GE(compare_repeated("cpu", halve_copy_bandwidths, dir, 1).missed_now,
            kHeldOutCrowdedZen4CpuSlowCopies);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices host"), 1);
  EXPECT_EQ(now.runs_missed("784-256-256-10", 32, "2 devices mirrored (allreduce)"), 0);
  // Criterion 1: with the cores near, the 2-device step in crowded samples over 1.1x the others.
  const PlacementStates states = placement_states(dir);
  EXPECT_EQ(states.crowded.size(), 1644u);
  EXPECT_EQ(states.quiet.size(), 396u);
  EXPECT_GT(median_of(states.crowded), 1.10 * median_of(states.quiet));
  // The calibration's windows as b28c957 reads them: the readings, no count; only the seed's
  // steps at once kept a window apart (90f01fd named the update's too, for its caches).
  const HardwareProfile hw = profile_of(validation_run(dir + "/p1.json"));
  const ProbeWindow& update = hw.device.update_contention_window;
  EXPECT_EQ(update.waits, 240);
  EXPECT_GT(update.cache, kCrowdedCache * update.best_cache);
  EXPECT_LT(update.crowded, 0);
  EXPECT_FALSE(update.disturbed());
  ASSERT_EQ(disturbed_windows(hw).size(), 1u);
  EXPECT_NE(disturbed_windows(hw)[0].find("784-4096-2048-512-64-10"), std::string::npos);
  // Every model's repetitions spent their minute; 472 repetitions timed again, and each row
  // kept its 5 with a cache reading each.
  const json run = validation_run(dir + "/cpu_run1.json");
  ASSERT_EQ(run.at("measured_windows").size(), 4u);
  for (const json& w : run.at("measured_windows")) {
    EXPECT_EQ(w.at("window").at("kept"), 140) << w.at("model");
    EXPECT_EQ(w.at("window").at("waits"), 240) << w.at("model");
  }
  int redone = 0;
  for (const json& row : run.at("rows")) {
    EXPECT_EQ(row.at("per_repetition").size(), 5u);
    EXPECT_EQ(row.at("cache_per_repetition").size(), 5u);
    redone += row.at("redone").get<int>();
  }
  EXPECT_EQ(redone, 472);
  // The lead run by b28c957 (crowding recorded, not judged): its calibration's windows counted
  // and none disturbed; 36 repetitions timed again for their cores apart, none kept apart.
  const HardwareProfile lead = profile_of(validation_run(dir + "/lead_p.json"));
  EXPECT_TRUE(disturbed_windows(lead).empty());
  EXPECT_EQ(lead.device.update_contention_window.crowded, 13);
  EXPECT_EQ(lead.device.dense_rates.at(0).weight_grad_gemms.at(0).at_once_window.crowded, 14);
  const json lead_run = validation_run(dir + "/lead_cpu_run.json");
  const double best_handoff = lead_run.at("concurrency_probes").at("best_handoff").get<double>();
  int lead_redone = 0, apart = 0;
  for (const json& row : lead_run.at("rows")) {
    lead_redone += row.at("redone").get<int>();
    for (const json& h : row.at("handoff_per_repetition")) {
      apart += h.get<double>() > kApartHandoff * best_handoff;
    }
  }
  EXPECT_EQ(lead_redone, 36);
  EXPECT_EQ(apart, 0);
  std::vector<int> crowded_counts;
  for (const json& w : lead_run.at("measured_windows")) {
    crowded_counts.push_back(w.at("window").at("crowded").get<int>());
  }
  EXPECT_EQ(crowded_counts, (std::vector<int>{96, 110, 88, 68}));
}

// held_out_windows_xeon (2026-12-07, evening): the windows, quiet waits and cache readings,
// all chosen on the Zen 4, on the Xeon by 10937c1's build. 1 of 112 missed in most runs (2, 4
// and 6 in the runs); no window or repetition kept apart or stolen. The placement sample: 0.5%
// of the samples apart, 53% crowded, and the crowded 2-device step not 10% over (criterion 1
// fails). Every repetition of runs 1 and 3 read crowded, while the seed's refit in those runs,
// on a group of devices of its own, read what the edges' group never did: a reading carries a
// floor of the group that reads it (docs/SCALING.md, "The windows on the
// Xeon, and a cache reading that depends on its reader").
TEST(ValidationRun, TheWindowsOnAFreshXeonSet) {
  const std::string dir = "repeated/held_out_windows_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutWindowsXeonCpu, kHeldOutWindowsXeonCpuSlowCopies);
  const std::string small = "784-256-256-10";
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices mirrored deterministic"), 2);
  EXPECT_EQ(now.runs_missed(small, 512, "2 devices mirrored (sharded)"), 1);
  // Criterion 1: near and crowded, near and not; the crowded median under 1.1 times the other.
  const PlacementStates states = placement_states(dir);
  EXPECT_EQ(states.apart, 10);
  EXPECT_EQ(states.crowded.size(), 1074u);
  EXPECT_EQ(states.quiet.size(), 933u);
  EXPECT_LT(median_of(states.crowded), 1.10 * median_of(states.quiet));
  // Each run: no window kept apart or stolen in the calibration or the refits; every kept
  // repetition near and unstolen; the repetitions crowded against the run's fastest reading.
  // Over the seed's repetitions (the run's first model) the edges' group read no faster than
  // 16.0, 13.0 and 20.8 us; the seed's refit next, on a group of its own, 12.9 and 12.8 in runs
  // 1 and 3 (a window's best is the process's fastest so far: in run 2 nothing faster than the
  // edges' 13.0).
  const int crowded_in_run[] = {560, 201, 560};
  const double seed_edges_best[] = {16.04e-6, 13.05e-6, 20.85e-6};
  const double seed_refit_best[] = {12.86e-6, 13.05e-6, 12.85e-6};
  double sharded_at_512[3] = {};
  for (int k = 1; k <= 3; ++k) {
    const HardwareProfile hw = profile_of(validation_run(fmt::format("{}/p{}.json", dir, k)));
    EXPECT_EQ(disturbed_windows(hw), std::vector<std::string>{}) << "run " << k;
    const HardwareProfile refits = cpu_run_profile(dir, k);
    EXPECT_EQ(disturbed_windows(refits), std::vector<std::string>{}) << "run " << k;
    const json run = validation_run(fmt::format("{}/cpu_run{}.json", dir, k));
    const double best_handoff = run.at("concurrency_probes").at("best_handoff").get<double>();
    const double best_cache = run.at("concurrency_probes").at("best_cache").get<double>();
    ASSERT_GT(best_cache, 0) << "run " << k;
    ASSERT_EQ(refits.device.dense_rates.size(), 4u) << "run " << k;
    EXPECT_EQ(refits.device.dense_rates[0].widths,
              (std::vector<int64_t>{784, 4096, 2048, 512, 64, 10}));
    EXPECT_NEAR(refits.device.dense_rates[0].weight_grad_gemms.at(0).at_once_window.best_cache,
                seed_refit_best[k - 1], 0.01e-6)
        << "run " << k;
    EXPECT_EQ(run.at("measured_windows").at(0).at("model"), "784-4096-2048-512-64-10");
    EXPECT_NEAR(run.at("measured_windows").at(0).at("window").at("best_cache").get<double>(),
                seed_edges_best[k - 1], 0.01e-6)
        << "run " << k;
    int repetitions = 0, near = 0, crowded_here = 0;
    for (const json& row : run.at("rows")) {
      const auto caches = row.at("cache_per_repetition").get<std::vector<double>>();
      const auto handoffs = row.at("handoff_per_repetition").get<std::vector<double>>();
      const auto steals = row.at("steal_per_repetition").get<std::vector<double>>();
      ASSERT_EQ(caches.size(), handoffs.size()) << "run " << k;
      ASSERT_EQ(steals.size(), handoffs.size()) << "run " << k;
      for (size_t i = 0; i < caches.size(); ++i) {
        ++repetitions;
        near += handoffs[i] <= kApartHandoff * best_handoff && steals[i] <= kQuietSteal;
        crowded_here += cache_crowded(caches[i], best_cache);
      }
      if (row.at("model") == small && row.at("batch") == 512 &&
          row.at("config") == "2 devices mirrored (sharded)") {
        sharded_at_512[k - 1] = row.at("measured_seconds").get<double>();
      }
    }
    EXPECT_EQ(repetitions, 560) << "run " << k;
    EXPECT_EQ(near, 560) << "run " << k;
    EXPECT_EQ(crowded_here, crowded_in_run[k - 1]) << "run " << k;
  }
  // Run 3's sharded step of the small model at 512, slow in every repetition, which its
  // calibration did not see.
  EXPECT_GT(sharded_at_512[2], 1.3 * sharded_at_512[0]);
  EXPECT_GT(sharded_at_512[2], 1.3 * sharded_at_512[1]);
}

// The repetitions of validation run `run` whose devices handed a cache line over in at most
// 40 ns (perhaps one core's two threads, on the Xeon of model 207) and in 50 ns or more (two
// cores), and the median cache reading of each.
struct CoreModes {
  int one_core = 0, two_cores = 0;
  double one_core_cache = 0, two_cores_cache = 0;
};
CoreModes core_modes(const json& run) {
  std::vector<double> one, two;
  for (const json& row : run.at("rows")) {
    const auto caches = row.at("cache_per_repetition").get<std::vector<double>>();
    const auto handoffs = row.at("handoff_per_repetition").get<std::vector<double>>();
    for (size_t i = 0; i < caches.size() && i < handoffs.size(); ++i) {
      if (handoffs[i] <= 40e-9) one.push_back(caches[i]);
      if (handoffs[i] >= 50e-9) two.push_back(caches[i]);
    }
  }
  return {static_cast<int>(one.size()), static_cast<int>(two.size()),
          one.empty() ? 0 : median_of(one), two.empty() ? 0 : median_of(two)};
}

// held_out_flushed_xeon (2026-12-08): the first set on the Xeon of model 207 (Emerald Rapids,
// no AMX exposed), by ede0d84, whose tools compute with denormals flushed. 6 of 112 missed in
// most runs (criterion 1 allowed 2): the wide model's three all-reduce steps at 32, and the
// small model's sharded step at 32, deterministic at 32 (every run) and at 512. Criteria 2, 4,
// 5 fail, 3 and 7 hold, F (6) fails to replicate. The fastest hand-off of each run, 27-28 ns,
// matched repetitions at 28-30 ns whose cache readings took 3 times the fastest: perhaps the
// two vCPUs on one core's two threads (a lead: siblings_xeon's placement sample had too few
// such samples to judge). In run 1, 32 repetitions handed off that fast; the 4 of the small
// model's 2-device configurations at 32 with 3 or more of their 5 there all missed.
TEST(ValidationRun, TheModelOnAFirstSetOnTheXeonOfModel207) {
  const std::string dir = "repeated/held_out_flushed_xeon";
  const RepeatedOutcome now =
      expect_fresh_cpu_set(dir, kHeldOutFlushedXeonCpu, kHeldOutFlushedXeonCpuSlowCopies);
  const std::string wide = "784-8192-10", small = "784-256-256-10";
  for (const char* config : kAllReduceConfigs) {
    EXPECT_EQ(now.runs_missed(wide, 32, config), 2) << config;
  }
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices mirrored (sharded)"), 2);
  EXPECT_EQ(now.runs_missed(small, 32, "2 devices mirrored deterministic"), 3);
  EXPECT_EQ(now.runs_missed(small, 512, "2 devices mirrored deterministic"), 2);
  // Criterion 2: repetitions kept apart (against the run's fastest hand-off) or stolen.
  const int disturbed_in_run[] = {105, 48, 68};
  // The repetitions at 40 ns or under (one core's two threads?), their readings against others'.
  const int one_core_in_run[] = {32, 1, 42};
  // F: the edges' group's floor over the seed's repetitions against the seed's refit's.
  const double floor_ratio[] = {1.00, 1.01, 1.20};
  for (int k = 1; k <= 3; ++k) {
    const json run = validation_run(fmt::format("{}/cpu_run{}.json", dir, k));
    const double best_handoff = run.at("concurrency_probes").at("best_handoff").get<double>();
    EXPECT_LT(best_handoff, 30e-9) << "run " << k;
    int repetitions = 0, disturbed = 0;
    double seed_edges = 1;
    for (const json& row : run.at("rows")) {
      const auto caches = row.at("cache_per_repetition").get<std::vector<double>>();
      const auto handoffs = row.at("handoff_per_repetition").get<std::vector<double>>();
      const auto steals = row.at("steal_per_repetition").get<std::vector<double>>();
      ASSERT_EQ(caches.size(), handoffs.size()) << "run " << k;
      ASSERT_EQ(steals.size(), handoffs.size()) << "run " << k;
      for (size_t i = 0; i < caches.size(); ++i) {
        ++repetitions;
        disturbed += handoffs[i] > kApartHandoff * best_handoff || steals[i] > kQuietSteal;
        if (row.at("model") == "784-4096-2048-512-64-10")
          seed_edges = std::min(seed_edges, caches[i]);
      }
    }
    EXPECT_EQ(repetitions, 560) << "run " << k;
    EXPECT_EQ(disturbed, disturbed_in_run[k - 1]) << "run " << k;
    const CoreModes modes = core_modes(run);
    EXPECT_EQ(modes.one_core, one_core_in_run[k - 1]) << "run " << k;
    if (modes.one_core > 10) {
      EXPECT_GT(modes.one_core_cache, 1.6 * modes.two_cores_cache) << "run " << k;
    }
    const HardwareProfile refits = cpu_run_profile(dir, k);
    const double seed_refit =
        refits.device.dense_rates.at(0).weight_grad_gemms.at(0).at_once_window.best_cache;
    EXPECT_NEAR(seed_edges / seed_refit, floor_ratio[k - 1], 0.005) << "run " << k;
  }
  // siblings_xeon's placement sample: 17 of 1101 samples at 40 ns or under, too few (30) to judge.
  const json placement = validation_run("repeated/siblings_xeon/placement.json");
  int one_core = 0, samples = 0;
  for (const json& s : placement.at("samples")) {
    ++samples;
    one_core += s.at("handoff").get<double>() <= 40e-9;
  }
  EXPECT_EQ(samples, 1101);
  EXPECT_EQ(one_core, 17);
}

// The first three runs on 2 MPI ranks on the Zen 4, by the same build (2026-12-05, later; no
// change under test): 1 of 96 missed in most runs (the deep model's step with 1 MB buckets at
// 32, in 2), within the 2 written down before them; with the all-reduce sweep removed from the
// profiles (every bucket on the link's line) 9.
TEST(ValidationRun, TheModelOnAFreshMpiSetOnTheZen4) {
  const RepeatedOutcome now = expect_fresh_mpi_set("repeated/held_out_mpi_zen4", 1, 9);
  EXPECT_EQ(now.runs_missed("784-1024-1024-1024-1024-1024-1024-10", 32, "2 ranks 1 MB buckets"), 2);
}

TEST(ValidationRun, EachModelsUpdateIsPredictedFromItsOwnMeasuredSteps) {
  EXPECT_LE(std::abs(worst_update_error([](json&) {})), 0.20);
  EXPECT_GE(worst_update_error(scale_updates(0)), 0.60);
}

TEST(ValidationRun, AgreesWithTheCommittedRepeatedRunsByMajority) {
  const auto as_is = [](json&) {};
  const RepeatedOutcome mpi = compare_repeated("mpi", as_is);
  EXPECT_EQ(mpi.configurations, 96);  // 4 models x 4 batches x 6 configurations
  EXPECT_LE(mpi.known, 9);
  EXPECT_EQ(mpi.misses, 0) << "configurations that agreed in most runs now miss:" << mpi.worst;
  // The link as one line for every bucket (no sweep: the model before the last bucket ran
  // alone) misses small steps that agree now.
  EXPECT_GT(
      compare_repeated("mpi", [](json& p) { p["measurements"].erase("allreduce_sweep"); }).misses,
      5);
  // The three runs measured after that change, by the build that made it (held out from
  // it): 18 of 96 missed in most, against 25 with every bucket on the line.
  const RepeatedOutcome held_out = compare_repeated("mpi", as_is, "repeated/held_out");
  EXPECT_EQ(held_out.configurations, 96);
  EXPECT_LE(held_out.known, 18);
  EXPECT_EQ(held_out.misses, 0) << "configurations that agreed in most runs now miss:"
                                << held_out.worst;
  EXPECT_GT(
      compare_repeated(
          "mpi", [](json& p) { p["measurements"].erase("allreduce_sweep"); }, "repeated/held_out")
          .misses,
      5);
  // Three runs on 2 MPI ranks and three on 2 CPU devices by the build that followed each
  // model's measured steps piecewise in rows (2026-12-03), held out from that change: known
  // misses by majority bounded; the same runs with the least-squares line through those
  // steps instead (the model before) miss configurations that agree now.
  const auto line = rate_line;
  for (const auto& [kind, known, configurations, line_misses] :
       {std::tuple{"mpi", kHeldOutRowsMpiKnown, 96, kHeldOutRowsMpiLine},
        std::tuple{"cpu", kHeldOutRowsCpuKnown, 112, kHeldOutRowsCpuLine}}) {
    const RepeatedOutcome rows = compare_repeated(kind, as_is, "repeated/held_out_rows");
    EXPECT_EQ(rows.configurations, configurations) << kind;
    EXPECT_LE(rows.known, known) << kind;
    EXPECT_EQ(rows.misses, 0) << kind << ": configurations that agreed in most runs now miss:"
                              << rows.worst;
    EXPECT_GE(compare_repeated(kind, line, "repeated/held_out_rows").misses, line_misses) << kind;
  }
  // Three runs on 2 MPI ranks by the build that follows the steps measured with both ranks
  // computing at once (ranks_points), held out from that change; without those points (each
  // rank at the steps alone) configurations that agree now miss.
  const RepeatedOutcome ranks = compare_repeated("mpi", as_is, "repeated/held_out_ranks");
  EXPECT_EQ(ranks.configurations, 96);
  EXPECT_LE(ranks.known, kHeldOutRanksKnown);
  EXPECT_EQ(ranks.misses, 0) << "configurations that agreed in most runs now miss:" << ranks.worst;
  EXPECT_GE(compare_repeated(
                "mpi",
                [](json& p) {
                  for (auto& c : p["device"]["dense_rates"]) c.erase("ranks_points");
                },
                "repeated/held_out_ranks")
                .misses,
            kHeldOutRanksAlone);
  // Measured steps taken as 1.5x faster than they ran fail the same comparison.
  EXPECT_GT(compare_repeated("mpi", faster_steps(1.5), "repeated/held_out_ranks").misses, 10);
  // Three runs on 2 MPI ranks and three on 2 CPU devices measured after deterministic mode's
  // copies, sums and all-gathers were timed with the caches emptied (2026-12-03). Their
  // recorded predictions are those of the build that measured them, which also costed the
  // buckets posted during backward from such a sweep (rejected on these runs), so the bound is
  // on this model's own misses: the model before (the cold measurements removed) misses
  // more, and so do cold rates taken twice as fast as measured.
  const auto before = [](json& p) {
    for (const char* key : {"cold_copy_bandwidth", "cold_sum_bandwidth", "private_cache_bytes"}) {
      p["device"].erase(key);
    }
    if (!p.contains("measurements") || !p["measurements"].contains("allreduce_sweep")) return;
    for (auto& a : p["measurements"]["allreduce_sweep"]) {
      a.erase("deterministic_seconds");
      a.erase("deterministic_cold_seconds");
    }
  };
  const std::string deterministic = "repeated/held_out_deterministic";
  const RepeatedOutcome det_mpi = compare_repeated("mpi", as_is, deterministic);
  EXPECT_EQ(det_mpi.configurations, 96);
  EXPECT_LE(det_mpi.missed_now, kHeldOutDeterministicMpi);
  EXPECT_GE(compare_repeated("mpi", before, deterministic).missed_now,
            kHeldOutDeterministicMpiBefore);
  EXPECT_GE(
      compare_repeated(
          "mpi",
          [](json& p) {
            p["device"]["cold_copy_bandwidth"] =
                p["device"]["cold_copy_bandwidth"].get<double>() * 2;
            p["device"]["cold_sum_bandwidth"] = p["device"]["cold_sum_bandwidth"].get<double>() * 2;
            for (auto& a : p["measurements"]["allreduce_sweep"]) {
              a["deterministic_cold_seconds"] = a["deterministic_cold_seconds"].get<double>() / 2;
            }
          },
          deterministic)
          .missed_now,
      kHeldOutDeterministicMpi + 5);
  const RepeatedOutcome det_cpu = compare_repeated("cpu", as_is, deterministic);
  EXPECT_EQ(det_cpu.configurations, 112);
  EXPECT_LE(det_cpu.missed_now, kHeldOutDeterministicCpu);
  // Three runs on 2 MPI ranks and three on 2 CPU devices by the build whose measured steps keep
  // their update's seconds (2026-12-03), held out from that change: this model's misses in
  // most runs bounded, and more with the update taken twice as fast as it ran. (Without the
  // update's seconds the same runs miss 6 and 10: the seed's update rate over-predicted the
  // small models' update and so hid the rest of their multi-device step; the update itself is
  // checked in EachModelsUpdateIsPredictedFromItsOwnMeasuredSteps.)
  // And three of each by the build whose element-wise loops run vectorized (78ebb07), held out
  // from that change.
  for (const auto& [dir, kind, configurations, now, fast] :
       {std::tuple{"repeated/held_out_update", "mpi", 96, kHeldOutUpdateMpi, kHeldOutUpdateMpiFast},
        std::tuple{"repeated/held_out_update", "cpu", 112, kHeldOutUpdateCpu,
                   kHeldOutUpdateCpuFast},
        std::tuple{"repeated/held_out_elementwise", "mpi", 96, kHeldOutElementwiseMpi,
                   kHeldOutElementwiseMpiFast},
        std::tuple{"repeated/held_out_elementwise", "cpu", 112, kHeldOutElementwiseCpu,
                   kHeldOutElementwiseCpuFast}}) {
    const RepeatedOutcome measured = compare_repeated(kind, as_is, dir);
    EXPECT_EQ(measured.configurations, configurations) << dir << " " << kind;
    EXPECT_LE(measured.missed_now, now) << dir << " " << kind;
    EXPECT_GE(compare_repeated(kind, scale_updates(0.5), dir).missed_now, fast)
        << dir << " " << kind;
  }
  const RepeatedOutcome cpu = compare_repeated("cpu", as_is);
  EXPECT_EQ(cpu.configurations, 112);  // 4 models x 4 batches x 7 configurations
  EXPECT_LE(cpu.known, 14);
  EXPECT_EQ(cpu.misses, 0) << "configurations that agreed in most runs now miss:" << cpu.worst;
  EXPECT_GT(compare_repeated("mpi",
                             [](json& p) {
                               p["rank_rank"]["bandwidth"] =
                                   p["rank_rank"]["bandwidth"].get<double>() / 4;
                             })
                .misses,
            0);
  EXPECT_GT(compare_repeated("cpu",
                             [](json& p) {
                               auto& d = p["device"];
                               d["sustained_flops"] = d["sustained_flops"].get<double>() * 1.5;
                               for (auto& c : d["dense_rates"]) {
                                 c["sustained_flops"] = c["sustained_flops"].get<double>() * 1.5;
                               }
                             })
                .misses,
            10);
}

TEST(ValidationRun, ARunWithoutRowsIsAClearError) {
  json run = validation_run();
  run["rows"][0].erase("strategy");
  test::expect_error<ConfigError>([&] { recompute_validation(run, profile_of(run.at("profile"))); },
                                  {"validation run", "strategy"});
}

}  // namespace
}  // namespace tandem::detail
