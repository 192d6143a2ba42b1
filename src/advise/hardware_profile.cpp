#include "advise/hardware_profile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include "advise/cost_model.h"
#include "core/input_file.h"
#include "tandem/error.h"
#include "tandem/zoo.h"

namespace tandem::detail {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

double positive(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_number()) {
    throw ConfigError(where + ": missing number '" + key + "'");
  }
  const double v = j.at(key).get<double>();
  if (!(v > 0)) {
    throw ConfigError(where + ": '" + key + "' must be > 0, got " + j.at(key).dump());
  }
  return v;
}

double non_negative(const json& j, const char* key, const std::string& where, double fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_number() || !(j.at(key).get<double>() >= 0)) {
    throw ConfigError(where + ": '" + key + "' must be a number >= 0, got " + j.at(key).dump());
  }
  return j.at(key).get<double>();
}

const json& object(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_object()) {
    throw ConfigError(where + ": missing object '" + key + "'");
  }
  return j.at(key);
}

// A count: a whole number in [1, 1e6].
int count(const json& j, const char* key, const std::string& where, int fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number() || v.get<double>() < 1 || v.get<double>() > 1e6 ||
      v.get<double>() != static_cast<double>(static_cast<int>(v.get<double>()))) {
    throw ConfigError(where + ": '" + key + "' must be a whole number >= 1, got " + v.dump());
  }
  return static_cast<int>(v.get<double>());
}

std::string text(const json& j, const char* key, const std::string& where,
                 const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_string()) {
    throw ConfigError(where + ": '" + key + "' must be a string, got " + j.at(key).dump());
  }
  return j.at(key).get<std::string>();
}

bool flag(const json& j, const char* key, const std::string& where, bool fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_boolean()) {
    throw ConfigError(where + ": '" + key + "' must be true or false, got " + j.at(key).dump());
  }
  return j.at(key).get<bool>();
}

// A whole number in [1, most], or absent when `required` is false.
void whole(const json& j, const char* key, const std::string& where, double most, bool required) {
  if (!j.contains(key)) {
    if (required) throw ConfigError(where + ": missing whole number '" + key + "'");
    return;
  }
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<double>() < 1 || v.get<double>() > most) {
    throw ConfigError(where + ": '" + key + "' must be a whole number in [1, " +
                      std::to_string(static_cast<int64_t>(most)) + "], got " + v.dump());
  }
}

// The calibration run's numbers, checked before the cost model computes with them (in
// 64-bit integers: widths beyond 1e7 or a thousand layers are not a measured run).
void check_calibration(const json& c, const std::string& where) {
  if (!c.is_object()) throw ConfigError(where + ": calibration must be an object");
  if (!c.contains("widths") || !c.at("widths").is_array() || c.at("widths").size() < 2 ||
      c.at("widths").size() > 1000) {
    throw ConfigError(where + ": calibration widths must be a list of 2 to 1000 layer widths");
  }
  for (const json& w : c.at("widths")) {
    if (!w.is_number_integer() || w.get<double>() < 1 || w.get<double>() > 1e7) {
      throw ConfigError(where + ": calibration widths must be whole numbers in [1, 1e7], got " +
                        w.dump());
    }
  }
  whole(c, "batch", where + ": calibration", 1e9, true);
  whole(c, "samples", where + ": calibration", 1e15, true);
  whole(c, "epochs", where + ": calibration", 1e6, true);
  whole(c, "update_passes", where + ": calibration", 1e3, false);
  if (!c.contains("seconds") || !c.at("seconds").is_number()) {
    throw ConfigError(where + ": calibration needs a number 'seconds'");
  }
}

LinkProfile link(const json& j, const std::string& where) {
  LinkProfile l;
  l.bandwidth = positive(j, "bandwidth", where);
  l.latency = non_negative(j, "latency", where, 0);
  l.devices_per_link = count(j, "devices_per_link", where, 1);
  return l;
}

