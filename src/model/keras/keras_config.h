// Keras 3's config.json (the model's get_config() tree and its compile config) to and from
// tandem's architecture: the same layers, their configs translated key by key. A Keras
// option tandem lacks is an error naming the layer (name and class) and the option; a
// Keras key tandem does not know passes only while it holds Keras's "off" value (null,
// false or 0), so a newer Keras's additions read while unused.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/graph.h"
#include "model/keras/keras_compile_config.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

// Where a layer's variables live in model.weights.h5: "layers/<snake_case(class)>", with
// _1, _2, ... for later layers of the same class, over the model's layers in Keras's order
// (a Sequential's InputLayer is not one of them). Keras's trainable variables, which the
// optimizer's slots follow, are these layers' in the same order.
struct KerasLayerPath {
  std::string layer;  // the layer's name
  std::string group;  // "layers/conv2d_1"
};

struct KerasModel {
  std::string name;
  nlohmann::json architecture;  // Graph::nodes_from_json's form
  std::vector<KerasLayerPath> paths;
  std::optional<KerasCompile> compile;
};

// config.json's tree as tandem's; errors name `path` and `source`, the part of the file
// the tree came from.
KerasModel model_from_keras_config(const nlohmann::json& config, const std::string& path,
                                   const std::string& source = "config.json");

// A whole-model .h5 file's model_config and training_config (null when absent), as Keras 2
// and Keras 3's legacy writer store them, as the config.json tree model_from_keras_config
// reads: Keras 2's nested-list inbound nodes become args, its optimizer_config (class
// "Custom>SGD") and wrapped metrics the compile config's.
nlohmann::json config_from_legacy_h5(const nlohmann::json& model_config,
                                     const nlohmann::json& training_config);

// The Functional model Keras builds from `graph`, with `compile` as its compile config.
nlohmann::json keras_config(const Graph& graph, const std::string& name,
                            const std::optional<KerasCompile>& compile);
// The weight groups of the layers of `graph`, in its order (Keras's for the same graph).
std::vector<KerasLayerPath> keras_layer_paths(const Graph& graph);

}  // namespace tandem::detail
