// The `tandem` command-line tool, run as a user would: small train runs on Fashion-MNIST,
// then evaluate / predict / summary on what they saved, and bad command lines and files,
// each of which must end in a non-zero exit code and a message naming the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "advise/allreduce_probe.h"
#include "advise/at_once_probes.h"
#include "advise/hardware_profile.h"
#include "advise/host_exchange_probe.h"
#include "advise/probes.h"
#include "skip.h"
#include "tandem/tandem.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

// A fresh directory, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tandem_cli_test_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CliResult {
  int exit_code = -1;  // 128 + n when killed by signal n
  std::string out, err;
};

// Runs `tandem <args>` (a shell fragment) with stdout and stderr captured in `dir`.
CliResult run_cli(const std::string& args, const TempDir& dir) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string command =
      std::string("'") + TANDEM_CLI_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(command.c_str());
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out);
  result.err = read_file(err);
  return result;
}

// A clean failure: a non-zero exit code that is not a crash (the shell reports a signal
// as 128 + n), and something on stderr.
void expect_clean_failure(const CliResult& r) {
  EXPECT_GT(r.exit_code, 0) << r.err;
  EXPECT_LT(r.exit_code, 128) << "killed by a signal? stderr: " << r.err;
  EXPECT_FALSE(r.err.empty());
}

bool has_fashion_mnist() {
  return fs::exists(fs::path(kFashionDir) / "t10k-labels-idx1-ubyte.gz");
}

// A few seconds' train run shared by the tests that need a trained, saved model.
constexpr const char* kTrainArgs =
    "train --limit-train 512 --limit-test 256 --epochs 1 --layers 32 --batch-size 64 "
    "--seed 1 --threads 1 --verbose 2";

struct TrainedRun {
  TempDir dir;
  std::string model, metrics;
  CliResult result;
};

// Runs once per process; the static's destructor removes its directory at exit.
const TrainedRun& trained_run() {
  static TrainedRun run;
  static const bool done = [] {
    run.model = run.dir.file("model.tdm");
    run.metrics = run.dir.file("metrics.json");
    run.result = run_cli(std::string(kTrainArgs) + " --metrics-json '" + run.metrics +
                             "' --save '" + run.model + "'",
                         run.dir);
    return true;
  }();
  (void)done;
  return run;
}

class CliTest : public ::testing::Test {
 protected:
  TempDir dir;
};

// Tests that read Fashion-MNIST from Debian's dataset-fashion-mnist package.
class CliDataTest : public CliTest {
 protected:
  void SetUp() override {
    if (!has_fashion_mnist()) {
      TANDEM_SKIP("needs " << kFashionDir << " (apt-get install dataset-fashion-mnist)");
    }
  }
};

TEST_F(CliDataTest, TrainPrintsTimesAndScoresAndWritesMetricsJson) {
  const TrainedRun& run = trained_run();
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_THAT(run.result.out, HasSubstr("Total params: 25,450"));  // summary, verbose 2
  EXPECT_THAT(run.result.out, HasSubstr("fit: "));
  EXPECT_THAT(run.result.out, HasSubstr("predict: "));
  EXPECT_THAT(run.result.out, HasSubstr("test loss "));
  EXPECT_THAT(run.result.out, HasSubstr("test accuracy "));

  const json m = json::parse(read_file(run.metrics));
  const double train_seconds = m.at("train_seconds");
  EXPECT_GT(train_seconds, 0);
  EXPECT_GE(m.at("predict_seconds").get<double>(), 0);
  const double loss = m.at("test_loss"), accuracy = m.at("test_accuracy");
  EXPECT_TRUE(std::isfinite(loss) && loss > 0 && loss < 10) << loss;
  EXPECT_GT(accuracy, 0.2);  // 10 classes; one epoch on 512 samples beats chance
  EXPECT_LE(accuracy, 1.0);
  EXPECT_EQ(m.at("train_steps"), 8);  // 512 / 64
  EXPECT_GT(m.at("steps_per_second").get<double>(), 0);
  EXPECT_NEAR(m.at("samples_per_second").get<double>(), 512 / train_seconds,
              1e-6 * 512 / train_seconds);
  EXPECT_EQ(m.at("test_samples"), 256);
  EXPECT_EQ(m.at("parameters"), 25450);

  ASSERT_EQ(m.at("epochs").size(), 1u);
  const json& epoch = m["epochs"][0];
  EXPECT_EQ(epoch.at("epoch"), 1);
  EXPECT_GT(epoch.at("loss").get<double>(), 0);
  EXPECT_GE(epoch.at("accuracy").get<double>(), 0);
  EXPECT_LE(epoch.at("accuracy").get<double>(), 1);
  EXPECT_GT(epoch.at("seconds").get<double>(), 0);
  EXPECT_FALSE(epoch.contains("val_loss"));

  const json& config = m.at("config");
  EXPECT_EQ(config.at("dataset"), "fashion-mnist");
  EXPECT_EQ(config.at("layers"), json::array({32}));
  EXPECT_EQ(config.at("activation"), "relu");
  EXPECT_EQ(config.at("optimizer"), "rmsprop");
  EXPECT_DOUBLE_EQ(config.at("learning_rate").get<double>(), 0.001);  // Keras's default
  EXPECT_EQ(config.at("loss"), "categorical_crossentropy");
  EXPECT_EQ(config.at("batch_size"), 64);
  EXPECT_EQ(config.at("epochs"), 1);
  EXPECT_EQ(config.at("seed"), 1);
  EXPECT_EQ(config.at("threads"), 1);
  EXPECT_EQ(config.at("limit_train"), 512);
  EXPECT_EQ(config.at("limit_test"), 256);
  EXPECT_TRUE(m.at("phase_seconds").contains("forward"));
  EXPECT_TRUE(m.at("phase_seconds").contains("backward"));

  // Written atomically: no temporary files left beside the outputs.
  for (const auto& entry : fs::directory_iterator(run.dir.path())) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr(".tmp")));
  }
}

TEST_F(CliDataTest, TrainWithValidationSplitReportsValidationMetrics) {
  const std::string metrics = dir.file("m.json");
  const CliResult r = run_cli(
      "train --limit-train 256 --limit-test 64 --epochs 2 --layers 16,8 --batch-size 64 "
      "--optimizer adam --lr 0.002 --validation-split 0.25 --threads 1 --verbose 0 "
      "--metrics-json '" +
          metrics + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Total params")));  // verbose 0: no summary
  const json m = json::parse(read_file(metrics));
  EXPECT_EQ(m.at("train_samples"), 192);
  EXPECT_EQ(m.at("validation_samples"), 64);
  EXPECT_EQ(m.at("train_steps"), 6);  // 2 epochs x ceil(192 / 64)
  ASSERT_EQ(m.at("epochs").size(), 2u);
  for (const json& epoch : m["epochs"]) {
    EXPECT_TRUE(epoch.contains("val_loss")) << epoch.dump();
    EXPECT_TRUE(epoch.contains("val_accuracy")) << epoch.dump();
  }
  EXPECT_EQ(m["config"].at("optimizer"), "adam");
  EXPECT_DOUBLE_EQ(m["config"].at("learning_rate").get<double>(), 0.002);
  EXPECT_EQ(m["config"].at("layers"), json::array({16, 8}));
}

TEST_F(CliDataTest, EvaluateSavedModelReproducesTrainTestScores) {
  const TrainedRun& run = trained_run();
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string report = dir.file("eval.json");
  const CliResult r = run_cli(
      "evaluate --model '" + run.model + "' --limit 256 --batch-size 64 --json '" + report + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("test loss "));
  const json trained = json::parse(read_file(run.metrics));
  const json evaluated = json::parse(read_file(report));
  EXPECT_EQ(evaluated.at("test_samples"), 256);
  EXPECT_NEAR(evaluated.at("test_loss").get<double>(), trained.at("test_loss").get<double>(), 1e-5);
  EXPECT_NEAR(evaluated.at("test_accuracy").get<double>(),
              trained.at("test_accuracy").get<double>(), 1e-9);
}

// Checks one CSV row: index, the argmax class, ten probabilities summing to 1.
void expect_prediction_row(const std::string& line, int index) {
  std::vector<double> fields;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, ',');) fields.push_back(std::stod(field));
  ASSERT_EQ(fields.size(), 12u) << line;
  EXPECT_EQ(fields[0], index);
  double sum = 0;
  int best = 0;
  for (int k = 0; k < 10; ++k) {
    sum += fields[2 + k];
    if (fields[2 + k] > fields[2 + best]) best = k;
  }
  EXPECT_NEAR(sum, 1.0, 1e-4) << line;
  EXPECT_EQ(fields[1], best) << line;
}