// An entry of a list measured at ascending sizes: its `key` ('floats', 'rows'), a whole
// number >= 1 above the previous entry's (`previous`; 0 before the first).
int64_t ascending(const json& c, const char* key, int64_t previous, const std::string& where) {
  if (!c.is_object() || !c.contains(key) || !c.at(key).is_number_integer() ||
      c.at(key).get<int64_t>() < 1) {
    throw ConfigError(where + ": each entry needs '" + key + "', a whole number >= 1");
  }
  const int64_t size = c.at(key).get<int64_t>();
  if (previous > 0 && size <= previous) {
    throw ConfigError(where + ": entries must ascend in '" + key + "', got " +
                      std::to_string(size) + " after " + std::to_string(previous));
  }
  return size;
}

// calibrate's all-reduce sweep between ranks (measurements.allreduce_sweep): sizes ascending,
// each with its float32 and bf16 seconds, and its deterministic seconds (back to back and
// cold) on every size or none (profiles from before calibrate measured them).
std::vector<AllreduceAlone> allreduce_sweep(const json& j, const std::string& where) {
  if (!j.is_array()) throw ConfigError(where + " must be an array");
  std::vector<AllreduceAlone> out;
  for (const json& c : j) {
    AllreduceAlone a;
    a.floats = ascending(c, "floats", out.empty() ? 0 : out.back().floats, where);
    a.seconds = positive(c, "seconds", where);
    a.bf16_seconds = positive(c, "bf16_seconds", where);
    // The later measurements: both on every entry, or neither on any.
    if (c.contains("deterministic_seconds") || c.contains("deterministic_cold_seconds")) {
      a.deterministic_seconds = positive(c, "deterministic_seconds", where);
      a.deterministic_cold_seconds = positive(c, "deterministic_cold_seconds", where);
    }
    if (!out.empty() && (a.deterministic_seconds > 0) != (out.back().deterministic_seconds > 0)) {
      throw ConfigError(where +
                        ": 'deterministic_seconds' and 'deterministic_cold_seconds' must be on "
                        "every entry or on none");
    }
    out.push_back(a);
  }
  return out;
}

// A dense model's measured steps (dense_rates[].points): rows ascending, compute seconds > 0,
// two or more (the curve is followed between them); update seconds > 0 on all or none.
std::vector<DenseRowsSeconds> dense_points(const json& j, const std::string& where) {
  if (!j.is_array() || j.size() < 2) {
    throw ConfigError(where + " must be an array of 2 or more {rows, compute_seconds}");
  }
  std::vector<DenseRowsSeconds> out;
  const bool updates = j.front().is_object() && j.front().contains("update_seconds");
  for (const json& c : j) {
    const int64_t rows = ascending(c, "rows", out.empty() ? 0 : out.back().rows, where);
    if (c.contains("update_seconds") != updates) {
      throw ConfigError(where + ": 'update_seconds' must be on every entry or on none");
    }
    out.push_back({rows, positive(c, "compute_seconds", where),
                   updates ? positive(c, "update_seconds", where) : 0.0});
  }
  return out;
}

// The four timings of a steps-at-once entry (`where` names it), each > 0.
constexpr const char* kAtOnce[] = {"forward_alone", "backward_alone", "forward_shared",
                                   "backward_shared"};
StepsAtOnceSeconds steps_at_once(const json& c, int64_t rows, const std::string& where) {
  return {rows, positive(c, kAtOnce[0], where), positive(c, kAtOnce[1], where),
          positive(c, kAtOnce[2], where), positive(c, kAtOnce[3], where)};
}

