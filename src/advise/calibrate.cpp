#include "advise/calibrate.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <tuple>

#include "advise/algorithms.h"
#include "advise/cost_model.h"
#include "advise/hardware_profile.h"
#include "advise/link_sweep.h"
#include "advise/probes.h"
#include "advise/step_run.h"
#include "backend/timed_backend.h"
#include "parallel/strategy.h"
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

std::string list(const std::vector<double>& v, double scale, const char* unit) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ", ") + fmt::format("{:.2f}{}", x * scale, unit);
  return out;
}

// One dense model's 1-device steps at each of the plan's row counts (interleaved, medians),
// less their measured update and batch gathering, and the rate line through them.
struct DenseCurve {
  ModelCost cost;
  DenseRate rate;
  std::vector<double> steps, updates;
  json steps_json = json::array();
  // The compute and update seconds at each row count, ascending in rows (one row count
  // measured twice: their mean): the curve the cost model follows (dense_rates[].points).
  std::vector<DenseRowsSeconds> points;
  // Its weight-gradient GEMMs at the same rows, whole and as one device computes its shards,
  // for each device count (shard_device_counts; empty for one device).
  std::vector<WeightGradShards> weight_grad_gemms;
};

std::vector<DenseRowsSeconds> rows_points(const std::vector<double>& rows,
                                          const std::vector<double>& compute,
                                          const std::vector<double>& updates) {
  struct Sums {
    double compute = 0, update = 0;
    int count = 0;
  };
  std::map<int64_t, Sums> by_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    Sums& sums = by_rows[static_cast<int64_t>(rows[i])];
    sums.compute += compute[i];
    sums.update += updates[i];
    ++sums.count;
  }
  std::vector<DenseRowsSeconds> points;
  for (const auto& [r, sums] : by_rows) {
    points.push_back({r, sums.compute / sums.count, sums.update / sums.count});
  }
  return points;
}

// As dense_rates[].points (and ranks_points) hold them.
json points_json(const std::vector<DenseRowsSeconds>& points) {
  json out = json::array();
  for (const DenseRowsSeconds& p : points) {
    json point = {{"rows", p.rows}, {"compute_seconds", p.compute_seconds}};
    if (p.update_seconds > 0) point["update_seconds"] = p.update_seconds;
    out.push_back(point);
  }
  return out;
}

// As dense_rates[].weight_grad_gemms holds them.
json weight_grad_gemms_json(const std::vector<WeightGradShards>& timed) {
  json out = json::array();
  for (const WeightGradShards& w : timed) {
    json points = json::array();
    for (const WeightGradGemmSeconds& p : w.points) {
      json point = {{"rows", p.rows},
                    {"whole", p.whole},
                    {"shard", p.shard},
                    {"whole_cold", p.whole_cold},
                    {"shard_cold", p.shard_cold}};
      if (p.timed_as_step()) {
        point["whole_step"] = p.whole_step;
        point["shard_step"] = p.shard_step;
        point["input_step"] = p.input_step;
      }
      points.push_back(point);
    }
    out.push_back({{"devices", w.devices}, {"points", points}});
    for (const StepsAtOnceSeconds& a : w.at_once) {
      out.back()["steps_at_once"].push_back({{"rows", a.rows},
                                             {"forward_alone", a.forward_alone},
                                             {"backward_alone", a.backward_alone},
                                             {"forward_shared", a.forward_shared},
                                             {"backward_shared", a.backward_shared}});
      if (a.has_medians()) {
        out.back()["steps_at_once"].back()["median"] = {
            {"forward_alone", a.median_forward_alone},
            {"backward_alone", a.median_backward_alone},
            {"forward_shared", a.median_forward_shared},
            {"backward_shared", a.median_backward_shared}};
      }
    }
  }
  return out;
}