TEST_F(CliDataTest, PredictWritesClassAndProbabilitiesCsv) {
  const TrainedRun& run = trained_run();
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string csv = dir.file("predictions.csv");
  const CliResult r =
      run_cli("predict --model '" + run.model + "' --limit 20 --output '" + csv + "'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::stringstream lines(read_file(csv));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "index,class,p0,p1,p2,p3,p4,p5,p6,p7,p8,p9");
  int rows = 0;
  while (std::getline(lines, line)) expect_prediction_row(line, rows++);
  EXPECT_EQ(rows, 20);
}

// --deterministic with the CLI's defaults (no thread flags): 1, 2 and 4 devices give the same
// weights and the same reported metrics, bit for bit.
TEST_F(CliDataTest, DeterministicAtDefaultThreadsIsBitwiseForAnyDeviceCount) {
  std::string reference_metrics;
  for (const int devices : {1, 2, 4}) {
    const std::string model = dir.file("d" + std::to_string(devices) + ".tdm");
    const CliResult r = run_cli(
        "train --limit-train 1024 --limit-test 128 --epochs 1 --layers 256,64 --seed 4 "
        "--deterministic --verbose 0 --devices " +
            std::to_string(devices) + " --save '" + model + "'",
        dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string metrics = r.out.substr(r.out.find("test loss"));
    if (devices == 1) {
      reference_metrics = metrics;
      continue;
    }
    EXPECT_EQ(metrics, reference_metrics) << devices << " devices";
    EXPECT_EQ(read_file(model), read_file(dir.file("d1.tdm"))) << devices << " devices";
  }
}

// A loss that became NaN: by default the run stops, exits 7 and saves nothing; with
// --continue-on-nan it saves with a warning, and evaluate / predict refuse that model.
TEST_F(CliDataTest, NanRunSavesNothingUnlessAskedAndItsModelIsRefused) {
  const std::string model = dir.file("nan.tdm");
  const std::string args =
      "train --limit-train 256 --limit-test 64 --epochs 1 --layers 8 --threads 1 --verbose 0 "
      "--optimizer sgd --lr 1e30 --batch-size 16 --seed 1 --save '" +
      model + "'";
  CliResult r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_FALSE(fs::exists(model));
  r = run_cli(args + " --continue-on-nan", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: saving a model whose weight"));
  ASSERT_TRUE(fs::exists(model));
  for (const char* command : {"predict", "evaluate"}) {
    const std::string output =
        std::string(command) == "predict" ? " --output '" + dir.file("p.csv") + "'" : "";
    r = run_cli(std::string(command) + " --model '" + model + "' --limit 8" + output, dir);
    EXPECT_EQ(r.exit_code, 7) << command << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(model + ": the model's weight"));
  }
  EXPECT_FALSE(fs::exists(dir.file("p.csv")));
}

TEST_F(CliDataTest, PredictWritesJson) {
  const TrainedRun& run = trained_run();
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string path = dir.file("predictions.json");
  const CliResult r =
      run_cli("predict --model '" + run.model + "' --limit 7 --output '" + path + "'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json p = json::parse(read_file(path));
  EXPECT_EQ(p.at("count"), 7);
  ASSERT_EQ(p.at("predictions").size(), 7u);
  EXPECT_EQ(p["predictions"][3].at("index"), 3);
  EXPECT_EQ(p["predictions"][3].at("probabilities").size(), 10u);
}

// advise predicts each algorithm tandem runs: the reducer, deterministic mode and MPI ranks
// select their simulations, named in the table and the JSON.
TEST_F(CliTest, AdviseSimulatesTheAlgorithmEachOptionRuns) {
  const auto algorithm_of = [&](const std::string& options) {
    const std::string json = dir.file("a.json");
    const CliResult r = run_cli(
        "advise --layers 256,256 --hardware this-machine-cpu --strategy "
        "mirrored --devices 1,2 --json '" +
            json + "' " + options,
        dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(read_file(json)).at("predictions").at(1).at("algorithm");
  };
  EXPECT_EQ(algorithm_of(""), "weight-gradient sharding");
  EXPECT_EQ(algorithm_of("--reducer allreduce"), "bucketed all-reduce");
  EXPECT_EQ(algorithm_of("--deterministic"), "deterministic micro-shards");
  EXPECT_EQ(algorithm_of("--ranks 2"), "MPI hierarchical");
  const CliResult bad = run_cli("advise --hardware this-machine-cpu --reducer ring", dir);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--reducer"));
}

// A calibrated profile's rate curves are each measured on one dense model: advise says
// whether the model asked about is one of them and, where it is not, how to measure it.
TEST_F(CliTest, AdviseSaysWhetherTheDenseRateWasMeasuredOnTheModel) {
  nlohmann::json profile = nlohmann::json::parse(
      read_file(tandem::detail::profiles_directory() + "/this-machine-cpu.json"));
  profile["device"]["dense_rates"] = {
      {{"widths", {784, 256, 256, 10}}, {"sustained_flops", 5e10}, {"half_rows", 8}}};
  std::ofstream(dir.file("curves.json")) << profile.dump();
  const auto advise = [&](const std::string& model) {
    const CliResult r =
        run_cli("advise --hardware '" + dir.file("curves.json") + "' " + model +
                    " --devices 1,2 --strategy mirrored --json '" + dir.file("a.json") + "'",
                dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::pair{r.out, nlohmann::json::parse(read_file(dir.file("a.json")))};
  };
  auto [out, j] = advise("--layers 256,256");
  EXPECT_THAT(out, HasSubstr("dense rate: measured on this model"));
  EXPECT_EQ(j.at("model").at("own_dense_rate"), true);
  std::tie(out, j) = advise("--layers 512,64");
  EXPECT_THAT(out, HasSubstr("dense rate: not measured on this model"));
  EXPECT_THAT(out, HasSubstr("`tandem calibrate --also-layers 512,64`"));
  EXPECT_EQ(j.at("model").at("own_dense_rate"), false);
  // A saved chain of Dense layers is matched by its widths, as --layers is.
  const std::string chain = dir.file("chain.tandem");
  {
    using namespace tandem;
    const Node x = Input({784});
    Model m(x, Dense(10, "softmax")(Dense(256, "relu")(Dense(256, "relu")(x))));
    m.compile("sgd", "categorical_crossentropy");
    m.save(chain);
  }
  std::tie(out, j) = advise("--model '" + chain + "'");
  EXPECT_THAT(out, HasSubstr("dense rate: measured on this model"));
  std::tie(out, j) = advise("--layers 256,256 --input 100");
  EXPECT_THAT(out, HasSubstr("measures dense models of 784 inputs and 10 classes"));
  EXPECT_EQ(j.at("model").at("own_dense_rate"), false);
  // A profile with no curves (the shipped ones) says nothing of them.
  const CliResult shipped =
      run_cli("advise --hardware this-machine-cpu --layers 512,64 --devices 1,2", dir);
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  EXPECT_THAT(shipped.out, Not(HasSubstr("dense rate:")));
}

TEST_F(CliTest, AdviseExplainsTheSeedAndWritesJson) {
  const CliResult r = run_cli(
      "advise --layers 4096,2048,512,64 --batch-size 128 --hardware "
      "pcie3-4gpu --devices 1,2,4,8 --json '" +
          dir.file("advise.json") + "' --svg '" + dir.file("s.svg") + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("host strategy on pcie3-4gpu"));
  EXPECT_THAT(r.out, HasSubstr("mirrored strategy on pcie3-4gpu"));
  EXPECT_THAT(r.out, HasSubstr("8 devices are extrapolated"));
  EXPECT_THAT(r.out, HasSubstr("Per-device batch 16 is too small"));  // 8 devices
  const auto j = nlohmann::json::parse(read_file(dir.file("advise.json")));
  ASSERT_EQ(j.at("predictions").size(), 8u);  // 4 device counts x 2 strategies
  for (const auto& p : j.at("predictions")) {
    EXPECT_GT(p.at("step_seconds").get<double>(), 0);
    EXPECT_GT(p.at("epoch_seconds").get<double>(), p.at("step_seconds").get<double>());
    EXPECT_TRUE(p.at("phases_seconds").contains("compute"));
  }
  const auto& host4 = j.at("predictions").at(2);
  EXPECT_EQ(host4.at("devices"), 4);
  EXPECT_EQ(host4.at("strategy"), "host");
  EXPECT_NEAR(host4.at("total_seconds").get<double>(), 50.0, 12.5);  // the seed's 50 s
  EXPECT_THAT(read_file(dir.file("s.svg")), HasSubstr("<svg"));
}

// A calibration whose probes of devices at once kept rounds timed with the cores apart fails,
// naming them, and writes nothing; --apart-handoff 1 counts every hand-off slower than the
// fastest as apart, so every probe keeps such rounds, after waiting --quiet-wait (0.5 s: two
// polls) for a quiet window. --allow-disturbed writes it, warning.
TEST_F(CliTest, CalibrateRefusesProbesTimedApart) {
  const std::string out = dir.file("apart.json");
  const std::string args =
      " --apart-handoff 1 --quiet-wait 0.5 --layers 128 --rows 8,2048 --steps 1 --repeats 1 "
      "--max-devices 2 --out '" +
      out + "'";
  const CliResult r = run_cli("calibrate" + args, dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the update on 2 devices at once"));
  EXPECT_THAT(r.err, HasSubstr("--allow-disturbed"));
  EXPECT_THAT(r.err, HasSubstr(out + " was not written"));
  EXPECT_FALSE(std::filesystem::exists(out));
  const CliResult allowed = run_cli("calibrate --allow-disturbed" + args, dir);
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_THAT(allowed.out, HasSubstr("calibrate: warning: "));
  ASSERT_TRUE(std::filesystem::exists(out));
  const auto j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j.at("device").at("update_contention_window").at("waits"), 2);
  EXPECT_THAT(allowed.out, HasSubstr("after 0.50 s waiting for quiet"));
}

// tandem calibrate: a profile from 1-device measurements only, every figure with its
// source, that advise reads and says what a device is (--threads-per-device).
TEST_F(CliTest, CalibrateWritesAProfileAdviseReads) {
  const std::string out = dir.file("machine.json");
  const CliResult r = run_cli("calibrate --allow-disturbed --quiet-wait 0 --out '" + out +
                                  "' --layers 512,128 --rows 8,256,2048 --steps 2 --repeats 2 "
                                  "--conv-model mnist-convnet --conv-batch 8 --max-devices 2 "
                                  "--also-layers '256;64,64'",
                              dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("dense 784-512-128-10 step, 256 rows"));
  EXPECT_THAT(r.out, HasSubstr("dense 784-64-64-10 step, 8 rows"));
  EXPECT_THAT(r.out, HasSubstr("mnist-convnet step, batch 8"));
  const auto j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j.at("max_devices"), 2);
  EXPECT_EQ(j.at("device").at("threads"), 1);
  for (const char* figure :
       {"sustained_flops", "memory_bandwidth", "conv_flops", "fork_join", "concurrent_memory_share",
        "cold_copy_bandwidth", "cold_sum_bandwidth"}) {
    EXPECT_GT(j.at("device").at(figure).get<double>(), 0) << figure;
  }
  // The bf16 loops at 2^16, 2^18, ..., 2^24 floats, each loop timed.
  const auto& loops = j.at("device").at("bf16_loops");
  ASSERT_EQ(loops.size(), 5u);
  for (size_t i = 0; i < loops.size(); ++i) {
    EXPECT_EQ(loops[i].at("floats").get<int64_t>(), int64_t{1} << (16 + 2 * i));
    for (const char* loop : {"pack", "unpack", "sum"}) {
      EXPECT_GT(loops[i].at(loop).get<double>(), 0) << loop;
    }
  }
  // The update on the 2 devices at once, at 256 KiB, 1, 4, 16 and 64 MiB of parameters.
  EXPECT_EQ(j.at("device").at("update_contention_devices"), 2);
  const auto& contention = j.at("device").at("update_contention");
  ASSERT_EQ(contention.size(), 5u);
  for (size_t i = 0; i < contention.size(); ++i) {
    EXPECT_EQ(contention[i].at("bytes").get<int64_t>(), int64_t{256} << (10 + 2 * i));
    EXPECT_GT(contention[i].at("own").get<double>(), 0);
    EXPECT_GT(contention[i].at("shard").get<double>(), 0);
  }
  // Where it ran: 7 rounds at each of the 5 sizes kept, each between two hand-offs of the
  // devices' cores; the log says so.
  const auto& where = j.at("device").at("update_contention_window");
  EXPECT_EQ(where.at("kept"), 35);
  EXPECT_LE(where.at("redone").get<int>(), 35);
  EXPECT_GT(where.at("best_handoff").get<double>(), 0);
  EXPECT_GE(where.at("handoff").get<double>(), where.at("best_handoff").get<double>());
  EXPECT_EQ(where.at("waits"), 0);  // --quiet-wait 0: timed again at once
  EXPECT_THAT(r.out, HasSubstr("  where: 35 units"));
  // And the steps at once's: 2 rounds at each of the 3 row counts, for every model.
  for (const auto& rate : j.at("device").at("dense_rates")) {
    for (const auto& w : rate.at("weight_grad_gemms")) {
      EXPECT_EQ(w.at("window").at("kept"), 6) << rate.at("widths");
      EXPECT_EQ(w.at("window").at("waits"), 0) << rate.at("widths");
    }
  }
  // Deterministic mode's copies and tree on the 2 devices at once, 2 copies each (the
  // default 4 micro-shards over 2 devices), from 256 KiB up to the largest gradients whose
  // buffers on both devices fit this machine's shared cache.
  EXPECT_EQ(j.at("device").at("deterministic_exchange_devices"), 2);
  EXPECT_EQ(j.at("device").at("deterministic_exchange_shards"), 2);
  const auto& exchange = j.at("device").at("deterministic_exchange");
  const std::vector<int64_t> sizes =
      tandem::detail::exchange_sizes(tandem::detail::shared_cache_bytes(), 2, 2);
  ASSERT_EQ(exchange.size(), sizes.size());
  for (size_t i = 0; i < exchange.size(); ++i) {
    EXPECT_EQ(exchange[i].at("bytes").get<int64_t>(), sizes[i]);
    EXPECT_GT(exchange[i].at("copy").get<double>(), 0);
    EXPECT_GT(exchange[i].at("tree").get<double>(), 0);
  }
  // The host strategy's copies on the 2 devices at once, from 64 KiB up to this machine's
  // private cache or its shared cache's share.
  EXPECT_EQ(j.at("device").at("host_exchange_devices"), 2);
  const auto& host = j.at("device").at("host_exchange");
  const std::vector<int64_t> host_sizes = tandem::detail::host_exchange_sizes(
      tandem::detail::private_cache_bytes(), tandem::detail::shared_cache_bytes(), 2);
  ASSERT_EQ(host.size(), host_sizes.size());
  for (size_t i = 0; i < host.size(); ++i) {
    EXPECT_EQ(host[i].at("bytes").get<int64_t>(), host_sizes[i]);
    EXPECT_GT(host[i].at("copy").get<double>(), 0);
    EXPECT_GT(host[i].at("sum").get<double>(), 0);
  }
  // The all-reduce of one bucket on the 2 devices at once, from 4 KiB to 64 MiB.
  EXPECT_EQ(j.at("device").at("allreduce_exchange_devices"), 2);
  const auto& allreduce = j.at("device").at("allreduce_exchange");
  const std::vector<int64_t> allreduce_sizes = tandem::detail::allreduce_sizes(2);
  ASSERT_EQ(allreduce.size(), allreduce_sizes.size());
  for (size_t i = 0; i < allreduce.size(); ++i) {
    EXPECT_EQ(allreduce[i].at("bytes").get<int64_t>(), allreduce_sizes[i]);
    EXPECT_GT(allreduce[i].at("seconds").get<double>(), 0);
  }
  // The shared cache's size exactly where the system gives one, with where it came from.
  const int64_t shared_cache = tandem::detail::shared_cache_bytes();
  ASSERT_EQ(j.at("device").contains("shared_cache_bytes"), shared_cache > 0);
  if (shared_cache > 0) {
    EXPECT_EQ(j.at("device").at("shared_cache_bytes").get<int64_t>(), shared_cache);
    EXPECT_THAT(j.at("sources").at("device.shared_cache_bytes").get<std::string>(),
                HasSubstr("sysfs"));
  }
  EXPECT_LE(j.at("device").at("concurrent_memory_share").get<double>(), 1);
  EXPECT_GE(j.at("device").at("barrier").get<double>(), 0);
  // The model measured and each --also-layers model keep their own rate curve, measured the
  // same way, with their steps (less the update and the batch's gathering) and their update
  // at each row count, ascending; the steps' record holds both taken off.
  const auto& curves = j.at("device").at("dense_rates");
  ASSERT_EQ(curves.size(), 3u);
  EXPECT_EQ(curves[0].at("widths"), nlohmann::json({784, 512, 128, 10}));
  EXPECT_EQ(curves[2].at("widths"), nlohmann::json({784, 64, 64, 10}));
  EXPECT_GT(curves[2].at("sustained_flops").get<double>(), 0);
  const auto& main_steps = j.at("measurements").at("dense_steps");
  for (const auto& curve : curves) {
    ASSERT_EQ(curve.at("points").size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const auto& point = curve.at("points")[i];
      EXPECT_EQ(point.at("rows"), std::vector<int>({8, 256, 2048})[i]);
      EXPECT_GT(point.at("compute_seconds").get<double>(), 0);
      EXPECT_GT(point.at("update_seconds").get<double>(), 0);
      if (curve.at("widths") != curves[0].at("widths")) continue;
      const auto& step = main_steps[i];
      EXPECT_GT(step.at("data_seconds").get<double>(), 0);
      // Each repetition's step less its own update and gathering, and their median.
      const auto each = [&](const char* key) { return step.at(key).get<std::vector<double>>(); };
      const std::vector<double> steps = each("per_repetition"),
                                updates = each("optimizer_per_repetition"),
                                gathers = each("data_per_repetition");
      ASSERT_EQ(updates.size(), steps.size());
      ASSERT_EQ(gathers.size(), steps.size());
      std::vector<double> computes;
      for (size_t k = 0; k < steps.size(); ++k) {
        computes.push_back(steps[k] - updates[k] - gathers[k]);
      }
      std::sort(computes.begin(), computes.end());
      EXPECT_EQ(point.at("compute_seconds").get<double>(), computes[computes.size() / 2]);
      EXPECT_EQ(step.at("compute_seconds").get<double>(), computes[computes.size() / 2]);
      EXPECT_EQ(point.at("update_seconds").get<double>(),
                step.at("optimizer_seconds").get<double>());
    }
  }
  // Each curve's weight-gradient GEMMs at the same rows, whole and as one of the 2 devices'
  // shards, warm, with the caches emptied and as a step runs them (with the input gradients).
  EXPECT_THAT(r.out, HasSubstr("dense 784-64-64-10: weight-gradient shards of 1 of 2 devices"));
  for (const auto& curve : curves) {
    ASSERT_EQ(curve.at("weight_grad_gemms").size(), 1u);
    const auto& gemms = curve.at("weight_grad_gemms")[0];
    EXPECT_EQ(gemms.at("devices"), 2);
    ASSERT_EQ(gemms.at("points").size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const auto& point = gemms.at("points")[i];
      EXPECT_EQ(point.at("rows"), std::vector<int>({8, 256, 2048})[i]);
      for (const char* time : {"whole", "shard", "whole_cold", "shard_cold", "whole_step",
                               "shard_step", "input_step"}) {
        EXPECT_GT(point.at(time).get<double>(), 0) << time;
      }
    }
    // The steps at once at the same rows.
    ASSERT_EQ(gemms.at("steps_at_once").size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const auto& at_once = gemms.at("steps_at_once")[i];
      EXPECT_EQ(at_once.at("rows"), std::vector<int>({8, 256, 2048})[i]);
      for (const char* time : {"forward_alone", "backward_alone", "forward_shared",
                               "backward_shared", "forward_own", "backward_own"}) {
        EXPECT_GT(at_once.at(time).get<double>(), 0) << time;
        // and the rounds' median, no faster than their best
        EXPECT_GE(at_once.at("median").at(time).get<double>(), at_once.at(time).get<double>())
            << time;
      }
      // The own copies' wait for the last device: 0 or more, its median no less.
      EXPECT_GE(at_once.at("wait_own").get<double>(), 0);
      EXPECT_GE(at_once.at("median").at("wait_own").get<double>(),
                at_once.at("wait_own").get<double>());
      // Their all-reduce from the backward's end: it cannot end before the last device posts,
      // so it is no shorter than the wait in every round, and in their best and median.
      for (const char* of : {"best", "median"}) {
        const auto& t = std::string(of) == "best" ? at_once : at_once.at("median");
        EXPECT_GT(t.at("exchange_own").get<double>(), 0) << of;
        EXPECT_GE(t.at("exchange_own").get<double>(), t.at("wait_own").get<double>()) << of;
      }
    }
  }
  EXPECT_GE(j.at("device").at("half_rows").get<double>(), 0);  // 0 when the line has no offset
  // Every figure names its measurement.
  for (const char* source : {"device.sustained_flops, device.half_rows",
                             "device.memory_bandwidth",
                             "device.conv_shapes",
                             "device.conv_flops, device.conv_step_scale",
                             "device.pool_scale",
                             "host.memory_bandwidth",
                             "host_device",
                             "device_device",
                             "device.concurrent_memory_share",
                             "device.fork_join, device.barrier",
                             "device.bf16_loops",
                             "device.update_contention",
                             "device.deterministic_exchange",
                             "device.host_exchange",
                             "device.allreduce_exchange",
                             "device.dense_rates 784-256-10",
                             "device.cold_copy_bandwidth, device.cold_sum_bandwidth",
                             "device.dense_rates 784-512-128-10",
                             "device.dense_rates 784-512-128-10 weight_grad_gemms",
                             "device.dense_rates 784-256-10 weight_grad_gemms"}) {
    ASSERT_TRUE(j.at("sources").contains(source)) << source;
    EXPECT_THAT(j.at("sources").at(source).get<std::string>(), HasSubstr("Measured"));
  }
  EXPECT_EQ(j.at("measurements").at("dense_steps").size(), 3u);
  EXPECT_EQ(j.at("measurements").at("fit_residual").size(), 3u);
  // The convnet's steps with every kernel timed: the scale comes from its convolutions'
  // own seconds (never from the step minus a model of the rest, which under ASan on a
  // loaded machine once exceeded the step and refused it), and the step is predicted.
  const auto& conv = j.at("measurements").at("conv_steps");
  EXPECT_GT(conv.at("kernel_seconds").at("conv").get<double>(), 0);
  EXPECT_GT(conv.at("kernel_seconds").at("pool").get<double>(), 0);
  EXPECT_LT(conv.at("kernel_seconds").at("conv").get<double>(),
            conv.at("step_seconds").get<double>() * 2);
  EXPECT_GT(conv.at("predicted_step_seconds").get<double>(), 0);
  EXPECT_GT(j.at("device").at("conv_step_scale").get<double>(), 0);
  EXPECT_GT(j.at("device").at("pool_scale").get<double>(), 0);
  EXPECT_THAT(r.out, HasSubstr("of which convolutions"));
  const CliResult a =
      run_cli("advise --layers 512,128 --hardware '" + out + "' --devices 1,2", dir);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("tandem train --devices 1 --threads-per-device 1"));
  EXPECT_THAT(a.out, HasSubstr("mirrored strategy on this-machine"));
}

// calibrate --conv-model FILE: a user's saved convnet, whose convolution shapes (none of
// them a built-in model's) are timed beside the built-ins' and set the convolution rate;
// advise on the same file then says that every one of its shapes was timed.
TEST_F(CliTest, CalibrateTimesTheShapesOfASavedConvnet) {
  const std::string net = dir.file("net.tandem");
  {
    using namespace tandem;
    const Node x = Input({20, 20, 2});
    Node y = Conv2D(6, 5, "relu")(x);  // 20x20x2 -> 16x16x6: no built-in has it
    y = MaxPooling2D(2)(y);
    y = Conv2D(8, 3, "relu", {.strides = 2, .padding = "same"})(y);  // 8x8x6 -> 4x4x8
    y = Flatten()(y);
    Model(x, Dense(10, "softmax")(y)).save(net);
  }
  const std::string out = dir.file("p.json");
  const CliResult r = run_cli("calibrate --allow-disturbed --quiet-wait 0 --out '" + out +
                                  "' --layers 128 --rows 8,2048 --steps 1 --repeats 1 "
                                  "--conv-model '" +
                                  net + "' --conv-batch 4",
                              dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("net.tandem step, batch 4"));
  const auto j = nlohmann::json::parse(read_file(out));
  auto has_shape = [&](json input, json output, json kernel) {
    for (const auto& c : j.at("device").at("conv_shapes")) {
      if (c.at("input") == input && c.at("output") == output && c.at("kernel") == kernel) {
        return c.at("forward").get<double>() > 0;
      }
    }
    return false;
  };
  EXPECT_TRUE(has_shape({20, 20, 2}, {16, 16, 6}, {5, 5}));
  EXPECT_TRUE(has_shape({8, 8, 6}, {4, 4, 8}, {3, 3}));
  EXPECT_TRUE(has_shape({28, 28, 1}, {26, 26, 32}, {3, 3}));  // the MNIST convnet's first
  EXPECT_THAT(j.at("sources").at("device.conv_shapes").get<std::string>(), HasSubstr("net.tandem"));
  const CliResult a =
      run_cli("advise --model '" + net + "' --hardware '" + out +
                  "' --devices 1,2 --batch-size 32 --json '" + dir.file("a.json") + "'",
              dir);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("convolutions: 2 of the model's 2 timed on this device"));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.file("a.json"))).at("model").at("conv_shapes"),
            json({{"conv_layers", 2}, {"timed", 2}}));
  // A profile calibrated on a built-in model has not timed this one's shapes.
  const std::string builtin = dir.file("b.json");
  ASSERT_EQ(run_cli("calibrate --allow-disturbed --quiet-wait 0 --out '" + builtin +
                        "' --layers 128 --rows 8,2048 --steps 1 --repeats 1 --conv-model "
                        "mnist-convnet --conv-batch 4",
                    dir)
                .exit_code,
            0);
  const CliResult b =
      run_cli("advise --model '" + net + "' --hardware '" + builtin + "' --devices 1", dir);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_THAT(b.out, HasSubstr("convolutions: 0 of the model's 2 timed on this device"));
}

