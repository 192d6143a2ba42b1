#include "cli/kernels_command.h"

#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "advise/step_run.h"
#include "backend/timed_backend.h"
#include "cli/atomic_write.h"
#include "cli/options.h"
#include "tandem/error.h"
#include "tandem/zoo.h"

namespace tandem::cli {
using nlohmann::json;

CLI::App* add_kernels_command(CLI::App& bench, KernelsOptions& o) {
  CLI::App* cmd = bench.add_subcommand(
      "kernels",
      "One device's training step of a model beside the time its backend kernels take in it "
      "(every kernel call timed): what the step spends outside them");
  cmd->add_option("--model", o.model,
                  "A built-in model (seed-mlp, mnist-convnet, minigooglenet, small-resnet) or a "
                  "saved model file (.tandem or .keras)")
      ->type_name("NAME|FILE")
      ->required();
  cmd->add_option("--batch-size", o.batch_size, "Rows per step")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--threads-per-device", o.threads_per_device, "Threads of the device")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "sgd, rmsprop or adam (Keras's defaults)")
      ->check(CLI::IsMember({"sgd", "rmsprop", "adam"}))
      ->capture_default_str();
  add_timing_options(*cmd, o.steps, o.repeats);
  cmd->add_option("--json", o.json_path, "Write the measurements as JSON to PATH")
      ->type_name("PATH");
  return cmd;
}

int run_kernels(const KernelsOptions& o) {
  if (!o.json_path.empty()) check_writable(o.json_path);
  auto tally = std::make_shared<KernelSeconds>();
  detail::StrategyOptions so;
  so.devices = 1;
  so.threads_per_device = o.threads_per_device;
  so.make_backend = [tally](int threads) {
    return make_timed_backend(make_cpu_backend(threads), tally);
  };
  Model model = zoo::by_name_or_file(o.model);
  const int64_t params = model.count_params();
  detail::StepRun run(std::move(model), o.batch_size, so, o.optimizer);
  constexpr auto kinds = static_cast<size_t>(KernelKind::count);
  // Per repetition: each kind's seconds per step, and all kernels'.
  std::vector<std::vector<double>> per_kind(kinds);
  std::vector<double> kernels;
  std::vector<int64_t> calls(kinds);
  uint64_t seed = 1;
  for (int rep = 0; rep < o.repeats; ++rep) {
    tally->reset();  // the warm-up step (primitive creation) and earlier repetitions
    run.time(o.steps, seed);
    double all = 0;
    for (size_t k = 0; k < kinds; ++k) {
      per_kind[k].push_back(tally->seconds[k] / o.steps);
      all += tally->seconds[k] / o.steps;
      calls[k] = tally->calls[k] / o.steps;
    }
    kernels.push_back(all);
  }
  const double step = run.median_seconds();
  const double kernel_step = detail::median_of(kernels);
  json by_kind = json::object(), calls_json = json::object();
  std::string words;
  for (size_t k = 0; k < kinds; ++k) {
    const char* name = kernel_kind_name(static_cast<KernelKind>(k));
    by_kind[name] = detail::median_of(per_kind[k]);
    calls_json[name] = calls[k];
    if (calls[k] > 0) {
      words += fmt::format("{}{} {:.3f}", words.empty() ? "" : ", ", name,
                           detail::median_of(per_kind[k]) * 1e3);
    }
  }
  fmt::print(
      "{}: {} parameters, batch {}, 1 device x {} thread(s), {}; medians of {} repetitions of "
      "{} steps\n",
      o.model, params, o.batch_size, o.threads_per_device, o.optimizer, o.repeats, o.steps);
  fmt::print("  step      {:10.3f} ms\n", step * 1e3);
  fmt::print("  kernels   {:10.3f} ms  ({})\n", kernel_step * 1e3, words);
  const double ratio = kernel_step > 0 ? step / kernel_step : 0;  // 0: no kernel ran
  fmt::print("  outside   {:10.3f} ms  (step / kernels {:.2f}x)\n", (step - kernel_step) * 1e3,
             ratio);
  if (!o.json_path.empty()) {
    const json j = {{"model", o.model},
                    {"params", params},
                    {"batch", o.batch_size},
                    {"threads_per_device", o.threads_per_device},
                    {"optimizer", o.optimizer},
                    {"steps", o.steps},
                    {"repeats", o.repeats},
                    {"step_seconds", step},
                    {"step_seconds_repetitions", run.seconds()},
                    {"kernel_seconds", kernel_step},
                    {"kernel_seconds_repetitions", kernels},
                    {"kernel_seconds_by_kind", by_kind},
                    {"kernel_calls_per_step", calls_json},
                    {"step_over_kernels", ratio}};
    write_text_atomically(o.json_path, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace tandem::cli
