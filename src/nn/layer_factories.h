// Constructors from saved configs, one per layer type (used by layer_from_config).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "nn/layer.h"

namespace tandem::detail {

std::shared_ptr<LayerImpl> input_layer_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> dense_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> activation_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> dropout_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> flatten_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> add_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> concatenate_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> conv2d_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> max_pooling2d_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> average_pooling2d_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> global_average_pooling2d_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> zero_padding2d_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> reshape_from_config(const nlohmann::json& config);
std::shared_ptr<LayerImpl> batch_normalization_from_config(const nlohmann::json& config);

}  // namespace tandem::detail