// tandem bench kernels: the step beside its kernels' time inside it. The kernels run inside
// the step, on its one thread, so their sum can never exceed it (a tally that counted a
// call twice, or timed outside the step, would); the counts are the MNIST convnet's layers.
TEST_F(CliTest, BenchKernelsTimesTheKernelsInsideTheStep) {
  const std::string out = dir.file("k.json");
  const CliResult r = run_cli(
      "bench kernels --model mnist-convnet --batch-size 8 --steps 2 "
      "--repeats 3 --json '" +
          out + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("mnist-convnet: 34826 parameters, batch 8"));
  EXPECT_THAT(r.out, HasSubstr("step / kernels"));
  const auto j = nlohmann::json::parse(read_file(out));
  const auto& calls = j.at("kernel_calls_per_step");
  // 2 convolutions forward and backward-weights, 1 backward-data (the first has no input
  // gradient); 2 poolings forward and backward; 3 GEMMs of the one Dense layer.
  EXPECT_EQ(calls.at("conv"), 5);
  EXPECT_EQ(calls.at("pool"), 4);
  EXPECT_EQ(calls.at("gemm"), 3);
  EXPECT_EQ(calls.at("batch_norm"), 0);
  const auto& steps = j.at("step_seconds_repetitions");
  const auto& kernels = j.at("kernel_seconds_repetitions");
  ASSERT_EQ(steps.size(), 3u);
  ASSERT_EQ(kernels.size(), 3u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_GT(kernels[i].get<double>(), 0);
    EXPECT_LE(kernels[i].get<double>(), steps[i].get<double>()) << "repetition " << i;
  }
  EXPECT_GT(j.at("kernel_seconds_by_kind").at("conv").get<double>(), 0);
  EXPECT_GE(j.at("step_over_kernels").get<double>(), 1.0);
  const CliResult missing = run_cli("bench kernels --model '" + dir.file("none.keras") + "'", dir);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("none.keras"));
}