// One device count's weight-gradient GEMMs (dense_rates[].weight_grad_gemms[]): the devices
// whose shards were timed (2 or more) and points ascending in rows, every time > 0; and the
// steps at once, either as the points' four fields (every point or none) or as the array
// `steps_at_once` ascending in rows, not both.
WeightGradShards weight_grad_shards(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("devices") || !j.at("devices").is_number_integer() ||
      j.at("devices").get<int64_t>() < 2 || j.at("devices").get<int64_t>() > 1 << 20) {
    throw ConfigError(where + " needs 'devices', a whole number >= 2");
  }
  if (!j.contains("points") || !j.at("points").is_array() || j.at("points").empty()) {
    throw ConfigError(where +
                      " needs 'points', an array of {rows, whole, shard, whole_cold, "
                      "shard_cold}");
  }
  WeightGradShards out{j.at("devices").get<int>(), {}};
  const std::string points = where + ": points";
  for (const json& c : j.at("points")) {
    const int64_t rows =
        ascending(c, "rows", out.points.empty() ? 0 : out.points.back().rows, points);
    WeightGradGemmSeconds p{rows, positive(c, "whole", points), positive(c, "shard", points),
                            positive(c, "whole_cold", points), positive(c, "shard_cold", points)};
    // As a step runs them: all three or none (profiles before 2026-12-05), alike in every point;
    // no input gradients (a model of one Dense layer) take no time.
    const bool step =
        c.contains("whole_step") || c.contains("shard_step") || c.contains("input_step");
    if (step) {
      p.whole_step = positive(c, "whole_step", points);
      p.shard_step = positive(c, "shard_step", points);
      if (!c.contains("input_step")) {
        throw ConfigError(points +
                          ": missing number 'input_step' (with whole_step and shard_step)");
      }
      p.input_step = non_negative(c, "input_step", points, 0);
    }
    if (!out.points.empty() && step != out.points.front().timed_as_step()) {
      throw ConfigError(points + ": point at " + std::to_string(rows) +
                        " rows: whole_step, shard_step and input_step in every point or none");
    }
    // The steps at once, as profiles of 2026-12-05 hold them: all four or none, alike in every
    // point; their medians came later, in the array only.
    if (c.contains("median")) {
      throw ConfigError(points + ": point at " + std::to_string(rows) +
                        " rows: 'median' belongs in a steps_at_once entry");
    }
    const bool once = std::any_of(std::begin(kAtOnce), std::end(kAtOnce),
                                  [&](const char* k) { return c.contains(k); });
    const std::string point = points + ": point at " + std::to_string(rows) + " rows";
    const StepsAtOnceSeconds at_once = once ? steps_at_once(c, rows, point) : StepsAtOnceSeconds{};
    if (!out.points.empty() && once != !out.at_once.empty()) {
      throw ConfigError(point +
                        ": forward_alone, backward_alone, forward_shared and backward_shared in "
                        "every point or none");
    }
    if (once) out.at_once.push_back(at_once);
    out.points.push_back(p);
  }
  if (j.contains("steps_at_once")) {
    const std::string at = where + ": steps_at_once";
    if (!out.at_once.empty()) {
      throw ConfigError(at + " with the same timings in the points: one or the other");
    }
    if (!j.at("steps_at_once").is_array() || j.at("steps_at_once").empty()) {
      throw ConfigError(at +
                        " must be an array of {rows, forward_alone, backward_alone, "
                        "forward_shared, backward_shared}");
    }
    for (const json& c : j.at("steps_at_once")) {
      const int64_t rows =
          ascending(c, "rows", out.at_once.empty() ? 0 : out.at_once.back().rows, at);
      const std::string entry = at + ": entry at " + std::to_string(rows) + " rows";
      out.at_once.push_back(steps_at_once(c, rows, entry));
      // The rounds' median beside their best (profiles since 2026-12-05, morning): all four.
      if (c.contains("median")) {
        if (!c.at("median").is_object()) {
          throw ConfigError(entry +
                            ": 'median' must be an object of forward_alone, backward_alone, "
                            "forward_shared and backward_shared");
        }
        const StepsAtOnceSeconds m = steps_at_once(c.at("median"), rows, entry + ": median");
        StepsAtOnceSeconds& a = out.at_once.back();
        a.median_forward_alone = m.forward_alone;
        a.median_backward_alone = m.backward_alone;
        a.median_forward_shared = m.forward_shared;
        a.median_backward_shared = m.backward_shared;
      }
      if (out.at_once.back().has_medians() != out.at_once.front().has_medians()) {
        throw ConfigError(entry + ": 'median' in every entry or none");
      }
    }
  }
  return out;
}

