#include "advise/hardware_profile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "advise/cost_model.h"
#include "advise/profile_dense_rates.h"
#include "advise/profile_fields.h"
#include "advise/profile_tables.h"
#include "core/input_file.h"
#include "tandem/error.h"
#include "tandem/zoo.h"

namespace tandem::detail {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

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
  check_whole_number(c, "batch", where + ": calibration", 1e9, true);
  check_whole_number(c, "samples", where + ": calibration", 1e15, true);
  check_whole_number(c, "epochs", where + ": calibration", 1e6, true);
  check_whole_number(c, "update_passes", where + ": calibration", 1e3, false);
  if (!c.contains("seconds") || !c.at("seconds").is_number()) {
    throw ConfigError(where + ": calibration needs a number 'seconds'");
  }
}

LinkProfile link(const json& j, const std::string& where) {
  LinkProfile l;
  l.bandwidth = positive_field(j, "bandwidth", where);
  l.latency = non_negative_field(j, "latency", where, 0);
  l.devices_per_link = count_field(j, "devices_per_link", where, 1);
  return l;
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

HardwareProfile parse_hardware_profile(const json& j, const std::string& origin) {
  HardwareProfile p;
  p.path = origin;
  if (!j.is_object()) throw ConfigError(origin + ": a hardware profile is a JSON object");
  p.name = text_field(j, "name", origin, fs::path(origin).stem().string());
  p.description = text_field(j, "description", origin, "");
  if (!j.contains("max_devices")) throw ConfigError(origin + ": missing number 'max_devices'");
  p.max_devices = count_field(j, "max_devices", origin, 1);
  const std::string d = origin + ": device";
  const json& dj = object_field(j, "device", origin);
  p.device.name = text_field(dj, "name", d, "device");
  const bool calibrated = dj.contains("calibration");
  if (!calibrated) p.device.sustained_flops = positive_field(dj, "sustained_flops", d);
  p.device.half_rows = non_negative_field(dj, "half_rows", d, 0);
  p.device.conv_flops = non_negative_field(dj, "conv_flops", d, 0);
  p.device.memory_bandwidth = positive_field(dj, "memory_bandwidth", d);
  // Both or neither (profiles from before calibrate measured them).
  if (dj.contains("cold_copy_bandwidth") || dj.contains("cold_sum_bandwidth")) {
    p.device.cold_copy_bandwidth = positive_field(dj, "cold_copy_bandwidth", d);
    p.device.cold_sum_bandwidth = positive_field(dj, "cold_sum_bandwidth", d);
  }
  if (dj.contains("private_cache_bytes")) {
    p.device.private_cache_bytes =
        static_cast<int64_t>(positive_field(dj, "private_cache_bytes", d));
  }
  if (dj.contains("shared_cache_bytes")) {
    p.device.shared_cache_bytes = static_cast<int64_t>(positive_field(dj, "shared_cache_bytes", d));
  }
  p.device.layer_overhead = non_negative_field(dj, "layer_overhead", d, 0);
  p.device.step_overhead = non_negative_field(dj, "step_overhead", d, 0);
  p.device.comm_uses_compute = flag_field(dj, "comm_uses_compute", d, false);
  p.device.threads = dj.contains("threads") ? count_field(dj, "threads", d, 1) : 0;
  p.device.fork_join = non_negative_field(dj, "fork_join", d, 0);
  p.device.barrier = non_negative_field(dj, "barrier", d, 0);
  for (auto [key, share] :
       {std::pair{"concurrent_memory_share", &p.device.concurrent_memory_share},
        std::pair{"concurrent_compute_share", &p.device.concurrent_compute_share}}) {
    *share = non_negative_field(dj, key, d, 1);
    if (!(*share > 0) || *share > 1) {
      throw ConfigError(d + ": '" + key + "' must be in (0, 1], got " + dj.at(key).dump());
    }
  }
  p.device.bf16_seconds_per_float = non_negative_field(dj, "bf16_seconds_per_float", d, 0);
  if (dj.contains("conv_shapes")) {
    p.device.conv_shapes = conv_shapes(dj.at("conv_shapes"), d + ": conv_shapes");
  }
  p.device.conv_step_scale = non_negative_field(dj, "conv_step_scale", d, 0);
  p.device.pool_scale = dj.contains("pool_scale") ? positive_field(dj, "pool_scale", d) : 1.0;
  if (p.device.conv_step_scale > 0 && p.device.conv_shapes.empty()) {
    throw ConfigError(d +
                      ": 'conv_step_scale' scales the measured conv_shapes, and there are none");
  }
  if (dj.contains("bf16_loops")) {
    p.device.bf16_loops = bf16_loops(dj.at("bf16_loops"), d + ": bf16_loops");
  }
  read_update_contention(dj, d, p.device);
  read_deterministic_exchange(dj, d, p.device);
  read_host_exchange(dj, d, p.device);
  read_allreduce_exchange(dj, d, p.device);
  if (dj.contains("dense_rates")) {
    p.device.dense_rates = dense_rates(dj.at("dense_rates"), d + ": dense_rates");
  }
  const json& host = object_field(j, "host", origin);
  p.host_memory_bandwidth = positive_field(host, "memory_bandwidth", origin + ": host");
  p.host_update_bandwidth = host.contains("update_bandwidth")
                                ? positive_field(host, "update_bandwidth", origin + ": host")
                                : p.host_memory_bandwidth;
  p.host_device = link(object_field(j, "host_device", origin), origin + ": host_device");
  p.device_device = link(object_field(j, "device_device", origin), origin + ": device_device");
  if (j.contains("rank_rank")) {
    p.rank_rank = link(object_field(j, "rank_rank", origin), origin + ": rank_rank");
    // The sweep counts only with the ranks it ran on (profiles from before calibrate wrote
    // them keep the line alone).
    const json* m = j.contains("measurements") ? &j.at("measurements") : nullptr;
    if (m && !m->is_object()) throw ConfigError(origin + ": 'measurements' must be an object");
    if (m && m->contains("allreduce_sweep") && m->contains("allreduce_sweep_ranks")) {
      p.rank_rank.alone_ranks =
          count_field(*m, "allreduce_sweep_ranks", origin + ": measurements", 0);
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
    const json& c = object_field(dj, "conv_calibration", d);
    const std::string model = text_field(c, "model", where, "");
    if (!zoo::is_name(model)) {
      throw ConfigError(where +
                        ": model must be a built-in convnet (mnist-convnet, "
                        "minigooglenet, small-resnet), got '" +
                        model + "'");
    }
    check_whole_number(c, "batch", where, 1e9, true);
    calibrate_conv_to_step(p, ModelCost::of(zoo::by_name(model)), c.at("batch").get<int64_t>(),
                           positive_field(c, "step_seconds", where), where);
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