// tandem bench validate: held-out runs beside the predictions of a calibrated profile; the
// exit code says whether every one is within tolerance (no timing is asserted: a tolerance
// of 0 always misses, one of 1e9 always passes; 1000% did not: the narrow model's sharded
// step measured 0.12x against 1.42x predicted on a loaded CI machine). The row counts of the
// rate fits lie far apart (8 to 2048): one step at 16 and one at 256 rows once measured
// 4.70 ms and 3.37 ms under ASan on a loaded machine, and the fit rightly refused them.
TEST_F(CliTest, BenchValidateComparesAndFailsOnAMiss) {
  const std::string profile = dir.file("machine.json");
  ASSERT_EQ(run_cli("calibrate --allow-disturbed --quiet-wait 0 --out '" + profile +
                        "' --layers 512,128 --rows 8,256,2048 --steps 1 --repeats 1",
                    dir)
                .exit_code,
            0);
  const std::string common = "bench validate --hardware '" + profile +
                             "' --models '512;128,128' --batches 64 --steps 1 --repeats 1 "
                             "--calibration-rows 16,2048 --quiet-wait 0";
  // 0.05 MB buckets: 784-128-128-10 in two buckets instead of the default's one; 784-512-10's
  // layers are larger than both sizes, so its buckets do not change (predicted equal). Any
  // hand-off over the fastest counts as apart (--apart-handoff 1): repetitions are timed again.
  const CliResult pass = run_cli(common +
                                     " --bucket-mb 0.05 --speedup-tolerance 1e9 "
                                     "--step-tolerance 1e9 --apart-handoff 1 --json '" +
                                     dir.file("v.json") + "'",
                                 dir);
  ASSERT_EQ(pass.exit_code, 0) << pass.err;
  EXPECT_THAT(pass.out, HasSubstr("2 devices mirrored (allreduce)"));
  EXPECT_THAT(pass.out, HasSubstr("2 devices mirrored (allreduce) 0.05 MB buckets"));
  EXPECT_THAT(pass.out, HasSubstr("all 12 configurations within tolerance"));
  EXPECT_THAT(pass.out, HasSubstr("advice a bucket size over the default: 1 pairs"));
  EXPECT_THAT(pass.out, HasSubstr("and 1 pairs the model predicts equal"));
  const auto j = nlohmann::json::parse(read_file(dir.file("v.json")));
  ASSERT_EQ(j.at("rows").size(), 12u);  // 2 models x 6 configurations
  EXPECT_EQ(j.at("rows")[5].at("bucket_mb"), 0.05);
  EXPECT_EQ(j.at("rows")[5].at("reducer"), "allreduce");
  EXPECT_EQ(j.at("rows")[1].at("bucket_mb"), 0);
  // The model sees the second bucket (a hand-off more) and predicts a different step.
  EXPECT_NE(j.at("rows")[11].at("predicted_seconds"), j.at("rows")[8].at("predicted_seconds"));
  EXPECT_EQ(j.at("rows")[5].at("predicted_seconds"), j.at("rows")[2].at("predicted_seconds"));
  EXPECT_EQ(j.at("profile").at("device").at("threads"), 1);
  // Each model's rate curve measured again on 1 device, interleaved, and used.
  ASSERT_EQ(j.at("calibrations").size(), 2u);
  EXPECT_EQ(j.at("calibrations")[1].at("widths"), nlohmann::json({784, 128, 128, 10}));
  EXPECT_EQ(j.at("calibrations")[1].at("steps").size(), 2u);
  // Calibrate's curve for its model (784-512-128-10) kept; each model validated gets the
  // curve measured again, with its points.
  const auto& rates = j.at("profile").at("device").at("dense_rates");
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_EQ(rates[0].at("widths"), nlohmann::json({784, 512, 128, 10}));
  EXPECT_EQ(rates[2].at("widths"), nlohmann::json({784, 128, 128, 10}));
  for (const auto& curve : {rates[1], rates[2]}) {
    ASSERT_EQ(curve.at("points").size(), 2u);
    EXPECT_EQ(curve.at("points")[0].at("rows"), 16);
    EXPECT_EQ(curve.at("points")[1].at("rows"), 2048);
    // Its weight-gradient GEMMs timed at the same rows for the run's 2 devices.
    ASSERT_EQ(curve.at("weight_grad_gemms").size(), 1u);
    const auto& gemms = curve.at("weight_grad_gemms")[0];
    EXPECT_EQ(gemms.at("devices"), 2);
    ASSERT_EQ(gemms.at("points").size(), 2u);
    EXPECT_EQ(gemms.at("points")[1].at("rows"), 2048);
    EXPECT_GT(gemms.at("points")[1].at("shard_cold").get<double>(), 0);
    ASSERT_EQ(gemms.at("steps_at_once").size(), 2u);
    EXPECT_EQ(gemms.at("steps_at_once")[1].at("rows"), 2048);
    EXPECT_GT(gemms.at("steps_at_once")[1].at("backward_shared").get<double>(), 0);
    EXPECT_GE(gemms.at("steps_at_once")[1].at("median").at("backward_shared").get<double>(),
              gemms.at("steps_at_once")[1].at("backward_shared").get<double>());
    // Where they ran: the round's 2 row counts kept.
    EXPECT_EQ(gemms.at("window").at("kept"), 2);
  }
  EXPECT_THAT(pass.out, HasSubstr("where the steps at once ran: 2 units"));
  // Where each configuration's repetition ran: its window's hand-off, steal and cache reading,
  // one each; a repetition timed again replaced the one before (one repetition kept).
  int redone = 0;
  for (const auto& row : j.at("rows")) {
    ASSERT_EQ(row.at("per_repetition").size(), 1u) << row.at("config");
    ASSERT_EQ(row.at("handoff_per_repetition").size(), 1u) << row.at("config");
    EXPECT_GT(row.at("handoff_per_repetition")[0].get<double>(), 0);
    ASSERT_EQ(row.at("steal_per_repetition").size(), 1u);
    EXPECT_GE(row.at("steal_per_repetition")[0].get<double>(), 0);
    ASSERT_EQ(row.at("cache_per_repetition").size(), 1u);
    EXPECT_GE(row.at("cache_per_repetition")[0].get<double>(),
              j.at("concurrency_probes").at("best_cache").get<double>());
    redone += row.at("redone").get<int>();
  }
  EXPECT_GT(redone, 0);
  EXPECT_GT(j.at("concurrency_probes").at("best_handoff").get<double>(), 0);
  EXPECT_GT(j.at("concurrency_probes").at("best_cache").get<double>(), 0);
  // Each model's repetitions as one window: its 6 kept, those timed again, no polls.
  ASSERT_EQ(j.at("measured_windows").size(), 2u);
  EXPECT_EQ(j.at("measured_windows")[1].at("model"), "784-128-128-10");
  int windows_redone = 0;
  for (const auto& w : j.at("measured_windows")) {
    EXPECT_EQ(w.at("window").at("kept"), 6);
    EXPECT_EQ(w.at("window").at("waits"), 0);
    EXPECT_GT(w.at("window").at("best_cache").get<double>(), 0);
    ASSERT_TRUE(w.at("window").contains("crowded")) << w.at("model");  // counted
    EXPECT_LE(w.at("window").at("crowded").get<int>(), 6);
    windows_redone += w.at("window").at("redone").get<int>();
  }
  EXPECT_EQ(windows_redone, redone);
  EXPECT_THAT(pass.out, HasSubstr("where the repetitions ran: "));
  EXPECT_THAT(pass.out, HasSubstr(" of 12 kept with the devices' cores apart"));
  EXPECT_THAT(pass.out, ContainsRegex("[0-9]+ with their caches crowded \\(recorded only; a cache "
                                      "reading over 1.4x the fastest, [0-9.]+ us\\)"));
  EXPECT_THAT(pass.out,
              HasSubstr("; " + std::to_string(redone) + " timed again, after 0.00 s waiting"));
  EXPECT_THAT(pass.out, HasSubstr("weight-gradient shards of 1 of 2 devices"));
  EXPECT_THAT(pass.out, HasSubstr("with all devices at once over one device's alone: 16 rows "));
  EXPECT_THAT(pass.out, HasSubstr("over each device's own copy over one device's alone, the wait "
                                  "for the last device's backward, and the all-reduce from the "
                                  "device's backward's end: 16 rows "));
  EXPECT_THAT(pass.out, ContainsRegex("16 rows [0-9.]+ wait [0-9.]+ us all-reduce [0-9.]+ us"));
  EXPECT_THAT(pass.out, HasSubstr("784-128-128-10: "));
  const CliResult fail = run_cli(common + " --speedup-tolerance 0 --step-tolerance 0", dir);
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_THAT(fail.err, HasSubstr("validation failed: 10 of 10 configurations out of tolerance"));
  EXPECT_THAT(fail.err, HasSubstr("784-512-10, batch 64, 2 devices host: speedup predicted"));
  // --recompute measures nothing: the run's measurements against this build's predictions,
  // with the run's own profile; the exit code follows the tolerances the same way.
  const std::string again = "bench validate --recompute '" + dir.file("v.json") + "'";
  const CliResult same = run_cli(again + " --speedup-tolerance 1e9 --step-tolerance 1e9", dir);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_THAT(same.out, HasSubstr("all 12 configurations within tolerance"));
  // --json writes the same measurements with this build's predictions, marked as remade.
  ASSERT_EQ(run_cli(again + " --speedup-tolerance 1e9 --step-tolerance 1e9 --json '" +
                        dir.file("re.json") + "'",
                    dir)
                .exit_code,
            0);
  const auto remade = nlohmann::json::parse(read_file(dir.file("re.json")));
  EXPECT_TRUE(remade.contains("predictions_recomputed"));
  EXPECT_EQ(remade.at("rows").size(), 12u);
  EXPECT_EQ(remade.at("rows")[3].at("measured_seconds"), j.at("rows")[3].at("measured_seconds"));
  const CliResult strict = run_cli(again + " --speedup-tolerance 0 --step-tolerance 0", dir);
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_THAT(strict.err, HasSubstr("validation failed: 12 of 12 configurations out of tolerance"));
  // The same run twice under the majority rule; a run of other configurations is refused.
  const std::string twice = again + " '" + dir.file("v.json") + "'";
  const CliResult both = run_cli(twice + " --speedup-tolerance 1e9 --step-tolerance 1e9", dir);
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_THAT(both.out, HasSubstr("0 of 12 configurations out of tolerance in more than half "
                                  "of the 2 runs"));
  const CliResult both_strict = run_cli(twice + " --speedup-tolerance 0 --step-tolerance 0", dir);
  EXPECT_EQ(both_strict.exit_code, 1);
  EXPECT_THAT(both_strict.err, HasSubstr("12 of 12 configurations out of tolerance in more "
                                         "than half of the 2 runs"));
  auto fewer = j;
  fewer["rows"].erase(fewer["rows"].size() - 1);
  std::ofstream(dir.file("fewer.json")) << fewer.dump();
  const CliResult mismatch = run_cli(again + " '" + dir.file("fewer.json") + "'", dir);
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch.err;
  EXPECT_THAT(mismatch.err, HasSubstr("fewer.json: 11 configurations"));
  const CliResult one_json = run_cli(twice + " --json '" + dir.file("x.json") + "'", dir);
  EXPECT_EQ(one_json.exit_code, 2) << one_json.err;
  EXPECT_THAT(one_json.err, HasSubstr("--json writes one recomputed run"));
  std::ofstream(dir.file("not_a_run.json")) << "{\"rows\": []}";
  const CliResult wrong =
      run_cli("bench validate --recompute '" + dir.file("not_a_run.json") + "'", dir);
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_THAT(wrong.err, HasSubstr("not a validation run"));
  const CliResult neither = run_cli("bench validate --models 512", dir);
  EXPECT_NE(neither.exit_code, 0);
  EXPECT_THAT(neither.err, HasSubstr("--hardware is required"));
}

