// Hardware profiles for the cost model: one JSON file per system (profiles/*.json), each
// figure with its source in the file's "sources". A system is N identical devices, the
// links between them and the host, and the host's memory.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::detail {

struct DeviceProfile {
  std::string name;
  // Sustained FLOP/s of the GEMMs of a dense layer with many rows; with r rows per device a
  // layer runs at sustained_flops * r / (r + half_rows) (small batches use the device less).
  double sustained_flops = 0;
  double half_rows = 0;
  // FLOP/s of convolutions (their GEMM rows are samples x output pixels, so they keep their
  // rate at small batches); 0: sustained_flops.
  double conv_flops = 0;
  double memory_bandwidth = 0;  // bytes/s: the optimizer update, memory-bound layers
  double layer_overhead = 0;    // seconds per layer and pass (kernel launches)
  double step_overhead = 0;     // seconds per step (the framework's own work)
  // Communication takes the device's own cores (CPU devices, MPI ranks of one core), so it
  // cannot overlap compute.
  bool comm_uses_compute = false;
  // A CPU device: the threads it runs (what tandem train --devices 1 --threads-per-device N
  // runs); 0: not one (a GPU).
  int threads = 0;
};

struct LinkProfile {
  double bandwidth = 0;      // bytes/s per link and direction
  double latency = 0;        // seconds per message
  int devices_per_link = 1;  // devices sharing one link (a PCIe switch, a K80 board)
};

struct HardwareProfile {
  std::string name, description, path;
  int max_devices = 1;
  DeviceProfile device;
  double host_memory_bandwidth = 0;  // bytes/s the host's gradient sum reaches
  double host_update_bandwidth = 0;  // bytes/s the host's optimizer update reaches
  LinkProfile host_device;           // weights and gradients of the `host` strategy, input
  LinkProfile device_device;         // the all-reduce ring
  nlohmann::json sources;
  nlohmann::json document;  // the profile as read (for results that record what they used)
};

// `name` is a file in the profiles directory (without .json) or a path to a JSON file.
// ConfigError naming the profile and field on anything missing or out of range (a zero
// bandwidth, a negative latency), listing the known profiles for an unknown name.
HardwareProfile load_hardware_profile(const std::string& name);
HardwareProfile parse_hardware_profile(const nlohmann::json& j, const std::string& origin);
std::vector<std::string> known_hardware_profiles();
std::string profiles_directory();

}  // namespace tandem::detail