// An array of them, ascending in devices; one object (the first profiles that had them,
// 2026-12-03) is an array of one.
std::vector<WeightGradShards> weight_grad_gemms(const json& j, const std::string& where) {
  if (j.is_object()) return {weight_grad_shards(j, where)};
  if (!j.is_array() || j.empty()) {
    throw ConfigError(where + " must be an array of {devices, points}");
  }
  std::vector<WeightGradShards> out;
  for (size_t i = 0; i < j.size(); ++i) {
    out.push_back(weight_grad_shards(j[i], where + "[" + std::to_string(i) + "]"));
    if (out.size() > 1 && out.back().devices <= out[out.size() - 2].devices) {
      throw ConfigError(where + " must ascend in 'devices', got " +
                        std::to_string(out.back().devices) + " after " +
                        std::to_string(out[out.size() - 2].devices));
    }
  }
  return out;
}

}  // namespace

std::string profiles_directory() {
  if (const char* dir = std::getenv("TANDEM_PROFILES_DIR")) return dir;
  // Installed: <prefix>/bin/tandem reads <prefix>/share/tandem/profiles (a build tree has none).
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path() / TANDEM_PROFILES_DIR_FROM_EXE;
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
  return TANDEM_DEFAULT_PROFILES_DIR;
}

std::vector<std::string> known_hardware_profiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(profiles_directory(), ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Whole numbers >= `least` in an array of `n` under `key` of a conv_shapes entry.
std::vector<int64_t> whole_numbers(const json& c, const char* key, size_t n, int64_t least,
                                   const std::string& where) {
  if (!c.contains(key) || !c.at(key).is_array() || c.at(key).size() != n) {
    throw ConfigError(where + ": '" + key + "' must be an array of " + std::to_string(n) +
                      " whole numbers");
  }
  std::vector<int64_t> out;
  for (const json& v : c.at(key)) {
    if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > (1 << 20)) {
      throw ConfigError(where + ": '" + key + "' must hold whole numbers >= " +
                        std::to_string(least) + ", got " + c.at(key).dump());
    }
    out.push_back(v.get<int64_t>());
  }
  return out;
}

ConvShapeSeconds conv_shape_from_json(const json& c, const std::string& where) {
  if (!c.is_object()) throw ConfigError(where + ": each entry must be an object");
  ConvShapeSeconds m;
  Window2d& w = m.window;
  w.batch = 1;
  const auto in = whole_numbers(c, "input", 3, 1, where);
  const auto out = whole_numbers(c, "output", 3, 1, where);
  const auto kernel = whole_numbers(c, "kernel", 2, 1, where);
  const auto strides = whole_numbers(c, "strides", 2, 1, where);
  const auto dilation = whole_numbers(c, "dilation", 2, 1, where);
  const auto pad = whole_numbers(c, "padding", 4, 0, where);
  std::tie(w.in_h, w.in_w, w.in_c) = std::tuple{in[0], in[1], in[2]};
  std::tie(w.out_h, w.out_w, w.out_c) = std::tuple{out[0], out[1], out[2]};
  std::tie(w.kernel_h, w.kernel_w) = std::pair{kernel[0], kernel[1]};
  std::tie(w.stride_h, w.stride_w) = std::pair{strides[0], strides[1]};
  std::tie(w.dilation_h, w.dilation_w) = std::pair{dilation[0], dilation[1]};
  std::tie(w.pad_top, w.pad_bottom, w.pad_left, w.pad_right) =
      std::tuple{pad[0], pad[1], pad[2], pad[3]};
  m.batch = count(c, "batch", where, 0);
  if (m.batch < 1) throw ConfigError(where + ": missing whole number 'batch'");
  m.forward = positive(c, "forward", where);
  m.backward_data = positive(c, "backward_data", where);
  m.backward_weights = positive(c, "backward_weights", where);
  return m;
}