TEST_F(CliTest, SummaryOfTheSeedModel) {
  const CliResult r = run_cli("summary --layers 4096,2048,512,64", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Total params: 12,688,586"));
  EXPECT_THAT(r.out, HasSubstr("dense_4 (Dense)"));
}

// A small model saved through the library, so these tests need no dataset.
std::string save_small_model(const TempDir& dir) {
  const auto inputs = tandem::Input({784});
  const auto outputs = tandem::Dense(10, "softmax")(tandem::Dense(8, "relu")(inputs));
  tandem::Model model(inputs, outputs);
  model.compile("rmsprop", "categorical_crossentropy", {"accuracy"});
  const std::string path = dir.file("small.tdm");
  model.save(path);
  return path;
}

TEST_F(CliTest, SummaryOfASavedModel) {
  const CliResult r = run_cli("summary --model '" + save_small_model(dir) + "'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Total params: 6,370"));  // 784*8+8 + 8*10+10
}

// A convnet by name, with the blog post's batch rule (64 per device): FLOPs, parameters
// and activation traffic from its layers; speedups in samples per second.
TEST_F(CliTest, AdviseConvnetWithAPerDeviceBatch) {
  const CliResult r = run_cli(
      "advise --model minigooglenet --per-device-batch 64 --hardware this-machine-cpu "
      "--devices 1,2 --strategy mirrored --optimizer sgd --json '" +
          dir.file("a.json") + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model: minigooglenet, 1656250 parameters"));
  EXPECT_THAT(r.out, HasSubstr("TFLOP/s convolution"));
  EXPECT_THAT(r.out, HasSubstr("batch 64 per device"));
  const auto j = nlohmann::json::parse(read_file(dir.file("a.json")));
  EXPECT_EQ(j.at("per_device_batch"), 64);
  EXPECT_EQ(j.at("model").at("name"), "minigooglenet");
  const auto& two = j.at("predictions").at(1);
  // Twice the samples in about the time of one device's step: close to 2x, never above.
  EXPECT_GT(two.at("speedup").get<double>(), 1.5);
  EXPECT_LE(two.at("speedup").get<double>(), 2.0);
  // A saved model file works the same way.
  const CliResult f = run_cli(
      "advise --model '" + save_small_model(dir) + "' --hardware this-machine-cpu --devices 1,2",
      dir);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_THAT(f.out, HasSubstr("6370 parameters"));
}

TEST_F(CliTest, SummaryOfBuiltInModels) {
  CliResult r = run_cli("summary --model mnist-convnet", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Total params: 34,826"));  // Keras's example
  r = run_cli("summary --model minigooglenet --dataset synthetic --input-shape 32,32,3", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Total params: 1,656,250"));
  EXPECT_THAT(r.out, HasSubstr("Non-trainable params: 3,424"));  // BN moving statistics
  // With no data named, a built-in model takes its own input shape; synthetic without
  // --input-shape too.
  for (const char* command :
       {"summary --model minigooglenet", "summary --model minigooglenet --dataset synthetic"}) {
    r = run_cli(command, dir);
    ASSERT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("Total params: 1,656,250")) << command;
  }
}

// A convnet trains from the CLI on synthetic images, is saved, and the saved model
// evaluates on the same synthetic test split.
TEST_F(CliTest, ConvnetOnSyntheticImagesTrainsSavesAndEvaluates) {
  const std::string model = dir.file("resnet.tdm");
  const std::string data =
      " --dataset synthetic --input-shape 16,16,3 --classes 4 --synthetic-train 256 "
      "--synthetic-test 64";
  CliResult r = run_cli("train --model small-resnet" + data +
                            " --epochs 2 --batch-size 32 --devices 2 --threads-per-device 1 "
                            "--seed 2 --verbose 2 --save '" +
                            model + "'",
                        dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("fit: "));
  EXPECT_THAT(r.out, HasSubstr("(2 devices, mirrored)"));
  const auto at = r.out.find("test loss");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string scores = r.out.substr(at, r.out.find('\n', at) - at);
  r = run_cli("evaluate --model '" + model + "'" + data, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The saved model on the same test split reports the same loss and accuracy.
  EXPECT_THAT(r.out, HasSubstr(scores));
  r = run_cli("evaluate --model '" + model + "' --dataset synthetic --input-shape 8,8,3", dir);
  expect_clean_failure(r);
  EXPECT_THAT(r.err, HasSubstr("(16, 16, 3)"));
}

TEST_F(CliTest, HelpListsSubcommandsAndOptions) {
  CliResult r = run_cli("--help", dir);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* command :
       {"train", "evaluate", "predict", "summary", "advise", "bench", "calibrate"}) {
    EXPECT_THAT(r.out, HasSubstr(command));
  }
  r = run_cli("train --help", dir);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* option : {"--dataset", "--layers", "--optimizer", "--metrics-json",
                             "--limit-train", "--validation-split", "--threads"}) {
    EXPECT_THAT(r.out, HasSubstr(option));
  }
}

// Bad command lines and inputs. Each case runs with small sizes, so that a check that
// stops working costs a short run, not the seed's.
// --reducer reaches the fit: the all-reduce spends time in its phase, weight-gradient sharding
// (the default for a Dense stack) sums nothing.
TEST_F(CliDataTest, TrainOnTwoDevicesRecordsTheParallelConfig) {
  const std::string metrics = dir.file("m2.json");
  for (const auto& [strategy, reducer] : std::vector<std::pair<std::string, std::string>>{
           {"mirrored", "sharded"}, {"mirrored", "allreduce"}, {"host", "sharded"}}) {
    const CliResult r = run_cli(
        "train --limit-train 256 --limit-test 64 --epochs 1 --layers 16 --batch-size 64 "
        "--devices 2 --strategy " +
            strategy + " --reducer " + reducer + " --seed 3 --verbose 0 --metrics-json '" +
            metrics + "'",
        dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("(2 devices, " + strategy + ")"));
    const json m = json::parse(read_file(metrics));
    EXPECT_EQ(m["config"].at("devices"), 2);
    EXPECT_EQ(m["config"].at("strategy"), strategy);
    EXPECT_EQ(m["config"].at("reducer"), reducer);
    EXPECT_EQ(m.at("train_steps"), 4);
    EXPECT_GT(m.at("test_accuracy").get<double>(), 0.2);
    if (strategy == "mirrored") {
      const double allreduce = m["phase_seconds"].value("allreduce", 0.0);
      if (reducer == "allreduce") {
        EXPECT_GT(allreduce, 0.0) << reducer;
      } else {
        EXPECT_EQ(allreduce, 0.0) << reducer;
      }
    }
  }
}

struct BadCommand {
  std::string name;
  std::string args;  // "{dir}" becomes the test's temporary directory
  std::vector<std::string> message_parts;
  int exit_code = 0;  // 0: any clean failure; else main's code (2 config, 3 file)
};

void PrintTo(const BadCommand& command, std::ostream* out) {
  *out << "tandem " << command.args;
}

class CliBadCommandTest : public CliTest, public ::testing::WithParamInterface<BadCommand> {};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST_P(CliBadCommandTest, FailsWithAMessageNamingTheProblem) {
  // A hardware profile whose device-to-device link has no bandwidth.
  std::ofstream(dir.file("zero.json"))
      << R"({"max_devices": 2, "device": {"sustained_flops": 1e12, "memory_bandwidth": 1e11},
             "host": {"memory_bandwidth": 1e10}, "host_device": {"bandwidth": 1e10},
             "device_device": {"bandwidth": 0}})";
  const std::string args = replace_all(GetParam().args, "{dir}", dir.path().string());
  const CliResult r = run_cli(args, dir);
  expect_clean_failure(r);
  if (GetParam().exit_code != 0) {
    EXPECT_EQ(r.exit_code, GetParam().exit_code) << r.err;
  }
  for (const std::string& part : GetParam().message_parts) {
    EXPECT_THAT(r.err, HasSubstr(replace_all(part, "{dir}", dir.path().string())));
  }
}

