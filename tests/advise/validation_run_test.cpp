// The dense cost model against the last held-out validation run, with no timing in the test:
// docs/results/validation.json (tandem bench validate --json, with the profile that `tandem
// calibrate` measured on one device right before it) is recomputed by this build's model.
// Every configuration that run found within its tolerances (15% on speedups, 20% on step
// times) must stay within them; the ones it missed are known misses (docs/SCALING.md says
// why): one may start to agree, none may be added. A deliberately broken profile must fail
// the same comparison, so the comparison can fail.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "advise/validation.h"
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
  EXPECT_LE(o.known_misses, 13);             // docs/SCALING.md lists them
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

TEST(ValidationRun, ARunWithoutRowsIsAClearError) {
  json run = validation_run();
  run["rows"][0].erase("strategy");
  test::expect_error<ConfigError>([&] { recompute_validation(run, profile_of(run.at("profile"))); },
                                  {"validation run", "strategy"});
}

}  // namespace
}  // namespace tandem::detail