// The rate line through 1-device runs of one dense model at several row counts; an error
// names the command and its option for the row counts.
DenseCurve fit_dense_curve(const std::vector<int64_t>& widths,
                           const std::vector<std::unique_ptr<StepRun>>& runs, std::ostream* log,
                           const char* command, const char* rows_option) {
  DenseCurve c{ModelCost::of(runs.front()->model()), {}, {}, {}};
  std::vector<double> rows, compute;
  const std::string name = fmt::format("{}", fmt::join(widths, "-"));
  for (const auto& run : runs) {
    // The rows gathered into the batch are the cost model's input phase, costed apart. Each
    // repetition's step less its own update and gathering, and the median of those: a hiccup
    // in one repetition's update (0.34 ms against 0.08 in the others, once, on the Zen 4 of
    // 2026-12-04) stays out, where the mean over all of them took it into every repetition.
    const std::vector<double> updates = run->phase_per_step_each(Phase::optimizer),
                              gathers = run->phase_per_step_each(Phase::data);
    std::vector<double> computes;
    for (size_t i = 0; i < run->seconds().size(); ++i) {
      computes.push_back(run->seconds()[i] - updates.at(i) - gathers.at(i));
    }
    const double step = run->median_seconds(), update = median_of(updates),
                 data = median_of(gathers), computed = median_of(computes);
    if (!(computed > 0)) {
      throw Error(fmt::format(
          "{}: the 1-device step of {} at {} rows less its update and the batch's gathering "
          "is not positive ({:.3f} ms less {:.3f} and {:.3f} ms in most repetitions): the "
          "machine was disturbed while it measured; run again, or with more --steps",
          command, name, run->rows(), step * 1e3, update * 1e3, data * 1e3));
    }
    rows.push_back(static_cast<double>(run->rows()));
    c.steps.push_back(step);
    c.updates.push_back(update);
    compute.push_back(computed);
    c.steps_json.push_back({{"rows", run->rows()},
                            {"step_seconds", step},
                            {"optimizer_seconds", update},
                            {"data_seconds", data},
                            {"per_repetition", run->seconds()},
                            {"optimizer_per_repetition", updates},
                            {"data_per_repetition", gathers},
                            {"compute_seconds", computed}});
    if (log) {
      *log << fmt::format("dense {} step, {} rows: {:.3f} ms (update {:.3f} ms)\n", name,
                          run->rows(), step * 1e3, update * 1e3);
    }
  }
  c.rate = dense_rate_from_steps(c.cost.step_flops(1), rows, compute);
  c.points = rows_points(rows, compute, c.updates);
  if (!(c.rate.slope > 0)) {
    std::string at;
    for (const auto& run : runs) at += (at.empty() ? "" : ", ") + std::to_string(run->rows());
    throw Error(fmt::format(
        "{}: the 1-device step of {} did not grow with the rows ({} at {} rows): the "
        "measurements are too noisy or the model too small; use row counts further apart "
        "({}), more --steps, or a larger model",
        command, name, list(compute, 1e3, " ms"), at, rows_option));
  }
  return c;
}

DenseCurve measure_dense(const std::vector<int64_t>& widths, const CalibrationPlan& plan,
                         const StrategyOptions& one_device, uint64_t& seed, std::ostream& log) {
  std::vector<std::unique_ptr<StepRun>> runs;
  for (int64_t r : plan.rows) {
    runs.push_back(std::make_unique<StepRun>(dense_stack(widths), r, one_device));
  }
  for (int rep = 0; rep < plan.repeats; ++rep) {
    for (auto& run : runs) {
      run->settle(seed);
      run->time(plan.steps, seed);
    }
  }
  DenseCurve c = fit_dense_curve(widths, runs, &log, "calibrate", "--rows");
  runs.clear();  // their models and batches freed before the GEMMs' buffers are made
  c.weight_grad_gemms =
      weight_grad_gemm_seconds(widths, plan.rows, shard_device_counts(plan.max_devices),
                               plan.threads_per_device, plan.repeats);
  for (const WeightGradShards& w : c.weight_grad_gemms) {
    log << fmt::format("dense {}: {}\n", fmt::join(widths, "-"), weight_grad_shares(w));
  }
  return c;
}

// The dense_rates entry of a measured curve, and the source of its weight-gradient GEMMs.
json dense_rate_entry(const std::vector<int64_t>& widths, double sustained, double half_rows,
                      const DenseCurve& c) {
  json entry = {{"widths", widths},
                {"sustained_flops", sustained},
                {"half_rows", half_rows},
                {"points", points_json(c.points)}};
  if (!c.weight_grad_gemms.empty()) {
    entry["weight_grad_gemms"] = weight_grad_gemms_json(c.weight_grad_gemms);
  }
  return entry;
}