constexpr const char* kSmall = " --limit-train 64 --limit-test 64 --epochs 1 --threads 1";

const BadCommand kBadCommands[] = {
    {"TypoInOption", "train --epoch 3", {"tandem: error:", "did you mean --epochs?"}, 2},
    {"NegativeSeed", "train --seed -1", {"--seed", "[0, 2^64)", "'-1'"}, 2},
    {"MillionThreads", "train --threads 1000000", {"threads: 1000000", "per core"}, 2},
    {"HundredThousandThreadsPerDevice",
     "train --devices 2 --threads-per-device 100000",
     {"--threads-per-device 100000", "per core"},
     2},
    {"ThousandDevices", "train --devices 1000", {"--devices 1000", "per core"}, 2},
    {"BillionUnitLayer", "summary --layers 1000000000", {"parameters", "GB", "layer 'dense'"}, 2},
    {"SaveAndMetricsJsonSameFile",
     "train --save {dir}/out --metrics-json {dir}/./out",
     {"--save", "--metrics-json", "are the same file"},
     2},
    {"SaveOntoTrainingData",
     "train --save /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
     {"--save", "which this run reads"},
     2},
    {"MetricsJsonOntoDevice", "train --metrics-json /dev/null", {"/dev/null", "device"}, 3},
    {"PredictOntoItsModel",
     "predict --model {dir}/m.json --output {dir}/m.json",
     {"--output", "is --model", "which this run reads"},
     2},
    {"SaveWhereNoFileCanBeMade",
     "train --save /proc/tandem_x",
     {"cannot create a file in /proc"},
     3},
    {"SeedBeyond64Bits", "train --seed 18446744073709551616", {"--seed", "[0, 2^64)"}, 2},
    {"NanBucketSize", "train --bucket-mb nan", {"--bucket-mb", "finite", "'nan'"}, 2},
    {"LossBecomesNanSavesNothing",
     std::string("train --layers 8 --optimizer sgd --lr 1e30 --batch-size 16 --seed 1 --save "
                 "{dir}/nan.tdm") +
         kSmall,
     {"NaN or infinite", "epoch 1", "nothing was saved", "--continue-on-nan"},
     7},
    {"UnknownBuiltInModelIsAPathThatDoesNotExist",
     "train --model minigoogle-net --epochs 1",
     {"minigoogle-net"},
     0},
    {"ModelAndLayersTogether", "summary --model mnist-convnet --layers 8", {"--layers"}, 2},
    {"MiniGoogLeNetOnTooSmallImages",
     "summary --model minigooglenet --dataset synthetic --input-shape 20,20,3",
     {"AveragePooling2D", "does not fit", "(20, 20, 3)", "made for (32, 32, 3)"},
     4},
    {"MiniGoogLeNetOnFashionMnist",
     "summary --model minigooglenet --dataset fashion-mnist",
     {"--model minigooglenet on fashion-mnist", "(28, 28, 1)", "made for (32, 32, 3)"},
     4},
    {"SyntheticInputShapeNotANumber",
     "train --dataset synthetic --input-shape 32,x,3",
     {"--input-shape", "'x'"},
     2},
    {"SyntheticTooManyClasses",
     "train --dataset synthetic --classes 1000 --epochs 1",
     {"--classes 1000", "256"},
     2},
    {"SavedMlpOnConvData",
     "train --model mnist-convnet --dataset synthetic --input-shape 8,8,3 --layers 4",
     {"--layers"},
     2},
    {"TypoInSubcommand", "trian", {"tandem: error:", "did you mean 'train'?"}, 2},
    {"TypoInAdviseOption", "advise --hardwar pcie3-4gpu", {"did you mean --hardware?"}, 2},
    {"UnknownFlagNoNearName", "summary --zzzzzzzzzz", {"tandem: error:", "zzzzzzzzzz"}, 2},
    {"UnknownOptimizer",
     std::string("train --optimizer adamw --layers 8") + kSmall,
     {"tandem: error:", "optimizer", "adamw"},
     2},
    {"UnknownStrategy",
     std::string("train --strategy ring --devices 2 --layers 8") + kSmall,
     {"--strategy", "ring"}},
    {"UnknownReducer",
     std::string("train --reducer ring --devices 2 --layers 8") + kSmall,
     {"--reducer", "ring"}},
    {"ZeroDevices", std::string("train --devices 0 --layers 8") + kSmall, {"--devices"}},
    {"DeterministicWithThreeDevices",
     std::string("train --deterministic --devices 3 --layers 8") + kSmall,
     {"tandem: error:", "deterministic", "devices (3)"},
     2},
    {"UnknownLoss",
     std::string("train --loss hinge --layers 8") + kSmall,
     {"tandem: error:", "loss", "hinge"},
     2},
    {"UnknownActivation",
     std::string("train --activation relux --layers 8") + kSmall,
     {"tandem: error:", "activation", "relux"},
     2},
    {"UnknownDataset",
     std::string("train --dataset cifar10 --layers 8") + kSmall,
     {"--dataset", "cifar10"}},
    {"ZeroBatchSize",
     std::string("train --batch-size 0 --layers 8") + kSmall,
     {"--batch-size", "'0'"}},
    {"NegativeEpochs", "train --epochs -1 --layers 8 --limit-train 64", {"--epochs"}},
    {"VerboseOutOfRange", std::string("train --verbose 3 --layers 8") + kSmall, {"--verbose"}},
    {"ValidationSplitOne",
     std::string("train --validation-split 1 --layers 8") + kSmall,
     {"--validation-split"}},
    {"NonNumericLayer",
     std::string("train --layers 12,abc") + kSmall,
     {"tandem: error:", "--layers", "abc"},
     2},
    {"EmptyLayers", std::string("train --layers ''") + kSmall, {"tandem: error:", "--layers"}, 2},
    {"ZeroWidthLayer",
     std::string("train --layers 16,0") + kSmall,
     {"tandem: error:", "--layers", "0"},
     2},
    {"EmptyLayerEntry", std::string("summary --layers 16,,8"), {"tandem: error:", "--layers"}, 2},
    {"MissingDataDir",
     std::string("train --data-dir {dir}/missing --layers 8") + kSmall,
     {"tandem: error:", "{dir}/missing"},
     3},
    {"MnistWithoutDataDir",
     std::string("train --dataset mnist --layers 8") + kSmall,
     {"tandem: error:", "--data-dir"},
     2},
    {"MissingModelFile",
     "evaluate --model {dir}/none.tdm",
     {"tandem: error:", "{dir}/none.tdm"},
     3},
    {"SaveIntoMissingDirectory",
     std::string("train --layers 8 --save {dir}/no/such/dir/m.tdm") + kSmall,
     {"tandem: error:", "{dir}/no/such/dir/m.tdm"},
     3},
    {"PredictOutputWithoutExtension",
     "predict --model m.tdm --output {dir}/out.txt",
     {"tandem: error:", "out.txt", ".csv"},
     2},
    {"PredictWithoutOutput", "predict --model m.tdm", {"--output"}},
    {"UnknownSubcommand", "fly", {"fly"}},
    {"AdviseUnknownHardware",
     "advise --hardware no-such-gpu",
     {"tandem: error:", "unknown hardware profile 'no-such-gpu'", "pcie3-4gpu"},
     2},
    {"AdviseWithoutHardware", "advise", {"tandem: error:", "--hardware"}, 2},
    {"AdviseModelAndLayers",
     "advise --model mnist-convnet --layers 8 --hardware pcie3-4gpu",
     {"--layers"},
     2},
    {"AdvisePerDeviceAndGlobalBatch",
     "advise --model mnist-convnet --batch-size 64 --per-device-batch 32 --hardware pcie3-4gpu",
     {"--per-device-batch", "--batch-size"},
     2},
    {"AdviseZeroDevices",
     "advise --hardware pcie3-4gpu --devices 0,2",
     {"tandem: error:", "--devices '0,2'", "entry '0'"},
     2},
    {"AdviseBatchSmallerThanDevices",
     "advise --hardware pcie3-4gpu --batch-size 2 --devices 1,4",
     {"tandem: error:", "batch size 2 is smaller than 4 devices"},
     2},
    {"AdviseZeroBandwidthProfile",
     "advise --hardware {dir}/zero.json",
     {"tandem: error:", "zero.json: device_device", "'bandwidth' must be > 0"},
     2},
    {"CalibrateWithoutOut", "calibrate", {"tandem: error:", "--out"}, 2},
    {"CalibrateNegativeQuietWait",
     "calibrate --out {dir}/p.json --quiet-wait -1",
     {"tandem: error:", "--quiet-wait"},
     2},
    {"ValidateQuietWaitOverAnHour",
     "bench validate --hardware this-machine-cpu --quiet-wait 3601",
     {"tandem: error:", "--quiet-wait"},
     2},
    {"CalibrateOneRowCount",
     "calibrate --out {dir}/p.json --rows 64,64",
     {"tandem: error:", "--rows needs at least two different row counts"},
     2},
    {"CalibrateBadRows",
     "calibrate --out {dir}/p.json --rows 16,x",
     {"tandem: error:", "--rows", "'x'"},
     2},
    {"CalibrateOutInAMissingDirectory",
     "calibrate --out {dir}/missing/p.json --layers 8 --rows 1,2",
     {"tandem: error:", "missing/p.json"},
     0},
    {"CalibrateUnknownConvModel",
     "calibrate --out {dir}/p.json --layers 8 --rows 1,2 --steps 1 --repeats 1 --conv-model nope",
     {"tandem: error:", "--conv-model 'nope' is not a built-in convnet", "minigooglenet"},
     2},
    {"CalibrateBadAlsoLayers",
     "calibrate --out {dir}/p.json --layers 8 --rows 1,2 --also-layers '16;0'",
     {"tandem: error:", "--also-layers", "0"},
     2},
    {"ValidateOneCalibrationRow",
     "bench validate --hardware this-machine-cpu --calibration-rows 64,64",
     {"tandem: error:", "--calibration-rows needs at least two different row counts"},
     2},
    {"ValidateRecomputeMissingRun",
     "bench validate --recompute {dir}/none.json",
     {"tandem: error:", "none.json"},
     0},
    {"ValidateBadBucketSize",
     "bench validate --hardware this-machine-cpu --bucket-mb 1,x",
     {"tandem: error:", "--bucket-mb: 'x' is not a size in MB"},
     2},
    {"ValidateGpuProfile",
     "bench validate --hardware pcie3-4gpu",
     {"tandem: error:", "has no device.threads", "tandem calibrate"},
     2},
    {"ValidateTooManyDevices",
     "bench validate --hardware this-machine-cpu --devices 4",
     {"tandem: error:", "--devices 4"},
     2},
    {"ResumeWithoutCheckpointDir",
     std::string("train --layers 8 --resume") + kSmall,
     {"tandem: error:", "--resume needs --checkpoint-dir"},
     2},
    {"CheckpointEveryBadUnit",
     std::string("train --layers 8 --checkpoint-dir {dir}/c --checkpoint-every 3hours") + kSmall,
     {"tandem: error:", "unknown unit 'hours'"},
     2},
};

