#include "cli/advise_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "advise/advice.h"
#include "advise/cost_model.h"
#include "cli/atomic_write.h"
#include "cli/options.h"
#include "core/output_path.h"
#include "report/svg_chart.h"
#include "tandem/error.h"
#include "tandem/zoo.h"

namespace tandem::cli {
namespace {

using detail::Prediction;

// Update passes (floats read or written per parameter) of each optimizer's rule.
int update_passes(const std::string& optimizer) {
  if (optimizer == "sgd") return 3;      // w, g read; w written
  if (optimizer == "rmsprop") return 5;  // w, g, v read; w, v written
  if (optimizer == "adam") return 7;     // w, g, m, v read; w, m, v written
  throw ConfigError("--optimizer '" + optimizer + "': known are sgd, rmsprop, adam");
}

const char* kPhases[] = {"compute",
                         "weights_to_devices",
                         "gradients_to_host",
                         "host_update",
                         "allreduce",
                         "optimizer",
                         "input",
                         "overhead"};

void print_table(const detail::HardwareProfile& hw, const detail::Scenario& s,
                 const std::vector<Prediction>& rows) {
  fmt::print("\n{} strategy on {} (batch {} {}, {} epochs of {} samples)\n",
             detail::name_of(s.strategy), hw.name, s.batch,
             s.per_device_batch ? "per device" : "global", s.epochs, s.samples);
  fmt::print(
      "{:>7} {:>9} {:>9} {:>9} {:>8} | {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6} "
      "| {}\n",
      "devices", "ms/step", "epoch s", "total s", "speedup", "compute", "w->dev", "g->host",
      "host upd", "allreduc", "optim", "input", "ovhd", "bottleneck");
  for (const auto& p : rows) {
    fmt::print("{:>7} {:>9.2f} {:>9.2f} {:>9.1f} {:>7.2f}x |", p.devices, p.step_seconds * 1e3,
               p.epoch_seconds, p.total_seconds, p.speedup);
    for (const char* phase : kPhases) {
      const auto it = p.phases.find(phase);
      const double ms = it == p.phases.end() ? 0 : it->second * 1e3;
      fmt::print(" {:>{}.2f}", ms,
                 std::string(phase) == "input" || std::string(phase) == "overhead" ? 6 : 8);
    }
    fmt::print(" | {}\n", p.bottleneck);
  }
  if (!rows.empty()) {
    fmt::print("simulated as: {}{}\n", rows.back().algorithm,
               s.ranks > 1 ? fmt::format(" ({} ranks, the devices per rank above)", s.ranks) : "");
  }
}

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json phases;
  for (const auto& [k, v] : p.phases) phases[k] = v;
  nlohmann::json busy;
  for (const auto& [k, v] : p.busy) busy[k] = v;
  return {{"devices", p.devices},
          {"strategy", detail::name_of(p.strategy)},
          {"algorithm", p.algorithm},
          {"step_seconds", p.step_seconds},
          {"epoch_seconds", p.epoch_seconds},
          {"total_seconds", p.total_seconds},
          {"speedup", p.speedup},
          {"phases_seconds", phases},
          {"busy_seconds", busy},
          {"bottleneck", p.bottleneck}};
}

// How tandem calibrate measures the dense rate of a model of these widths (empty: not a chain
// of Dense layers).
std::string how_to_measure(const std::vector<int64_t>& widths) {
  if (widths.empty()) {
    return "tandem calibrate measures chains of Dense layers, with no other layer between";
  }
  if (widths.front() != kImageSize || widths.back() != kClasses) {
    return fmt::format("tandem calibrate measures dense models of {} inputs and {} classes",
                       kImageSize, kClasses);
  }
  return fmt::format(
      "`tandem calibrate --also-layers {}` measures its own, with its weight-gradient GEMMs",
      fmt::join(widths.begin() + 1, widths.end() - 1, ","));
}

}  // namespace

