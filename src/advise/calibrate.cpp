#include "advise/calibrate.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "advise/calibrate_conv.h"
#include "advise/calibrate_dense.h"
#include "advise/calibrate_devices.h"
#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/link_sweep.h"
#include "advise/probes.h"
#include "advise/rank_algorithms.h"
#include "advise/step_run.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/zoo.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

// The rank_rank link from the sweep, and the sweep itself with the ranks it ran on (the cost
// model takes a step's last bucket and bf16's cost against float32 from it). Each point also
// carries what the bf16 model of a link without a sweep (halved bytes on the float32 line and
// the one-thread probes of the bf16 loops) predicts, checked against the measured bf16 time.
void add_rank_link(const LinkSweep& link, const DeviceProfile& device, json& profile, json& sources,
                   json& measurements, std::ostream& log) {
  if (!(link.bandwidth > 0)) {
    throw Error(
        "calibrate: the all-reduce between ranks did not grow with its size: the "
        "measurements are too noisy (run it again on a quieter machine)");
  }
  profile["rank_rank"] = {{"bandwidth", link.bandwidth}, {"latency", link.latency}};
  const LinkProfile fitted{link.bandwidth, link.latency, 1};
  json points = json::array();
  for (const SweepPoint& p : link.points) {
    const double bf16_model = rank_allreduce_seconds(fitted, device, static_cast<double>(p.floats),
                                                     link.ranks, /*bf16=*/true);
    points.push_back({{"floats", p.floats},
                      {"seconds", p.seconds},
                      {"bf16_seconds", p.bf16_seconds},
                      {"bf16_predicted_seconds", bf16_model},
                      {"deterministic_seconds", p.deterministic_seconds},
                      {"deterministic_cold_seconds", p.deterministic_cold_seconds}});
  }
  const SweepPoint& top = link.points.back();
  const double top_model = points.back().at("bf16_predicted_seconds").get<double>();
  measurements["allreduce_sweep"] = points;
  measurements["allreduce_sweep_ranks"] = link.ranks;
  sources["rank_rank"] = fmt::format(
      "Measured: float32 all-reduces of 2^10 to 2^24 floats between {} MPI ranks through the "
      "gradient communicator, best of 5 each; the ring's 2(R-1) latency + 2(R-1)/R bytes / "
      "bandwidth with the latency from the smallest and the bandwidth from the two largest: "
      "{:.2f} GB/s, {:.1f} us; the sweep's own times (measurements.allreduce_sweep: float32, "
      "bf16 and deterministic, and deterministic with the caches emptied before each, best "
      "of 3) cost a step's last bucket, which runs alone, bf16 against float32, and "
      "deterministic mode's buckets, which follow backward (cold for a model larger than "
      "the core's cache)",
      link.ranks, link.bandwidth / 1e9, link.latency * 1e6);
  log << fmt::format(
      "{} ranks: all-reduce link {:.2f} GB/s, latency {:.1f} us; {:.1f} MB all-reduce "
      "{:.2f} ms in float32, {:.2f} ms in bf16 (the model predicts {:.2f} ms: {:+.0f}%), "
      "{:.2f} ms deterministic ({:.2f} ms with the caches emptied first)\n",
      link.ranks, link.bandwidth / 1e9, link.latency * 1e6, 4e-6 * static_cast<double>(top.floats),
      top.seconds * 1e3, top.bf16_seconds * 1e3, top_model * 1e3,
      100 * (top_model / top.bf16_seconds - 1), top.deterministic_seconds * 1e3,
      top.deterministic_cold_seconds * 1e3);
}

}  // namespace