INSTANTIATE_TEST_SUITE_P(Cli, CliBadCommandTest, ::testing::ValuesIn(kBadCommands),
                         [](const auto& info) { return info.param.name; });

// Damaged model files: each is a clean error naming the file.
class CliBadModelFileTest : public CliTest {
 protected:
  CliResult evaluate(const std::string& model) {
    return run_cli("evaluate --model '" + model + "' --limit 16", dir);
  }
};

TEST_F(CliBadModelFileTest, Garbage) {
  const std::string path = dir.file("garbage.tdm");
  std::ofstream(path) << "this is not a tandem model file, just some text\n";
  const CliResult r = evaluate(path);
  expect_clean_failure(r);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("tandem: error: " + path));
}

TEST_F(CliBadModelFileTest, TruncatedAtEveryFewBytes) {
  const std::string good = save_small_model(dir);
  const auto size = fs::file_size(good);
  const std::string bytes = read_file(good);
  const std::string path = dir.file("truncated.tdm");
  for (const auto keep : {size_t{0}, size_t{7}, size_t{40}, size / 3, size - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), keep);
    const CliResult r = evaluate(path);
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(size) + " bytes");
    expect_clean_failure(r);
    EXPECT_THAT(r.err, HasSubstr("tandem: error: " + path));
  }
}

TEST_F(CliBadModelFileTest, FlippedByteFailsTheChecksum) {
  std::string bytes = read_file(save_small_model(dir));
  bytes[bytes.size() / 2] ^= 0x5a;
  const std::string path = dir.file("flipped.tdm");
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
  for (const char* command : {"evaluate --limit 16", "summary"}) {
    const CliResult r = run_cli(std::string(command) + " --model '" + path + "'", dir);
    expect_clean_failure(r);
    EXPECT_THAT(r.err, HasSubstr(path));
  }
}

}  // namespace