HardwareProfile parse_hardware_profile(const json& j, const std::string& origin) {
  HardwareProfile p;
  p.path = origin;
  if (!j.is_object()) throw ConfigError(origin + ": a hardware profile is a JSON object");
  p.name = text(j, "name", origin, fs::path(origin).stem().string());
  p.description = text(j, "description", origin, "");
  if (!j.contains("max_devices")) throw ConfigError(origin + ": missing number 'max_devices'");
  p.max_devices = count(j, "max_devices", origin, 1);
  const std::string d = origin + ": device";
  const json& dj = object(j, "device", origin);
  p.device.name = text(dj, "name", d, "device");
  const bool calibrated = dj.contains("calibration");
  if (!calibrated) p.device.sustained_flops = positive(dj, "sustained_flops", d);
  p.device.half_rows = non_negative(dj, "half_rows", d, 0);
  p.device.conv_flops = non_negative(dj, "conv_flops", d, 0);
  p.device.memory_bandwidth = positive(dj, "memory_bandwidth", d);
  // Both or neither (profiles from before calibrate measured them).
  if (dj.contains("cold_copy_bandwidth") || dj.contains("cold_sum_bandwidth")) {
    p.device.cold_copy_bandwidth = positive(dj, "cold_copy_bandwidth", d);
    p.device.cold_sum_bandwidth = positive(dj, "cold_sum_bandwidth", d);
  }
  if (dj.contains("private_cache_bytes")) {
    p.device.private_cache_bytes = static_cast<int64_t>(positive(dj, "private_cache_bytes", d));
  }
  if (dj.contains("shared_cache_bytes")) {
    p.device.shared_cache_bytes = static_cast<int64_t>(positive(dj, "shared_cache_bytes", d));
  }
  p.device.layer_overhead = non_negative(dj, "layer_overhead", d, 0);
  p.device.step_overhead = non_negative(dj, "step_overhead", d, 0);
  p.device.comm_uses_compute = flag(dj, "comm_uses_compute", d, false);
  p.device.threads = dj.contains("threads") ? count(dj, "threads", d, 1) : 0;
  p.device.fork_join = non_negative(dj, "fork_join", d, 0);
  p.device.barrier = non_negative(dj, "barrier", d, 0);
  for (auto [key, share] :
       {std::pair{"concurrent_memory_share", &p.device.concurrent_memory_share},
        std::pair{"concurrent_compute_share", &p.device.concurrent_compute_share}}) {
    *share = non_negative(dj, key, d, 1);
    if (!(*share > 0) || *share > 1) {
      throw ConfigError(d + ": '" + key + "' must be in (0, 1], got " + dj.at(key).dump());
    }
  }
  p.device.bf16_seconds_per_float = non_negative(dj, "bf16_seconds_per_float", d, 0);
  if (dj.contains("conv_shapes")) {
    const std::string where = d + ": conv_shapes";
    if (!dj.at("conv_shapes").is_array()) throw ConfigError(where + " must be an array");
    for (const json& c : dj.at("conv_shapes")) {
      p.device.conv_shapes.push_back(conv_shape_from_json(c, where));
    }
  }
  p.device.conv_step_scale = non_negative(dj, "conv_step_scale", d, 0);
  p.device.pool_scale = dj.contains("pool_scale") ? positive(dj, "pool_scale", d) : 1.0;
  if (p.device.conv_step_scale > 0 && p.device.conv_shapes.empty()) {
    throw ConfigError(d +
                      ": 'conv_step_scale' scales the measured conv_shapes, and there are none");
  }
  if (dj.contains("bf16_loops")) {
    const std::string where = d + ": bf16_loops";
    if (!dj.at("bf16_loops").is_array()) throw ConfigError(where + " must be an array");
    for (const json& c : dj.at("bf16_loops")) {
      Bf16LoopSeconds loops;
      loops.floats = ascending(
          c, "floats", p.device.bf16_loops.empty() ? 0 : p.device.bf16_loops.back().floats, where);
      loops.pack = positive(c, "pack", where);
      loops.unpack = positive(c, "unpack", where);
      loops.sum = positive(c, "sum", where);
      p.device.bf16_loops.push_back(loops);
    }
  }
  if (dj.contains("update_contention")) {
    const std::string where = d + ": update_contention";
    if (!dj.at("update_contention").is_array() || dj.at("update_contention").empty()) {
      throw ConfigError(where + " must be a non-empty array");
    }
    for (const json& c : dj.at("update_contention")) {
      UpdateContention u;
      u.bytes = ascending(
          c, "bytes",
          p.device.update_contention.empty() ? 0 : p.device.update_contention.back().bytes, where);
      u.own = positive(c, "own", where);
      u.shard = positive(c, "shard", where);
      p.device.update_contention.push_back(u);
    }
    if (!dj.contains("update_contention_devices")) {
      throw ConfigError(d +
                        ": 'update_contention' needs 'update_contention_devices' (the "
                        "devices updating at once)");
    }
    p.device.update_contention_devices = count(dj, "update_contention_devices", d, 1);
    if (p.device.update_contention_devices < 2) {
      throw ConfigError(d + ": 'update_contention_devices' must be 2 or more, got " +
                        std::to_string(p.device.update_contention_devices));
    }
  }
  if (dj.contains("deterministic_exchange")) {
    const std::string where = d + ": deterministic_exchange";
    if (!dj.at("deterministic_exchange").is_array() || dj.at("deterministic_exchange").empty()) {
      throw ConfigError(where + " must be a non-empty array");
    }
    for (const json& c : dj.at("deterministic_exchange")) {
      ExchangeSeconds e;
      e.bytes = ascending(c, "bytes",
                          p.device.deterministic_exchange.empty()
                              ? 0
                              : p.device.deterministic_exchange.back().bytes,
                          where);
      e.copy = positive(c, "copy", where);
      e.tree = positive(c, "tree", where);
      p.device.deterministic_exchange.push_back(e);
    }
    for (const char* key : {"deterministic_exchange_devices", "deterministic_exchange_shards"}) {
      if (!dj.contains(key)) {
        throw ConfigError(d + ": 'deterministic_exchange' needs '" + key + "'");
      }
    }
    p.device.deterministic_exchange_devices = count(dj, "deterministic_exchange_devices", d, 1);
    p.device.deterministic_exchange_shards = count(dj, "deterministic_exchange_shards", d, 1);
    if (p.device.deterministic_exchange_devices < 2) {
      throw ConfigError(d + ": 'deterministic_exchange_devices' must be 2 or more, got " +
                        std::to_string(p.device.deterministic_exchange_devices));
    }
  }
  if (dj.contains("dense_rates")) {
    const std::string where = d + ": dense_rates";
    if (!dj.at("dense_rates").is_array()) throw ConfigError(where + " must be an array");
    for (const json& c : dj.at("dense_rates")) {
      if (!c.is_object() || !c.contains("widths") || !c.at("widths").is_array() ||
          c.at("widths").size() < 2) {
        throw ConfigError(where + ": each entry needs 'widths' (input, ..., output)");
      }
      DenseRateCurve curve;
      for (const json& w : c.at("widths")) {
        if (!w.is_number_integer() || w.get<int64_t>() < 1) {
          throw ConfigError(where + ": widths must be whole numbers >= 1, got " + w.dump());
        }
        curve.widths.push_back(w.get<int64_t>());
      }
      curve.sustained_flops = positive(c, "sustained_flops", where);
      curve.half_rows = non_negative(c, "half_rows", where, 0);
      if (c.contains("points")) curve.points = dense_points(c.at("points"), where + ": points");
      if (c.contains("ranks_points")) {
        curve.ranks_points = dense_points(c.at("ranks_points"), where + ": ranks_points");
        if (!c.contains("ranks") || !c.at("ranks").is_number_integer() ||
            c.at("ranks").get<int64_t>() < 2 || c.at("ranks").get<int64_t>() > 1 << 20) {
          throw ConfigError(where + ": ranks_points needs 'ranks', a whole number >= 2");
        }
        curve.ranks = c.at("ranks").get<int>();
      }
      if (c.contains("weight_grad_gemms")) {
        curve.weight_grad_gemms =
            weight_grad_gemms(c.at("weight_grad_gemms"), where + ": weight_grad_gemms");
      }
      p.device.dense_rates.push_back(curve);
    }
  }
  const json& host = object(j, "host", origin);
  p.host_memory_bandwidth = positive(host, "memory_bandwidth", origin + ": host");
  p.host_update_bandwidth = host.contains("update_bandwidth")
                                ? positive(host, "update_bandwidth", origin + ": host")
                                : p.host_memory_bandwidth;
  p.host_device = link(object(j, "host_device", origin), origin + ": host_device");
  p.device_device = link(object(j, "device_device", origin), origin + ": device_device");
  if (j.contains("rank_rank")) {
    p.rank_rank = link(object(j, "rank_rank", origin), origin + ": rank_rank");
    // The sweep counts only with the ranks it ran on (profiles from before calibrate wrote
    // them keep the line alone).
    const json* m = j.contains("measurements") ? &j.at("measurements") : nullptr;
    if (m && !m->is_object()) throw ConfigError(origin + ": 'measurements' must be an object");
    if (m && m->contains("allreduce_sweep") && m->contains("allreduce_sweep_ranks")) {
      p.rank_rank.alone_ranks = count(*m, "allreduce_sweep_ranks", origin + ": measurements", 0);
      if (p.rank_rank.alone_ranks < 2) {
        throw ConfigError(origin + ": measurements: 'allreduce_sweep_ranks' must be >= 2, got " +
                          m->at("allreduce_sweep_ranks").dump());
      }
      p.rank_rank.alone =
          allreduce_sweep(m->at("allreduce_sweep"), origin + ": measurements: allreduce_sweep");
    }
  }
  p.sources = j.contains("sources") ? j.at("sources") : json::object();
  p.document = j;
  if (calibrated) {
    check_calibration(dj.at("calibration"), d);
    calibrate_device(p, dj.at("calibration"), d + ": calibration");
  }
  if (dj.contains("conv_calibration")) {
    // One measured step of a built-in convnet on one device: {model, batch, step_seconds}.
    const std::string where = d + ": conv_calibration";
    const json& c = object(dj, "conv_calibration", d);
    const std::string model = text(c, "model", where, "");
    if (!zoo::is_name(model)) {
      throw ConfigError(where +
                        ": model must be a built-in convnet (mnist-convnet, "
                        "minigooglenet, small-resnet), got '" +
                        model + "'");
    }
    whole(c, "batch", where, 1e9, true);
    calibrate_conv_to_step(p, ModelCost::of(zoo::by_name(model)), c.at("batch").get<int64_t>(),
                           positive(c, "step_seconds", where), where);
  }
  return p;
}

