#include "cli/calibrate_command.h"

#include <fmt/core.h>

#include <iostream>

#include "advise/calibrate.h"
#include "advise/hardware_profile.h"
#include "cli/atomic_write.h"
#include "parallel/world.h"
#include "tandem/config.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

std::vector<int64_t> parse_rows(const std::string& text) {
  try {
    return parse_layer_widths(text);  // the same rules: whole numbers > 0, comma-separated
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--rows: ") + e.what());
  }
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine's CPU devices on one device only (dense and convolution rates, "
      "the update's bandwidth, one core's copy and sum, a thread hand-off; under mpirun, the "
      "all-reduce link between the ranks too) and write a hardware profile for tandem advise "
      "--hardware PATH, each figure with its source");
  cmd->add_option("--out", o.out, "Write the profile (JSON) to PATH")
      ->type_name("PATH")
      ->required();
  cmd->add_option("--layers", o.shape.layers,
                  "Hidden widths of the dense model measured: Input(784) -> Dense(w) ... -> "
                  "Dense(10, softmax)")
      ->type_name("W,W,...")
      ->capture_default_str();
  cmd->add_option("--also-layers", o.also_layers,
                  "More dense models (hidden widths, ';' between models) measured the same way: "
                  "the profile keeps each one's rate curve, used for predictions of that model")
      ->type_name("W,...;W,...");
  cmd->add_option("--conv-model", o.conv_model,
                  "A convnet to measure the convolution rate with: a built-in one (mnist-convnet, "
                  "minigooglenet, small-resnet) or a saved model file (.tandem or .keras), whose "
                  "convolution shapes are then timed too; none by default")
      ->type_name("NAME|FILE");
  cmd->add_option("--conv-batch", o.conv_batch, "Batch of the convnet's steps")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--threads-per-device", o.threads_per_device,
                  "Threads of one device (what tandem train --threads-per-device runs)")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--max-devices", o.max_devices,
                  "Devices the profile describes (default: the cores / threads per device)")
      ->check(positive_integer());
  cmd->add_option("--rows", o.rows, "Rows per device of the measured dense steps (2 or more)")
      ->type_name("R,R,...")
      ->capture_default_str();
  add_timing_options(*cmd, o.steps, o.repeats);
  cmd->add_option("--name", o.name, "The profile's name")->capture_default_str();
  cmd->add_flag("--allow-disturbed", o.allow_disturbed,
                "Write the profile even where a probe of devices at once kept timings taken with "
                "the devices' cores apart or their time taken by the hypervisor (each probe "
                "times such a round again, up to its number of rounds, after waiting up to "
                "--quiet-wait for a quiet window; the profile records where each ran); without "
                "it calibrate then fails and writes nothing");
  add_apart_handoff_option(*cmd, o.apart_handoff);
  add_quiet_wait_option(*cmd, o.quiet_wait);
  return cmd;
}

int run_calibrate(const CalibrateOptions& o) {
  detail::CalibrationPlan plan;
  plan.name = o.name;
  plan.widths = {kImageSize};
  for (int64_t w : parse_layer_widths(o.shape.layers)) plan.widths.push_back(w);
  plan.widths.push_back(kClasses);
  if (!o.also_layers.empty()) {
    size_t at = 0;
    while (at <= o.also_layers.size()) {
      const size_t end = std::min(o.also_layers.find(';', at), o.also_layers.size());
      std::vector<int64_t> widths = {kImageSize};
      try {
        for (int64_t w : parse_layer_widths(o.also_layers.substr(at, end - at))) {
          widths.push_back(w);
        }
      } catch (const ConfigError& e) {
        throw ConfigError(std::string("--also-layers: ") + e.what());
      }
      widths.push_back(kClasses);
      plan.other_widths.push_back(widths);
      at = end + 1;
    }
  }
  plan.conv_model = o.conv_model;
  plan.conv_batch = o.conv_batch;
  plan.threads_per_device = o.threads_per_device;
  plan.max_devices =
      o.max_devices > 0 ? o.max_devices : std::max(1, available_cores() / o.threads_per_device);
  plan.rows = parse_rows(o.rows);
  plan.steps = o.steps;
  plan.repeats = o.repeats;
  detail::check_plan(plan);
  detail::set_apart_handoff(o.apart_handoff);
  detail::set_quiet_wait(o.quiet_wait);
  // Under mpirun every rank measures the link between them; rank 0 writes the profile.
  detail::World* world = detail::current_world();
  const bool writer = world == nullptr || world->rank() == 0;
  if (writer) check_writable(o.out);  // before minutes of measuring
  const nlohmann::json profile = detail::calibrate_machine(plan, std::cout, world);
  if (!writer) return 0;
  detail::check_windows(profile, o.allow_disturbed, o.out, std::cout);
  write_text_atomically(o.out, profile.dump(2) + "\n");
  if (o.out != "-") fmt::print("wrote the profile to {}\n", o.out);
  return 0;
}

}  // namespace tandem::cli
