// The measured tables of a hardware profile, read from its JSON and checked (each error
// names where, the entry and the key): the all-reduce sweep between ranks, the convolution
// shapes, the bf16 loops, the update on every device at once and deterministic mode's
// exchange.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"

namespace tandem::detail {

// calibrate's all-reduce sweep between ranks (measurements.allreduce_sweep): sizes ascending,
// each with its float32 and bf16 seconds, and its deterministic seconds (back to back and
// cold) on every size or none (profiles from before calibrate measured them).
std::vector<AllreduceAlone> allreduce_sweep(const nlohmann::json& j, const std::string& where);

// device.conv_shapes: each shape and its primitives' seconds per sample (conv_shape_to_json's
// form).
std::vector<ConvShapeSeconds> conv_shapes(const nlohmann::json& j, const std::string& where);

// device.bf16_loops: ascending in floats, each loop's seconds per float > 0.
std::vector<Bf16LoopSeconds> bf16_loops(const nlohmann::json& j, const std::string& where);

// device.update_contention and the devices it ran on, where the device section `dj` (named
// `where`) has them: ascending in bytes, 2 or more devices.
void read_update_contention(const nlohmann::json& dj, const std::string& where,
                            DeviceProfile& device);

// device.deterministic_exchange, its devices and its shards, where `dj` has them.
void read_deterministic_exchange(const nlohmann::json& dj, const std::string& where,
                                 DeviceProfile& device);

// device.host_exchange and its devices, where `dj` has them: ascending in bytes, 2 or more
// devices.
void read_host_exchange(const nlohmann::json& dj, const std::string& where, DeviceProfile& device);

// device.allreduce_exchange and its devices, where `dj` has them: ascending in bytes, 2 or more
// devices, each needing the other.
void read_allreduce_exchange(const nlohmann::json& dj, const std::string& where,
                             DeviceProfile& device);

}  // namespace tandem::detail