bool same_conv_shape(const Window2d& a, const Window2d& b) {
  const auto key = [](const Window2d& w) {
    return std::tuple{w.in_h,     w.in_w,       w.in_c,     w.out_h,    w.out_w,      w.out_c,
                      w.kernel_h, w.kernel_w,   w.stride_h, w.stride_w, w.dilation_h, w.dilation_w,
                      w.pad_top,  w.pad_bottom, w.pad_left, w.pad_right};
  };
  return key(a) == key(b);
}

json conv_shape_to_json(const ConvShapeSeconds& m) {
  const Window2d& w = m.window;
  return {{"input", {w.in_h, w.in_w, w.in_c}},
          {"output", {w.out_h, w.out_w, w.out_c}},
          {"kernel", {w.kernel_h, w.kernel_w}},
          {"strides", {w.stride_h, w.stride_w}},
          {"dilation", {w.dilation_h, w.dilation_w}},
          {"padding", {w.pad_top, w.pad_bottom, w.pad_left, w.pad_right}},
          {"batch", m.batch},
          {"forward", m.forward},
          {"backward_data", m.backward_data},
          {"backward_weights", m.backward_weights}};
}

HardwareProfile load_hardware_profile(const std::string& name) {
  std::string path = name;
  if (name.find('/') == std::string::npos && name.find(".json") == std::string::npos) {
    path = (fs::path(profiles_directory()) / (name + ".json")).string();
    if (!fs::exists(path)) {
      std::string known;
      for (const auto& k : known_hardware_profiles()) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError("unknown hardware profile '" + name + "' (known: " + known +
                        "; or give a path to a JSON file)");
    }
  }
  // Profiles are a few KiB: the cap keeps a wrong path (a dataset, a FIFO) from being read.
  constexpr uint64_t kMaxProfileBytes = kMiB;
  const std::string bytes = read_regular_file(path, kMaxProfileBytes, "hardware profile (JSON)");
  json j;
  try {
    j = json::parse(bytes);
  } catch (const json::exception& e) {
    throw FormatError(path, 0, std::string("not valid JSON: ") + e.what());
  }
  try {
    return parse_hardware_profile(j, path);
  } catch (const json::exception& e) {
    throw ConfigError(path + ": invalid hardware profile: " + e.what());
  }
}

}  // namespace tandem::detail