CLI::App* add_advise_command(CLI::App& app, AdviseOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "advise",
      "Predict a training step on N devices of a hardware profile, phase by phase, and say "
      "what limits it and what to change");
  CLI::Option* layers =
      cmd->add_option("--layers", o.layers, "Hidden layer widths of a Dense stack, comma-separated")
          ->capture_default_str();
  CLI::Option* input = cmd->add_option("--input", o.input, "Input width (with --layers)")
                           ->check(positive_integer())
                           ->capture_default_str();
  cmd->add_option("--model", o.model,
                  "A built-in model (seed-mlp, mnist-convnet, minigooglenet, small-resnet) or a "
                  "saved model file, instead of --layers")
      ->type_name("NAME|PATH")
      ->excludes(layers)
      ->excludes(input);
  cmd->add_option("--classes", o.classes, "Output width (with --layers)")
      ->check(positive_integer())
      ->capture_default_str();
  CLI::Option* batch = cmd->add_option("--batch-size", o.batch_size, "Global batch size")
                           ->check(positive_integer())
                           ->capture_default_str();
  cmd->add_option("--per-device-batch", o.per_device_batch,
                  "Batch per device, the global batch growing with the devices (the blog "
                  "post's 64 per GPU); speedups are then in samples per second")
      ->check(positive_integer())
      ->excludes(batch);
  cmd->add_option("--hardware", o.hardware,
                  "Hardware profile: a name from profiles/ (--list-hardware) or a JSON file");
  cmd->add_option("--devices", o.devices, "Device counts to predict, comma-separated")
      ->capture_default_str();
  cmd->add_option("--strategy", o.strategy,
                  "host (keras multi_gpu_model), mirrored (replicas + ring all-reduce), or both")
      ->check(CLI::IsMember({"host", "mirrored", "both"}))
      ->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "Epochs of the run")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--samples", o.samples, "Training samples per epoch")
      ->check(positive_integer())
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o.bucket_mb, "Gradient bucket size (mirrored)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--grad-compression", o.grad_compression, "none or bf16 (mirrored)")
      ->check(CLI::IsMember({"none", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--allreduce", o.allreduce, "ring or tree (mirrored)")
      ->check(CLI::IsMember({"ring", "tree"}))
      ->capture_default_str();
  cmd->add_option("--reducer", o.reducer,
                  "sharded or allreduce (mirrored on CPU devices: tandem train --reducer)")
      ->check(CLI::IsMember({"sharded", "allreduce"}))
      ->capture_default_str();
  cmd->add_flag("--deterministic", o.deterministic,
                "Deterministic mode's micro-shards (mirrored on CPU devices)");
  cmd->add_option("--ranks", o.ranks, "MPI processes, each with the --devices counts")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_flag("--no-overlap", o.no_overlap,
                "Start the all-reduce after backward instead of bucket by bucket during it");
  cmd->add_option("--optimizer", o.optimizer, "sgd, rmsprop or adam (the update's memory passes)")
      ->capture_default_str();
  cmd->add_option("--json", o.json_path, "Write the predictions as JSON to PATH")
      ->type_name("PATH");
  cmd->add_option("--svg", o.svg_path,
                  "Write the speedup chart (predicted per strategy, ideal, --measured) as SVG")
      ->type_name("PATH");
  cmd->add_option("--measured", o.measured,
                  "A measured speedup to plot beside the predictions, DEVICES=SPEEDUP "
                  "(repeatable), e.g. 4=0.5 for the seed's 25 s vs 50 s")
      ->type_name("N=X");
  cmd->add_flag("--list-hardware", o.list, "List the hardware profiles and exit");
  return cmd;
}

int run_advise(const AdviseOptions& o) {
  if (o.list) {
    for (const auto& name : detail::known_hardware_profiles()) {
      const auto hw = detail::load_hardware_profile(name);
      fmt::print("{:<22} {}\n", name, hw.description);
    }
    return 0;
  }
  if (o.hardware.empty()) {
    throw ConfigError("advise: --hardware is required (tandem advise --list-hardware)");
  }
  const detail::HardwareProfile hw = detail::load_hardware_profile(o.hardware);
  std::vector<int64_t> widths;
  detail::Scenario s;
  std::string model_name;
  if (o.model.empty()) {
    widths.push_back(o.input);
    for (int64_t w : parse_layer_widths(o.layers)) widths.push_back(w);
    widths.push_back(o.classes);
    s.model = detail::ModelCost::dense(widths);
  } else {
    s.model = detail::ModelCost::of(zoo::by_name_or_file(o.model));
    model_name = o.model;
  }
  s.per_device_batch = o.per_device_batch > 0;
  s.batch = s.per_device_batch ? o.per_device_batch : o.batch_size;
  s.epochs = o.epochs;
  s.samples = o.samples;
  s.bucket_bytes = static_cast<int64_t>(o.bucket_mb * (1 << 20));
  s.bf16 = o.grad_compression == "bf16";
  s.allreduce = detail::parse_allreduce(o.allreduce);
  s.overlap = !o.no_overlap;
  s.reducer = detail::parse_reducer(o.reducer);
  s.deterministic = o.deterministic;
  s.ranks = o.ranks;
  s.update_passes = update_passes(o.optimizer);
  const std::vector<int> devices = parse_device_counts(o.devices);
  check_outputs_distinct({{"--json", o.json_path}, {"--svg", o.svg_path}}, {});
  if (!o.json_path.empty()) check_writable(o.json_path);
  if (!o.svg_path.empty()) check_writable(o.svg_path);
  detail::Series measured{"measured", "#000000", {}, false, true};
  for (const auto& m : o.measured) {
    const auto eq = m.find('=');
    try {
      if (eq == std::string::npos) throw std::invalid_argument(m);
      measured.points.emplace_back(std::stoi(m.substr(0, eq)), std::stod(m.substr(eq + 1)));
    } catch (const std::exception&) {
      throw ConfigError("--measured '" + m + "': expected DEVICES=SPEEDUP, e.g. 4=0.5");
    }
  }
  const std::string batch_words = s.per_device_batch
                                      ? "batch " + std::to_string(s.batch) + " per device"
                                      : "global batch " + std::to_string(s.batch);
  detail::LineChart chart{"Predicted speedup on " + hw.name + " (" + batch_words + ")",
                          "devices",
                          "speedup over 1 device",
                          {},
                          true};

  nlohmann::json model_shapes_timed;  // conv layers whose shapes the profile timed
  double activation_bytes = 0;
  for (const auto& l : s.model.layers) activation_bytes += l.forward_bytes + l.backward_bytes;
  fmt::print(
      "model: {}{} parameters ({:.2f} MB), {:.2f} GFLOP and {:.1f} MB of memory-bound layer "
      "traffic per sample and step\n",
      model_name.empty() ? "" : model_name + ", ", s.model.params(), 4.0 * s.model.params() / 1e6,
      s.model.step_flops(1) / 1e9, activation_bytes / 1e6);
  fmt::print("hardware: {}: {}\n  device: {}, {:.2f} TFLOP/s dense{}", hw.name, hw.description,
             hw.device.name, hw.device.sustained_flops / 1e12,
             hw.sources.contains("calibration") ? " (calibrated)" : "");
  if (s.model.has_conv()) {
    const double conv = hw.device.conv_flops > 0 ? hw.device.conv_flops : hw.device.sustained_flops;
    fmt::print(
        ", {:.2f} TFLOP/s convolution{}", conv / 1e12,
        hw.device.conv_flops > 0 ? " (calibrated)" : " (the dense rate: no conv calibration)");
  }
  fmt::print("\n");
  if (s.model.has_conv() && hw.device.conv_step_scale > 0) {
    int convs = 0, timed = 0;
    for (const auto& l : s.model.layers) {
      if (l.kind != detail::CostKind::conv) continue;
      ++convs;
      timed += detail::conv_shape_of(hw.device.conv_shapes, l) != nullptr;
    }
    fmt::print("  convolutions: {} of the model's {} timed on this device by tandem calibrate{}\n",
               timed, convs,
               timed < convs ? "; the others at the convolution rate (calibrate --conv-model FILE "
                               "times a model's own)"
                             : "");
    model_shapes_timed = {{"conv_layers", convs}, {"timed", timed}};
  }
  // A profile written with calibrate --allow-disturbed: what of it was timed so.
  for (const std::string& w : detail::disturbed_windows(hw)) {
    fmt::print("  warning: calibrated with the devices' cores apart or taken: {}\n", w);
  }
  if (hw.device.threads > 0) {
    fmt::print(
        "  a device is what `tandem train --devices 1 --threads-per-device {}` runs: {} thread{}\n",
        hw.device.threads, hw.device.threads, hw.device.threads == 1 ? "" : "s");
  }
  // A profile with rate curves measured on dense models (tandem calibrate) but none on this
  // one predicts it from the profile's general rate, without its steps at each row count or
  // its weight-gradient GEMMs: say so, and how to measure it.
  std::optional<bool> own_rate;
  if (!s.model.has_conv() && !hw.device.dense_rates.empty()) {
    own_rate = detail::own_dense_rate(hw, s.model) != nullptr;
    if (*own_rate) {
      fmt::print("  dense rate: measured on this model by tandem calibrate\n");
    } else {
      fmt::print(
          "  dense rate: not measured on this model; predicted from the profile's general rate "
          "({})\n",
          how_to_measure(s.model.widths));
    }
  }
  nlohmann::json model_json = {{"parameters", s.model.params()}};
  if (own_rate) model_json["own_dense_rate"] = *own_rate;
  if (!model_shapes_timed.is_null()) model_json["conv_shapes"] = model_shapes_timed;
  if (model_name.empty()) {
    model_json["widths"] = widths;
  } else {
    model_json["name"] = model_name;
  }
  nlohmann::json out = {{"hardware", hw.name},
                        {"model", model_json},
                        {s.per_device_batch ? "per_device_batch" : "batch_size", s.batch},
                        {"epochs", s.epochs},
                        {"samples", s.samples},
                        {"predictions", nlohmann::json::array()},
                        {"advice", nlohmann::json::object()}};
  std::vector<std::string> strategies = o.strategy == "both"
                                            ? std::vector<std::string>{"host", "mirrored"}
                                            : std::vector<std::string>{o.strategy};
  for (int n : devices) {
    if (n > hw.max_devices) {
      fmt::print(
          "note: {} has {} devices; {} devices are extrapolated (the same devices and "
          "links, more of them)\n",
          hw.name, hw.max_devices, n);
      out["extrapolated_devices"].push_back(n);
    }
  }
  for (const auto& strategy : strategies) {
    s.strategy = detail::parse_strategy(strategy);
    const auto predictions = detail::predict_all(hw, s, devices);
    print_table(hw, s, predictions);
    const auto advice = detail::advise(hw, s, predictions);
    for (const auto& line : advice) fmt::print("  - {}\n", line);
    for (const auto& p : predictions) out["predictions"].push_back(prediction_json(p));
    detail::Series series{strategy + " (predicted)", detail::chart_color(chart.series.size()), {}};
    for (const auto& p : predictions) series.points.emplace_back(p.devices, p.speedup);
    chart.series.push_back(series);
    out["advice"][strategy] = advice;
  }
  if (!o.json_path.empty()) write_text_atomically(o.json_path, out.dump(2) + "\n");
  if (!o.svg_path.empty()) {
    const int most = *std::max_element(devices.begin(), devices.end());
    chart.series.push_back({"ideal", "#999999", {{1, 1}, {most, most}}, true});
    if (!measured.points.empty()) chart.series.push_back(measured);
    write_text_atomically(o.svg_path, detail::svg_line_chart(chart));
  }
  return 0;
}

}  // namespace tandem::cli