void check_plan(const CalibrationPlan& p) {
  if (p.widths.size() < 2) throw ConfigError("calibrate: --layers needs at least one layer");
  if (p.threads_per_device < 1) throw ConfigError("calibrate: --threads-per-device must be >= 1");
  if (p.max_devices < 1) throw ConfigError("calibrate: --max-devices must be >= 1");
  std::vector<int64_t> rows = p.rows;
  std::sort(rows.begin(), rows.end());
  if (std::unique(rows.begin(), rows.end()) - rows.begin() < 2 || rows.front() < 1) {
    throw ConfigError(
        "calibrate: --rows needs at least two different row counts >= 1 (a line is fitted "
        "through them)");
  }
  if (p.steps < 1 || p.repeats < 1) throw ConfigError("calibrate: --steps and --repeats >= 1");
  if (!p.conv_model.empty() && p.conv_batch < 1) {
    throw ConfigError("calibrate: --conv-batch must be >= 1");
  }
  if (p.conv_model.empty()) return;
  std::error_code error;
  if (!zoo::is_name(p.conv_model) && !std::filesystem::exists(p.conv_model, error)) {
    std::string known;
    for (const std::string& name : zoo::names()) {
      if (name != "seed-mlp") known += (known.empty() ? "" : ", ") + name;  // no convolution
    }
    throw ConfigError("calibrate: --conv-model '" + p.conv_model +
                      "' is not a built-in convnet (known: " + known + ") nor a model file");
  }
  if (!ModelCost::of(zoo::by_name_or_file(p.conv_model)).has_conv()) {
    throw ConfigError("calibrate: --conv-model '" + p.conv_model +
                      "' has no Conv2D layer (a convnet sets the convolution rate)");
  }
}

