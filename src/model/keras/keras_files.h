// Keras 3's files: a whole model as .keras (a zip of config.json, metadata.json and
// model.weights.h5, optimizer state included) and weights alone as .weights.h5 (layer
// variables, and the optimizer's when the model is compiled, as Keras's save_weights
// writes them). The suffix picks the format (Model::save / load); built without libzip and
// libhdf5, each of these is a ConfigError saying so.
#pragma once

#include <string>

#include "tandem/model.h"

namespace tandem::detail {

inline bool has_suffix(const std::string& path, const std::string& suffix) {
  if (path.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    const char c = path[path.size() - suffix.size() + i];
    if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != suffix[i]) return false;
  }
  return true;
}
inline bool is_keras_model_path(const std::string& path) {
  return has_suffix(path, ".keras");
}
inline bool is_keras_weights_path(const std::string& path) {
  return has_suffix(path, ".weights.h5");
}
// Keras 2's whole-model HDF5 (model.save("x.h5")): read, never written.
inline bool is_legacy_h5_path(const std::string& path) {
  return !is_keras_weights_path(path) && (has_suffix(path, ".h5") || has_suffix(path, ".hdf5"));
}

// Whether this build reads and writes them.
bool keras_files_available();

void save_keras_model(const Model& model, const std::string& path);
// compile: read the compile config and the optimizer state too (else neither is read).
Model load_keras_model(const std::string& path, bool compile = true);
// A Keras 2 (or Keras 3 legacy-writer) whole-model .h5: architecture, weights, compile config
// and optimizer state.
Model load_legacy_h5_model(const std::string& path, bool compile = true);
// Keras 2's save_weights("x.h5") (or a whole-model .h5's weights): matched to the model's
// layers by order, as Keras's load_weights does; the optimizer state is left as it is.
void load_legacy_h5_weights(Model& model, const std::string& path);
void save_keras_weights(const Model& model, const std::string& path);
// From a .weights.h5 file, or the model.weights.h5 of a .keras file (as Keras's load_weights).
void load_keras_weights(Model& model, const std::string& path);

}  // namespace tandem::detail
