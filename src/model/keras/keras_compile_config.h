// Keras's compile config to tandem's optimizer, loss and metrics, and back: SGD, RMSprop and
// Adam with every Keras option tandem implements; a schedule or an option tandem lacks is an
// error naming it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/keras/keras_json.h"
#include "nn/loss.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

struct KerasCompile {
  Optimizer optimizer;
  std::string loss;
  std::vector<std::string> metrics;
  // Keras 2's wrapped accuracy ({"name": "accuracy", "fn": "binary_accuracy"}): the one
  // Keras computed under that name, whatever the shapes would pick now.
  std::optional<AccuracyKind> accuracy_kind;
};

// compile_config (null: an uncompiled model).
std::optional<KerasCompile> compile_from_keras(const nlohmann::json& compile_config,
                                               const keras_json::Where& w);
nlohmann::json keras_compile_config(const KerasCompile& compile);

}  // namespace tandem::detail
