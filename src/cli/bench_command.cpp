#include "cli/bench_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "advise/advice.h"
#include "advise/cost_model.h"
#include "cli/atomic_write.h"
#include "core/output_path.h"
#include "model/model_state.h"
#include "parallel/strategy.h"
#include "report/scaling_report.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/optimizers.h"

namespace tandem::cli {
namespace {

struct Config {
  detail::ReportConfig report;
  Model model;
  std::unique_ptr<detail::Strategy> run;
  std::vector<double> seconds;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> out = parse_device_counts(text);
  if (std::find(out.begin(), out.end(), 1) == out.end()) out.insert(out.begin(), 1);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchOptions& o) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  CLI::App* cmd = bench->add_subcommand(
      "scaling",
      "Measure the training step on 1 and N devices per strategy, next to the cost model's "
      "prediction; print the table and write the scaling report");
  add_model_shape_options(*cmd, o.shape, /*model_option=*/false);
  cmd->add_option("--batch-size", o.batch_size, "Global batch size")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--devices", o.devices, "Device counts (1 is always measured)")
      ->capture_default_str();
  cmd->add_option("--strategy", o.strategy, "mirrored, host or both")
      ->check(CLI::IsMember({"mirrored", "host", "both"}))
      ->capture_default_str();
  add_timing_options(*cmd, o.steps, o.repeats);
  cmd->add_option("--hardware", o.hardware,
                  "Hardware profile for the predictions, calibrated with this run's 1-device "
                  "step (none: no predictions)")
      ->capture_default_str();
  cmd->add_option("--history", o.history,
                  "Training curves to include: tandem train --metrics-json reports or CSVLogger "
                  "files (repeatable)")
      ->type_name("PATH");
  cmd->add_option("--report", o.report_path, "Write the HTML scaling report to PATH")
      ->type_name("PATH");
  cmd->add_option("--json", o.json_path, "Write the measurements as JSON to PATH")
      ->type_name("PATH");
  return cmd;
}

int run_bench(const BenchOptions& o) {
  const std::vector<int> devices = parse_devices(o.devices);
  if (o.batch_size < devices.back()) {
    throw ConfigError("bench: batch size " + std::to_string(o.batch_size) + " is smaller than " +
                      std::to_string(devices.back()) + " devices");
  }
  check_outputs_distinct({{"--report", o.report_path}, {"--json", o.json_path}}, {});
  if (!o.report_path.empty()) check_writable(o.report_path);
  if (!o.json_path.empty()) check_writable(o.json_path);
  detail::ScalingReport report;
  for (const auto& path : o.history) report.curves.push_back(detail::read_training_curve(path));
  std::optional<detail::HardwareProfile> hw;
  if (o.hardware != "none") hw = detail::load_hardware_profile(o.hardware);

  std::vector<std::string> strategies = o.strategy == "both"
                                            ? std::vector<std::string>{"mirrored", "host"}
                                            : std::vector<std::string>{o.strategy};
  std::vector<std::unique_ptr<Config>> configs;
  auto add = [&](int n, const std::string& strategy) {
    set_random_seed(1);
    auto c = std::make_unique<Config>(Config{{}, build_model(o.shape, DataOptions{}), nullptr, {}});
    c->model.compile(RMSprop(), "categorical_crossentropy", {"accuracy"});
    c->report.devices = n;
    c->report.strategy = strategy;
    c->report.name = n == 1 ? "1 device" : std::to_string(n) + " devices " + strategy;
    detail::StrategyOptions so;
    so.devices = n;
    so.threads_per_device = 1;
    so.kind = detail::parse_strategy(strategy);
    c->run = detail::make_strategy(c->model.state(), so);
    c->run->prepare(o.batch_size);
    configs.push_back(std::move(c));
  };
  add(1, "mirrored");
  for (int n : devices) {
    if (n == 1) continue;
    for (const auto& s : strategies) add(n, s);
  }
  // Synthetic data of the model's shape.
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Tensor x({o.batch_size, kImageSize}), y({o.batch_size, kClasses});
  for (auto& v : x.values()) v = u(gen);
  for (int64_t i = 0; i < o.batch_size; ++i) y[i * kClasses + i % kClasses] = 1.f;
  std::vector<int64_t> rows(o.batch_size);
  std::iota(rows.begin(), rows.end(), 0);
  for (auto& c : configs) {
    c->run->train_step(x, y, rows, 7);  // warm: primitives, buffers
    c->run->prepare(o.batch_size);      // phase timers restart
  }
  uint64_t seed = 100;
  for (int r = 0; r < o.repeats; ++r) {
    for (auto& c : configs) {
      const auto start = std::chrono::steady_clock::now();
      for (int s = 0; s < o.steps; ++s) c->run->train_step(x, y, rows, ++seed);
      c->seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
          o.steps);
    }
  }
  const double base_ms = median(configs.front()->seconds) * 1e3;
  std::vector<int64_t> widths = {kImageSize};
  for (int64_t w : parse_layer_widths(o.shape.layers)) widths.push_back(w);
  widths.push_back(kClasses);
  detail::Scenario scenario;
  scenario.model = detail::ModelCost::dense(widths);
  scenario.batch = o.batch_size;
  if (hw) {
    detail::calibrate_to_step(*hw, widths, o.batch_size, base_ms / 1e3);
    report.hardware = hw->name + " (calibrated with this run's 1-device step)";
  }
  for (auto& c : configs) {
    auto& r = c->report;
    r.ms_per_step = median(c->seconds) * 1e3;
    r.speedup = base_ms / r.ms_per_step;
    const PhaseTimes t = c->run->times();
    for (int p = 0; p < static_cast<int>(Phase::count); ++p) {
      r.phase_ms[phase_name(static_cast<Phase>(p))] =
          t[static_cast<Phase>(p)] / std::max<int64_t>(t.steps, 1) * 1e3;
    }
    if (hw && r.devices <= hw->max_devices) {
      scenario.strategy = detail::parse_strategy(r.strategy);
      const auto p = detail::predict_all(*hw, scenario, {r.devices}).front();
      r.predicted_speedup = p.speedup;
      r.predicted_ms = p.step_seconds * 1e3;
    }
    report.configs.push_back(r);
  }
  report.model = "Dense " + fmt::format("{}", fmt::join(widths, "-")) + ", RMSprop, " +
                 std::to_string(scenario.model.params()) + " parameters";
  report.batch = o.batch_size;
  // Plain words: for the largest configuration of each strategy, where the time goes.
  for (const auto& s : strategies) {
    const detail::ReportConfig* top = nullptr;
    for (const auto& c : report.configs) {
      if (c.strategy == s && c.devices > 1 && (!top || c.devices > top->devices)) top = &c;
    }
    if (!top) continue;
    std::string biggest;
    double most = -1, compute = 0;
    for (const auto& [phase, ms] : top->phase_ms) {
      if (phase == "forward" || phase == "backward") {
        compute += ms;
        continue;
      }
      if (ms > most) most = ms, biggest = phase;
    }
    report.notes.push_back(fmt::format(
        "{}: {:.2f}x one device ({:.0f}% efficiency); per device {:.1f} ms of "
        "forward+backward, and the largest other phase is {} ({:.1f} ms).",
        top->name, top->speedup, 100 * top->speedup / top->devices, compute, biggest, most));
    if (hw && top->devices <= hw->max_devices) {
      scenario.strategy = detail::parse_strategy(s);
      std::vector<int> counts;
      for (int n : devices) {
        if (n <= hw->max_devices) counts.push_back(n);
      }
      for (const auto& line :
           detail::advise(*hw, scenario, detail::predict_all(*hw, scenario, counts))) {
        report.notes.push_back("Cost model: " + line);
      }
    }
  }
  fmt::print("{}", detail::report_text(report));
  if (!o.report_path.empty()) {
    write_text_atomically(o.report_path, detail::report_html(report));
    fmt::print("wrote the scaling report to {}\n", o.report_path);
  }
  if (!o.json_path.empty()) {
    nlohmann::json j = {{"batch", o.batch_size}, {"configs", nlohmann::json::array()}};
    for (const auto& c : report.configs) {
      j["configs"].push_back({{"name", c.name},
                              {"strategy", c.strategy},
                              {"devices", c.devices},
                              {"ms_per_step", c.ms_per_step},
                              {"speedup", c.speedup},
                              {"predicted_speedup", std::isnan(c.predicted_speedup)
                                                        ? nlohmann::json(nullptr)
                                                        : nlohmann::json(c.predicted_speedup)},
                              {"phase_ms", c.phase_ms}});
    }
    write_text_atomically(o.json_path, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace tandem::cli
