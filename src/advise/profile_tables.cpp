#include "advise/profile_tables.h"

#include <string>
#include <tuple>
#include <vector>

#include "advise/profile_fields.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using json = nlohmann::json;

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
  m.batch = count_field(c, "batch", where, 0);
  if (m.batch < 1) throw ConfigError(where + ": missing whole number 'batch'");
  m.forward = positive_field(c, "forward", where);
  m.backward_data = positive_field(c, "backward_data", where);
  m.backward_weights = positive_field(c, "backward_weights", where);
  return m;
}

// The measured table `key` of the device section `dj` (named `d`): a non-empty array whose
// entries ascend in 'bytes'; `fields` reads the rest of each entry.
template <typename T, typename Fields>
std::vector<T> size_table(const json& dj, const std::string& d, const char* key, Fields fields) {
  const std::string where = d + ": " + key;
  if (!dj.at(key).is_array() || dj.at(key).empty()) {
    throw ConfigError(where + " must be a non-empty array");
  }
  std::vector<T> table;
  for (const json& c : dj.at(key)) {
    T entry;
    entry.bytes = ascending_size(c, "bytes", table.empty() ? 0 : table.back().bytes, where);
    fields(c, where, entry);
    table.push_back(entry);
  }
  return table;
}

// The devices a measured table ran on at once (`key` of `dj`): a whole number, 2 or more.
int devices_at_once(const json& dj, const std::string& d, const char* key) {
  const int devices = count_field(dj, key, d, 1);
  if (devices < 2) {
    throw ConfigError(d + ": '" + key + "' must be 2 or more, got " + std::to_string(devices));
  }
  return devices;
}

}  // namespace

std::vector<AllreduceAlone> allreduce_sweep(const json& j, const std::string& where) {
  if (!j.is_array()) throw ConfigError(where + " must be an array");
  std::vector<AllreduceAlone> out;
  for (const json& c : j) {
    AllreduceAlone a;
    a.floats = ascending_size(c, "floats", out.empty() ? 0 : out.back().floats, where);
    a.seconds = positive_field(c, "seconds", where);
    a.bf16_seconds = positive_field(c, "bf16_seconds", where);
    // The later measurements: both on every entry, or neither on any.
    if (c.contains("deterministic_seconds") || c.contains("deterministic_cold_seconds")) {
      a.deterministic_seconds = positive_field(c, "deterministic_seconds", where);
      a.deterministic_cold_seconds = positive_field(c, "deterministic_cold_seconds", where);
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

std::vector<ConvShapeSeconds> conv_shapes(const json& j, const std::string& where) {
  std::vector<ConvShapeSeconds> out;
  if (!j.is_array()) throw ConfigError(where + " must be an array");
  for (const json& c : j) {
    out.push_back(conv_shape_from_json(c, where));
  }
  return out;
}

std::vector<Bf16LoopSeconds> bf16_loops(const json& j, const std::string& where) {
  std::vector<Bf16LoopSeconds> out;
  if (!j.is_array()) throw ConfigError(where + " must be an array");
  for (const json& c : j) {
    Bf16LoopSeconds loops;
    loops.floats = ascending_size(c, "floats", out.empty() ? 0 : out.back().floats, where);
    loops.pack = positive_field(c, "pack", where);
    loops.unpack = positive_field(c, "unpack", where);
    loops.sum = positive_field(c, "sum", where);
    out.push_back(loops);
  }
  return out;
}

void read_update_contention(const json& dj, const std::string& d, DeviceProfile& device) {
  if (!dj.contains("update_contention")) {
    if (dj.contains("update_contention_window")) {
      throw ConfigError(d +
                        ": 'update_contention_window' without 'update_contention' (where it ran)");
    }
    return;
  }
  device.update_contention = size_table<UpdateContention>(
      dj, d, "update_contention", [](const json& c, const std::string& where, UpdateContention& u) {
        u.own = positive_field(c, "own", where);
        u.shard = positive_field(c, "shard", where);
      });
  if (!dj.contains("update_contention_devices")) {
    throw ConfigError(d +
                      ": 'update_contention' needs 'update_contention_devices' (the "
                      "devices updating at once)");
  }
  device.update_contention_devices = devices_at_once(dj, d, "update_contention_devices");
  if (dj.contains("update_contention_window")) {
    device.update_contention_window =
        read_probe_window(dj.at("update_contention_window"), d + ": update_contention");
  }
}

void read_deterministic_exchange(const json& dj, const std::string& d, DeviceProfile& device) {
  if (!dj.contains("deterministic_exchange")) return;
  device.deterministic_exchange =
      size_table<ExchangeSeconds>(dj, d, "deterministic_exchange",
                                  [](const json& c, const std::string& where, ExchangeSeconds& e) {
                                    e.copy = positive_field(c, "copy", where);
                                    e.tree = positive_field(c, "tree", where);
                                  });
  for (const char* key : {"deterministic_exchange_devices", "deterministic_exchange_shards"}) {
    if (!dj.contains(key)) {
      throw ConfigError(d + ": 'deterministic_exchange' needs '" + key + "'");
    }
  }
  device.deterministic_exchange_devices = devices_at_once(dj, d, "deterministic_exchange_devices");
  device.deterministic_exchange_shards = count_field(dj, "deterministic_exchange_shards", d, 1);
}

namespace {

// The table `key` (size_table, with `fields`) into `table` and its devices `key`_devices into
// `devices`, both or neither; `timed` says what the devices were timed doing, for the errors.
template <typename T, typename Fields>
void table_with_devices(const json& dj, const std::string& d, const std::string& key,
                        const std::string& timed, Fields fields, std::vector<T>& table,
                        int& devices) {
  const std::string devices_key = key + "_devices";
  if (!dj.contains(key)) {
    if (dj.contains(devices_key)) {
      throw ConfigError(d + ": '" + devices_key + "' without '" + key + "' (the devices it timed " +
                        timed + " on)");
    }
    return;
  }
  table = size_table<T>(dj, d, key.c_str(), fields);
  if (!dj.contains(devices_key)) {
    throw ConfigError(d + ": '" + key + "' needs '" + devices_key + "' (the devices it timed " +
                      timed + " on)");
  }
  devices = devices_at_once(dj, d, devices_key.c_str());
}

}  // namespace

void read_host_exchange(const json& dj, const std::string& d, DeviceProfile& device) {
  table_with_devices<HostExchangeSeconds>(
      dj, d, "host_exchange", "the host's copies",
      [](const json& c, const std::string& where, HostExchangeSeconds& e) {
        e.copy = positive_field(c, "copy", where);
        e.sum = positive_field(c, "sum", where);
      },
      device.host_exchange, device.host_exchange_devices);
}

void read_allreduce_exchange(const json& dj, const std::string& d, DeviceProfile& device) {
  table_with_devices<AllreduceSeconds>(
      dj, d, "allreduce_exchange", "the all-reduce",
      [](const json& c, const std::string& where, AllreduceSeconds& e) {
        e.seconds = positive_field(c, "seconds", where);
      },
      device.allreduce_exchange, device.allreduce_exchange_devices);
}

}  // namespace tandem::detail
