// One layer's config, Keras's to tandem's and back: the keys each layer type reads, the
// Keras options it implements only at one value, initializers as Keras's objects, and the
// dtype policy (float32 only).
#pragma once

#include "model/keras/keras_json.h"
#include "nn/layer.h"

namespace tandem::detail {

// A Keras layer config as tandem's layer_from_config reads it; an option tandem lacks is
// an error naming the layer (`w`) and the option.
nlohmann::json layer_config_from_keras(const std::string& type, const nlohmann::json& keras,
                                       const keras_json::Where& w);
// tandem's layer config as Keras writes it: every key, tandem's values where it has them.
nlohmann::json keras_layer_config(const LayerImpl& layer, const Shape& input_shape);
// (null, d0, d1, ...): a shape with Keras's batch axis.
nlohmann::json shape_with_batch(const Shape& shape);

}  // namespace tandem::detail