json calibrate_machine(const CalibrationPlan& plan, std::ostream& log, World* world) {
  check_plan(plan);
  // 0. The link between ranks, first, while every rank is busy with it: afterwards the other
  // ranks leave and rank 0 measures one device alone.
  const bool ranks = world != nullptr && world->size() > 1;
  LinkSweep link;
  if (ranks) {
    link = sweep_allreduce(*world, 24, 5, 3);
    if (world->rank() != 0) return json();
  }
  const std::string cpu = cpu_name();
  const int threads = plan.threads_per_device;
  const std::string device_words =
      fmt::format("1 device of {} thread{} ({})", threads, threads == 1 ? "" : "s", cpu);
  const std::string repeat_words =
      fmt::format("median of {} repetitions of {} steps, interleaved", plan.repeats, plan.steps);

  // 1. 1-device steps of the dense model at each row count.
  StrategyOptions one_device;
  one_device.devices = 1;  // never more: the profile is of one device
  one_device.threads_per_device = threads;
  uint64_t seed = 100;
  const DenseCurve main = measure_dense(plan.widths, plan, one_device, seed, log);
  const ModelCost& cost = main.cost;
  const DenseRate& rate = main.rate;
  const double slope = rate.slope, intercept = rate.intercept;
  const std::vector<double>& steps = main.steps;
  const json& dense_steps = main.steps_json;
  const double sustained = rate.sustained_flops, half_rows = rate.half_rows;
  const double update = median_of(main.updates);
  const double params = static_cast<double>(cost.params());
  const double memory_bandwidth = kMeasuredUpdatePasses * 4.0 * params / update;
  const std::string widths = fmt::format("{}", fmt::join(plan.widths, "-"));

  // 2. One core's copy and sum, and a hand-off between two threads.
  const int64_t probe_bytes = std::max<int64_t>(static_cast<int64_t>(4 * params), 64 << 20);
  const double copy = copy_bandwidth(probe_bytes, 7);
  const double sum = sum_bandwidth(probe_bytes, 7);
  const double cold_copy = copy_bandwidth(probe_bytes, 5, Caches::evicted);
  const double cold_sum = sum_bandwidth(probe_bytes, 5, Caches::evicted);
  const double latency = handoff_latency(5);
  log << fmt::format(
      "update {:.1f} GB/s; one core: copy {:.1f} GB/s, sum {:.1f} GB/s (caches emptied first: "
      "{:.1f} and {:.1f} GB/s); hand-off {:.2f} us\n",
      memory_bandwidth / 1e9, copy / 1e9, sum / 1e9, cold_copy / 1e9, cold_sum / 1e9,
      latency * 1e6);
  // 3. What several devices share or pay per step, without training on them (calibrate_devices.h).
  const DeviceProbes probes = probe_devices(plan.max_devices, threads, probe_bytes, log);

  json profile = {
      {"name", plan.name},
      {"description",
       fmt::format("Calibrated by tandem calibrate on {} ({} cores): CPU devices of {} thread{} "
                   "in one process",
                   cpu, available_cores(), threads, threads == 1 ? "" : "s")},
      {"max_devices", plan.max_devices},
      {"device",
       {{"name", fmt::format("{} thread{} of {}", threads, threads == 1 ? "" : "s", cpu)},
        {"threads", threads},
        {"sustained_flops", sustained},
        {"half_rows", half_rows},
        // The model measured follows its own steps piecewise in rows (the line above serves
        // other models).
        {"dense_rates", json::array({dense_rate_entry(plan.widths, sustained, half_rows, main)})},
        {"memory_bandwidth", memory_bandwidth},
        {"cold_copy_bandwidth", cold_copy},
        {"cold_sum_bandwidth", cold_sum},
        {"comm_uses_compute", true}}},
      {"host", {{"memory_bandwidth", sum}, {"update_bandwidth", memory_bandwidth}}},
      {"host_device", {{"bandwidth", copy}, {"latency", latency}, {"devices_per_link", 1}}},
      {"device_device", {{"bandwidth", sum}, {"latency", latency}}}};
  if (private_cache_bytes() > 0) profile["device"]["private_cache_bytes"] = private_cache_bytes();
  json sources = {
      {"device.dense_rates " + widths,
       "Measured: the steps behind device.sustained_flops at each row count (points: their "
       "compute seconds, less the update and the batch's gathering, and the update's seconds), "
       "followed piecewise in rows"},
      {"device.sustained_flops, device.half_rows",
       fmt::format(
           "Measured: {} training Dense {} (RMSprop) at {} rows, {}: steps of {} less "
           "their update and gathering; the least-squares line through compute(rows) = {:.4g} "
           "FLOP/sample x (rows + half_rows) / sustained_flops gives slope {:.4g} "
           "ms/row, intercept {:.4g} ms",
           device_words, widths, fmt::join(plan.rows, ", "), repeat_words,
           format_list(steps, 1e3, " ms"), cost.step_flops(1), slope * 1e3, intercept * 1e3)},
      {"device.memory_bandwidth",
       fmt::format("Measured: the RMSprop update of {:.0f} parameters ({} floats each) in those "
                   "steps' optimizer phase, median {:.3f} ms",
                   params, kMeasuredUpdatePasses, update * 1e3)},
      {"host.update_bandwidth", "As device.memory_bandwidth (the update on one device's threads)."},
      {"host.memory_bandwidth",
       fmt::format("Measured: b += a over {:.1f} MB on one thread, best of 7: {:.2f} GB/s of "
                   "bytes read and written (the host strategy sums on one thread)",
                   probe_bytes / 1e6, sum / 1e9)},
      {"host_device",
       fmt::format("Measured: memcpy of {:.1f} MB on one thread, best of 7, {:.2f} GB/s (each CPU "
                   "device copies its own weights on its own cores); latency: the hand-off below",
                   probe_bytes / 1e6, copy / 1e9)},
      {"device.cold_copy_bandwidth, device.cold_sum_bandwidth",
       fmt::format("Measured: the memcpy ({:.2f} GB/s) and the sum b += a ({:.2f} GB/s of bytes "
                   "read and written) above, with the caches emptied before each pass (a "
                   "{:.0f} MB buffer written first), best of 5: deterministic mode's copies "
                   "and sums of the micro-shards' gradients, which follow a whole backward, "
                   "for a model larger than device.private_cache_bytes ({} bytes: the "
                   "system's L2 size; 0 where it reports none)",
                   cold_copy / 1e9, cold_sum / 1e9,
                   4e-6 * static_cast<double>(CacheEvictor::floats()), private_cache_bytes())},
      {"device_device",
       fmt::format("Measured on one thread, not between devices: the sum b += a ({:.2f} GB/s), "
                   "which the in-process reducers run over the replicas' buffers; latency: one "
                   "thread hands a flag to another and back, median one-way {:.3f} us",
                   sum / 1e9, latency * 1e6)},
      {"max_devices", fmt::format("The {} cores of this process, {} per device (or --max-devices)",
                                  available_cores(), threads)}};
  if (!main.weight_grad_gemms.empty()) {
    sources["device.dense_rates " + widths + " weight_grad_gemms"] = weight_grad_gemms_source(plan);
  }
  json measurements = {
      {"dense_model", widths},
      {"dense_steps", dense_steps},
      {"fit", {{"slope_seconds_per_row", slope}, {"intercept_seconds", intercept}}},
      {"probe_bytes", probe_bytes}};

  add_device_probes(probes, profile, sources);
  if (ranks) add_rank_link(link, probes.bf16, profile, sources, measurements, log);
  // 4. The convolution rate: every built-in convnet's convolution shapes, their primitives
  // timed alone on one device; then 1-device steps of one convnet with every kernel timed,
  // which set the convolutions' speed inside a step against alone (conv_step_scale), the
  // rate of shapes not measured (conv_flops) and the pooling kernels' speed (pool_scale).
  if (!plan.conv_model.empty()) {
    calibrate_conv_rate(plan, one_device, seed, device_words, repeat_words, profile, sources,
                        measurements, log);
  }
  // 5. More dense models: each one's own rate curve, for predictions of that model.
  for (const auto& widths : plan.other_widths) {
    const DenseCurve c = measure_dense(widths, plan, one_device, seed, log);
    const std::string name = fmt::format("{}", fmt::join(widths, "-"));
    profile["device"]["dense_rates"].push_back(
        dense_rate_entry(widths, c.rate.sustained_flops, c.rate.half_rows, c));
    if (!c.weight_grad_gemms.empty()) {
      sources["device.dense_rates " + name + " weight_grad_gemms"] = weight_grad_gemms_source(plan);
    }
    sources["device.dense_rates " + name] = fmt::format(
        "Measured as device.sustained_flops, on Dense {}: steps of {} at {} rows; slope {:.4g} "
        "ms/row, intercept {:.4g} ms; those steps (points: less their update and gathering, "
        "and the update's seconds) are followed piecewise in rows",
        name, format_list(c.steps, 1e3, " ms"), fmt::join(plan.rows, ", "), c.rate.slope * 1e3,
        c.rate.intercept * 1e3);
    measurements["dense_rates_steps"][name] = c.steps_json;
    log << fmt::format("dense {}: {:.1f} GFLOP/s sustained, half_rows {:.1f}\n", name,
                       c.rate.sustained_flops / 1e9, c.rate.half_rows);
  }
  profile["sources"] = sources;
  profile["measurements"] = measurements;
  // What the fit leaves: the calibration points predicted back (a residual, not a
  // validation: these are the runs it was fitted to).
  const HardwareProfile hw = parse_hardware_profile(profile, plan.name);
  json residual = json::array();
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    Scenario s;
    s.model = cost;
    s.batch = plan.rows[i];
    const double predicted = predict(hw, s).step_seconds;
    residual.push_back({{"rows", plan.rows[i]},
                        {"measured_seconds", steps[i]},
                        {"fitted_seconds", predicted},
                        {"relative", predicted / steps[i] - 1}});
  }
  profile["measurements"]["fit_residual"] = residual;
  return profile;
}

void check_windows(const json& profile, bool allow, const std::string& out, std::ostream& log) {
  const std::vector<std::string> disturbed =
      disturbed_windows(parse_hardware_profile(profile, "the profile calibrated"));
  if (disturbed.empty()) return;
  const std::string what = fmt::format(
      "{} probe{} of devices at once kept timings taken with the devices' cores apart (a hand-off "
      "over {}x the fastest) or with over {:.0f}% of the CPUs' time taken by the hypervisor, "
      "after timing such rounds again: {}",
      disturbed.size(), disturbed.size() == 1 ? "" : "s", apart_handoff(), kQuietSteal * 100,
      fmt::join(disturbed, "; "));
  if (!allow) {
    throw Error("calibrate: " + what +
                ". On a virtual machine the host moves the vCPUs: run calibrate again when "
                "the machine is quieter, or pass --allow-disturbed to write the profile as "
                "timed (it records where each probe ran); " +
                out + " was not written");
  }
  log << "calibrate: warning: " << what << " (--allow-disturbed: the profile is written)\n";
}

}  // namespace tandem::detail