std::string weight_grad_gemms_source(const CalibrationPlan& plan) {
  return fmt::format(
      "Measured: the model's weight-gradient GEMMs on one device of {} thread(s) at {} rows, "
      "best of {}: every kernel's whole gradient, and device 0's shards of N devices for N = "
      "{} (1/N of each kernel's input rows, one GEMM per replica's rows, the first writing, the "
      "others accumulating), each right after the same pass, with the caches emptied first and "
      "as a step runs them (after the update and forward's read of every parameter, the input "
      "gradients interleaved, a shard's update after its GEMMs); and the model's forward and "
      "backward GEMMs as device 0 alone runs a step and as the N devices at once run the sharded "
      "reducer's over one shared parameter buffer, each after an untimed step of its kind (the "
      "best of the rounds, and their median)",
      plan.threads_per_device, fmt::join(plan.rows, ", "), plan.repeats,
      fmt::join(shard_device_counts(plan.max_devices), ", "));
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

std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  return {slope, my - slope * mx};
}

DenseRate dense_rate_from_steps(double flops_per_sample, const std::vector<double>& rows,
                                const std::vector<double>& compute_seconds) {
  DenseRate d;
  std::tie(d.slope, d.intercept) = fit_line(rows, compute_seconds);
  if (!(d.slope > 0)) return d;
  d.sustained_flops = flops_per_sample / d.slope;
  d.half_rows = std::max(0.0, d.intercept / d.slope);
  return d;
}

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
  // 3. What several devices share or pay per step, without training on them: memory
  // streamed by every device's core at once, the device threads' wake, join and barrier,
  // and bf16 packing.
  const int devices = plan.max_devices;
  const double share = devices > 1 ? concurrent_memory_share(devices, probe_bytes, 5) : 1.0;
  const double compute_share = devices > 1 ? concurrent_compute_share(devices, 3) : 1.0;
  const DeviceSync sync = devices > 1 ? device_sync(devices, 5) : DeviceSync{};
  // The bf16 loops on the bucket sizes the communication thread meets, in cache and not.
  DeviceProfile bf16;
  json bf16_json = json::array();
  std::string bf16_words;
  for (int64_t floats = int64_t{1} << 16; floats <= int64_t{1} << 24; floats *= 4) {
    const Bf16LoopSeconds l = bf16_loop_seconds(floats, 5);
    bf16.bf16_loops.push_back(l);
    bf16_json.push_back(
        {{"floats", l.floats}, {"pack", l.pack}, {"unpack", l.unpack}, {"sum", l.sum}});
    bf16_words +=
        fmt::format("{}{} MB {:.2f}/{:.2f}/{:.2f}", bf16_words.empty() ? "" : "; ",
                    4e-6 * static_cast<double>(floats), l.pack * 1e9, l.unpack * 1e9, l.sum * 1e9);
  }
  // The update on every device at once, at model sizes from inside a core's cache (256 KiB)
  // to beyond the last level (64 MiB).
  std::vector<UpdateContention> contention;
  json contention_json = json::array();
  std::string contention_words;
  if (devices > 1) {
    std::vector<int64_t> sizes;
    for (int64_t b = int64_t{256} << 10; b <= int64_t{64} << 20; b *= 4) sizes.push_back(b);
    contention = update_contention(sizes, devices, threads, 7);
    for (const UpdateContention& u : contention) {
      contention_json.push_back({{"bytes", u.bytes}, {"own", u.own}, {"shard", u.shard}});
      contention_words +=
          fmt::format("{}{} KiB {:.2f}/{:.2f}", contention_words.empty() ? "" : "; ", u.bytes >> 10,
                      u.own, u.shard);
    }
  }
  const int64_t shared_cache = shared_cache_bytes();
  // Deterministic mode's copies and tree on every device at once, each device with its share
  // of the default 4 micro-shards, at gradient sizes from inside a core's cache (256 KiB) to
  // the largest whose buffers fit the shared cache (exchange_sizes).
  std::vector<ExchangeSeconds> exchange;
  json exchange_json = json::array();
  std::string exchange_words;
  const int exchange_shards = std::max(StrategyOptions{}.deterministic_shards / devices, 1);
  if (devices > 1) {
    const std::vector<int64_t> sizes = exchange_sizes(shared_cache, devices, exchange_shards);
    exchange = deterministic_exchange(sizes, devices, exchange_shards, 15);
    for (const ExchangeSeconds& e : exchange) {
      exchange_json.push_back({{"bytes", e.bytes}, {"copy", e.copy}, {"tree", e.tree}});
      exchange_words += fmt::format("{}{} KiB {:.1f}/{:.1f}", exchange_words.empty() ? "" : "; ",
                                    e.bytes >> 10, e.copy * 1e6, e.tree * 1e6);
    }
  }
  log << fmt::format(
      "{} cores streaming at once: {:.2f} of one's bandwidth each; computing at once: {:.2f} of "
      "one's GEMM speed each; {} device threads: wake and join {:.1f} us, barrier {:.1f} us\n"
      "bf16 pack/unpack/sum, ns per float: {}\n",
      devices, share, compute_share, devices, sync.fork_join * 1e6, sync.barrier * 1e6, bf16_words);
  if (!contention.empty()) {
    log << fmt::format(
        "{} devices updating at once, over alone (own copies/shards of one buffer): {}\n", devices,
        contention_words);
  }

  if (!exchange.empty()) {
    log << fmt::format("{} devices' deterministic exchange, us per copy/tree of {} copies: {}\n",
                       devices, exchange_shards, exchange_words);
  }

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
        {"concurrent_memory_share", share},
        {"concurrent_compute_share", compute_share},
        {"fork_join", sync.fork_join},
        {"barrier", sync.barrier},
        {"bf16_loops", bf16_json},
        {"comm_uses_compute", true}}},
      {"host", {{"memory_bandwidth", sum}, {"update_bandwidth", memory_bandwidth}}},
      {"host_device", {{"bandwidth", copy}, {"latency", latency}, {"devices_per_link", 1}}},
      {"device_device", {{"bandwidth", sum}, {"latency", latency}}}};
  if (private_cache_bytes() > 0) profile["device"]["private_cache_bytes"] = private_cache_bytes();
  if (shared_cache > 0) profile["device"]["shared_cache_bytes"] = shared_cache;
  if (!contention.empty()) {
    profile["device"]["update_contention"] = contention_json;
    profile["device"]["update_contention_devices"] = devices;
  }
  if (!exchange.empty()) {
    profile["device"]["deterministic_exchange"] = exchange_json;
    profile["device"]["deterministic_exchange_devices"] = devices;
    profile["device"]["deterministic_exchange_shards"] = exchange_shards;
  }
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
           device_words, widths, fmt::join(plan.rows, ", "), repeat_words, list(steps, 1e3, " ms"),
           cost.step_flops(1), slope * 1e3, intercept * 1e3)},
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
      {"device.concurrent_memory_share",
       fmt::format(
           "Measured: b += a over {:.1f} MB on each of {} threads at once (the slowest thread), "
           "against one alone; best of 5 rounds of 3 passes each",
           probe_bytes / 1e6, devices)},
      {"device.concurrent_compute_share",
       fmt::format("Measured: a one-thread oneDNN GEMM (256 x 4096 x 2048) on each of {} threads "
                   "at once (the slowest), against one alone; best of 3 rounds of 2",
                   devices)},
      {"device.fork_join, device.barrier",
       fmt::format("Measured: tandem's DeviceGroup of {} one-thread devices running tasks of "
                   "0.4 ms, longer than its threads spin (wake and join beyond the tasks, {:.1f} "
                   "us), and tasks of 20 barrier waits ({:.1f} us per barrier beyond an empty "
                   "task), medians of 5 rounds",
                   devices, sync.fork_join * 1e6, sync.barrier * 1e6)},
      {"device.bf16_loops",
       fmt::format("Measured: the bfloat16 loops of MPI gradient compression (parallel/bf16.h: "
                   "pack, unpack, sum) on one thread over 2^16 to 2^24 floats, best of 5 "
                   "each; ns per float by float32 buffer size: {}",
                   bf16_words)},
      {"max_devices", fmt::format("The {} cores of this process, {} per device (or --max-devices)",
                                  available_cores(), threads)}};
  if (!contention.empty()) {
    sources["device.update_contention"] = fmt::format(
        "Measured: RMSprop's update kernel on a DeviceGroup of {} devices of {} thread{}, each "
        "first writing its gradients and reading the parameters it updates; device 0 alone "
        "updating a whole buffer, every device at once updating its own whole copy (own, over "
        "alone) and its 1/{} of one shared buffer all read (shard, over alone / {}); the devices' "
        "mean timed, medians of 7 rounds, interleaved. Own/shard by parameter bytes: {}",
        devices, threads, threads == 1 ? "" : "s", devices, devices, contention_words);
  }
  if (!exchange.empty()) {
    sources["device.deterministic_exchange"] = fmt::format(
        "Measured: deterministic mode's exchange (mirrored.cpp, deterministic_gradients) on a "
        "DeviceGroup of {} devices at once, each reading its parameters and writing its "
        "gradients before copying them aside, {} times, then summing the copies in tree_sum; "
        "the devices' mean, medians of 15 rounds. Microseconds per copy/tree by gradient bytes: {}",
        devices, exchange_shards, exchange_words);
  }
  if (shared_cache > 0) {
    sources["device.shared_cache_bytes"] = fmt::format(
        "The system's level 3 cache, which cpu0's cores share ({} bytes: sysfs, "
        "/sys/devices/system/cpu/cpu0/cache)",
        shared_cache);
  }
  if (!main.weight_grad_gemms.empty()) {
    sources["device.dense_rates " + widths + " weight_grad_gemms"] = weight_grad_gemms_source(plan);
  }
  json measurements = {
      {"dense_model", widths},
      {"dense_steps", dense_steps},
      {"fit", {{"slope_seconds_per_row", slope}, {"intercept_seconds", intercept}}},
      {"probe_bytes", probe_bytes}};

  if (ranks) add_rank_link(link, bf16, profile, sources, measurements, log);
  // 4. The convolution rate: every built-in convnet's convolution shapes, their primitives
  // timed alone on one device; then 1-device steps of one convnet with every kernel timed,
  // which set the convolutions' speed inside a step against alone (conv_step_scale), the
  // rate of shapes not measured (conv_flops) and the pooling kernels' speed (pool_scale).
  if (!plan.conv_model.empty()) {
    std::vector<Window2d> shapes;
    std::vector<std::string> convnets;
    std::vector<std::string> names = zoo::names();
    // A saved model's shapes too: advise --model FILE then predicts them from their own
    // primitives' times, not from the rate of other shapes.
    if (!zoo::is_name(plan.conv_model)) names.push_back(plan.conv_model);
    for (const std::string& name : names) {
      const ModelCost cost = ModelCost::of(zoo::by_name_or_file(name));
      if (!cost.has_conv()) continue;
      convnets.push_back(name);
      for (const LayerCost& l : cost.layers) {
        if (l.kind == CostKind::conv) shapes.push_back(l.window);
      }
    }
    const std::vector<ConvShapeSeconds> measured =
        conv_shape_seconds(shapes, threads, plan.conv_batch, plan.repeats);
    json shapes_json = json::array();
    double primitive_seconds = 0;
    for (const ConvShapeSeconds& m : measured) {
      shapes_json.push_back(conv_shape_to_json(m));
      primitive_seconds += m.forward + m.backward_data + m.backward_weights;
    }
    profile["device"]["conv_shapes"] = shapes_json;
    log << fmt::format(
        "{} convolution shapes of {}: primitives timed alone, batch {}: {:.3f} ms per sample "
        "in all\n",
        measured.size(), fmt::join(convnets, ", "), plan.conv_batch, primitive_seconds * 1e3);
    // M's steps with every kernel timed: the convolutions' share of the step is measured,
    // not the step minus a model of the rest.
    auto kernels = std::make_shared<KernelSeconds>();
    StrategyOptions timed = one_device;
    timed.make_backend = [kernels](int t) {
      return make_timed_backend(make_cpu_backend(t), kernels);
    };
    StepRun conv(zoo::by_name_or_file(plan.conv_model), plan.conv_batch, timed);
    kernels->reset();  // the warm-up step is not counted
    for (int rep = 0; rep < plan.repeats; ++rep) conv.time(plan.steps, seed);
    const double step = conv.median_seconds();
    const double timed_steps = static_cast<double>(plan.repeats) * plan.steps;
    const double conv_seconds = (*kernels)[KernelKind::conv] / timed_steps;
    const ModelCost conv_cost = ModelCost::of(conv.model());
    HardwareProfile hw = parse_hardware_profile(profile, plan.name);
    calibrate_conv_to_conv_seconds(hw, conv_cost, plan.conv_batch, conv_seconds,
                                   "calibrate: --conv-model " + plan.conv_model);
    const double pool_seconds = (*kernels)[KernelKind::pool] / timed_steps;
    calibrate_pool_to_pool_seconds(hw, conv_cost, plan.conv_batch, pool_seconds,
                                   "calibrate: --conv-model " + plan.conv_model);
    const double predicted = one_device_step_seconds(hw, conv_cost, plan.conv_batch);
    profile["device"]["conv_flops"] = hw.device.conv_flops;
    profile["device"]["conv_step_scale"] = hw.device.conv_step_scale;
    const bool pools = kernels->calls[static_cast<size_t>(KernelKind::pool)] > 0;
    if (pools) {
      profile["device"]["pool_scale"] = hw.device.pool_scale;
      sources["device.pool_scale"] = fmt::format(
          "Measured: the same steps' pooling kernels took {:.3f} ms of each, {:.2f}x their "
          "bytes at device.memory_bandwidth",
          pool_seconds * 1e3, hw.device.pool_scale);
    }
    sources["device.conv_shapes"] = fmt::format(
        "Measured: the Conv2D shapes of {} ({} distinct), each one's oneDNN forward, "
        "backward-data and backward-weights primitives alone on {} at batch {}, best of {}",
        fmt::join(convnets, ", "), measured.size(), device_words, plan.conv_batch, plan.repeats);
    sources["device.conv_flops, device.conv_step_scale"] = fmt::format(
        "Measured: {} training {} at batch {}, {}, every kernel timed: its convolutions took "
        "{:.3f} ms of each step, conv_step_scale ({:.3f}) times their primitives' time alone; "
        "conv_flops: those primitives' own rate over that scale, for shapes not measured",
        device_words, plan.conv_model, plan.conv_batch, repeat_words, conv_seconds * 1e3,
        hw.device.conv_step_scale);
    json kernel_json = json::object();
    for (int k = 0; k < static_cast<int>(KernelKind::count); ++k) {
      const auto kind = static_cast<KernelKind>(k);
      kernel_json[kernel_kind_name(kind)] = (*kernels)[kind] / timed_steps;
    }
    measurements["conv_steps"] = {
        {"model", plan.conv_model},      {"batch", plan.conv_batch},
        {"step_seconds", step},          {"per_repetition", conv.seconds()},
        {"kernel_seconds", kernel_json}, {"predicted_step_seconds", predicted}};
    log << fmt::format(
        "{} step, batch {}: {:.3f} ms, of which convolutions {:.3f} ms ({:.2f}x their "
        "primitives alone, {:.1f} GFLOP/s); the profile predicts the step at {:.3f} ms "
        "({:+.0f}%)\n",
        plan.conv_model, plan.conv_batch, step * 1e3, conv_seconds * 1e3, hw.device.conv_step_scale,
        hw.device.conv_flops / 1e9, predicted * 1e3, (predicted / step - 1) * 100);
    if (pools) {
      log << fmt::format("{} pooling: {:.3f} ms per step, {:.2f}x its bytes at {:.1f} GB/s\n",
                         plan.conv_model, pool_seconds * 1e3, hw.device.pool_scale,
                         hw.device.memory_bandwidth / 1e9);
    }
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
        name, list(c.steps, 1e3, " ms"), fmt::join(plan.rows, ", "), c.rate.slope * 1e3,
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

json refit_dense_rate(HardwareProfile& hw, const std::vector<int64_t>& widths,
                      const std::vector<std::unique_ptr<StepRun>>& runs,
                      const std::vector<std::unique_ptr<StepRun>>& together, int ranks,
                      const std::vector<WeightGradShards>& weight_grad_gemms) {
  const DenseCurve c =
      fit_dense_curve(widths, runs, nullptr, "bench validate", "--calibration-rows");
  auto& curves = hw.device.dense_rates;
  DenseRateCurve measured{widths, c.rate.sustained_flops, c.rate.half_rows, c.points};
  // The weight-gradient GEMMs the profile had for the model, those measured now replacing the
  // same device count's.
  for (const DenseRateCurve& k : curves) {
    if (k.widths == widths) measured.weight_grad_gemms = k.weight_grad_gemms;
  }
  for (const WeightGradShards& w : weight_grad_gemms) {
    auto& timed = measured.weight_grad_gemms;
    std::erase_if(timed, [&](const WeightGradShards& t) { return t.devices == w.devices; });
    timed.insert(std::find_if(timed.begin(), timed.end(),
                              [&](const WeightGradShards& t) { return t.devices > w.devices; }),
                 w);
  }
  std::erase_if(curves, [&](const DenseRateCurve& k) { return k.widths == widths; });
  json together_steps;
  if (!together.empty()) {
    const DenseCurve t =
        fit_dense_curve(widths, together, nullptr, "bench validate", "--calibration-rows");
    measured.ranks_points = t.points;
    measured.ranks = ranks;
    together_steps = t.steps_json;
  }
  curves.push_back(measured);
  // The document follows the parsed curves.
  json& document = hw.document["device"]["dense_rates"];
  document = json::array();
  for (const DenseRateCurve& k : curves) {
    json entry = {
        {"widths", k.widths}, {"sustained_flops", k.sustained_flops}, {"half_rows", k.half_rows}};
    if (!k.points.empty()) entry["points"] = points_json(k.points);
    if (!k.ranks_points.empty()) {
      entry["ranks_points"] = points_json(k.ranks_points);
      entry["ranks"] = k.ranks;
    }
    if (!k.weight_grad_gemms.empty()) {
      entry["weight_grad_gemms"] = weight_grad_gemms_json(k.weight_grad_gemms);
    }
    document.push_back(entry);
  }
  json entry = document.back();
  entry["steps"] = c.steps_json;
  if (!together.empty()) entry["steps_ranks_at_once"] = together_steps;
  entry["slope_seconds_per_row"] = c.rate.slope;
  entry["intercept_seconds"] = c.rate.intercept;
  return entry;
}

std::string weight_grad_shares(const WeightGradShards& timed) {
  std::string out;
  const bool step = !timed.points.empty() && timed.points.front().timed_as_step();
  for (const WeightGradGemmSeconds& p : timed.points) {
    out += fmt::format("{}{} rows {:.2f}/{:.2f}", out.empty() ? "" : ", ", p.rows,
                       p.shard / p.whole, p.shard_cold / p.whole_cold);
    if (step) {
      out += fmt::format("/{:.2f} saves {:.2f}", p.shard_step / p.whole_step, p.step_saved_share());
    }
  }
  std::string once;
  for (const StepsAtOnceSeconds& a : timed.at_once) {
    once += fmt::format("{}{} rows {:.2f}", once.empty() ? "" : ", ", a.rows,
                        a.modelled_shared_over_alone());
  }
  return fmt::format(
      "weight-gradient shards of 1 of {} devices over the whole GEMMs (warm/caches emptied{}): "
      "{}{}",
      timed.devices, step ? "/as a step runs them; the share of the backward GEMMs saved" : "", out,
      once.empty() ? ""
                   : "; the sharded reducer's forward and backward with all devices at once over "
                     "one device's alone: " +
                         once);
}

std::vector<int> shard_device_counts(int max_devices) {
  std::vector<int> out;
  for (int n = 2; n < max_devices; n *= 2) out.push_back(n);
  if (max_devices > 1) out.push_back(max_devices);
  return out;
}

}  // namespace tandem::detail
