#include "model/keras/keras_files.h"

#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "model/container.h"
#include "model/keras/h5_file.h"
#include "model/keras/keras_config.h"
#include "model/keras/zip_archive.h"
#include "model/model_state.h"
#include "nn/loss.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 64 * kMiB;
const char* const kWeightsEntry = "model.weights.h5";
// The Keras release whose files these are checked against (tests/keras): what
// metadata.json says wrote the file's format.
const char* const kKerasFormatVersion = "3.15.1";

// The variables of a model as Keras stores them: per layer (Keras's order), then the
// optimizer's iterations, learning rate and per trainable variable each slot.
struct Variables {
  std::vector<std::vector<float>> layers;  // by Graph::params index
  bool optimizer = false;
  int64_t iterations = 0;
  double learning_rate = 0;
  std::vector<std::vector<float>> slots;  // [slot * trainable + j]
};

std::map<std::string, const LayerEntry*> layers_by_name(const Graph& graph) {
  std::map<std::string, const LayerEntry*> out;
  for (const LayerEntry& e : graph.layers()) out[e.layer->name] = &e;
  return out;
}

// Keras's trainable variables: the trainable params of the layers in `paths` order.
std::vector<int> trainable_params(const Graph& graph, const std::vector<KerasLayerPath>& paths) {
  const auto by_name = layers_by_name(graph);
  std::vector<int> out;
  for (const KerasLayerPath& p : paths) {
    for (int pi : by_name.at(p.layer)->params) {
      if (graph.params()[pi].spec.trainable) out.push_back(pi);
    }
  }
  return out;
}

void write_variables(const ModelState& s, const std::vector<KerasLayerPath>& paths, H5Writer& h5) {
  const Graph& g = *s.graph;
  const auto by_name = layers_by_name(g);
  for (const KerasLayerPath& p : paths) {
    const LayerEntry& e = *by_name.at(p.layer);
    h5.group(p.group + "/vars", p.layer);
    for (size_t k = 0; k < e.params.size(); ++k) {
      const ParamEntry& pe = g.params()[e.params[k]];
      h5.floats(p.group + "/vars/" + std::to_string(k), pe.spec.shape, s.params.data() + pe.offset);
    }
  }
  if (s.compiled) {
    h5.group("optimizer/vars", s.compiled->optimizer.name);
    h5.integer("optimizer/vars/0", s.iterations);
    h5.scalar("optimizer/vars/1", static_cast<float>(s.learning_rate));
    const std::vector<int> trainable = trainable_params(g, paths);
    const size_t slots = s.optimizer_state.size();
    for (size_t j = 0; j < trainable.size(); ++j) {
      const ParamEntry& pe = g.params()[trainable[j]];
      for (size_t k = 0; k < slots; ++k) {
        h5.floats("optimizer/vars/" + std::to_string(2 + j * slots + k), pe.spec.shape,
                  s.optimizer_state[k].data() + pe.offset);
      }
    }
  }
  h5.group("vars", s.name);
}

// Everything read before anything is changed, so a failure leaves the model as it was.
Variables read_variables(const ModelState& s, const std::vector<KerasLayerPath>& paths,
                         const H5Reader& h5, const std::string& path, bool with_optimizer) {
  const Graph& g = *s.graph;
  const auto by_name = layers_by_name(g);
  Variables v;
  v.layers.resize(g.params().size());
  for (const KerasLayerPath& p : paths) {
    const LayerEntry& e = *by_name.at(p.layer);
    const std::string vars = p.group + "/vars";
    const int64_t held = h5.children(vars);
    if (held != static_cast<int64_t>(e.params.size())) {
      throw FormatError(path, "HDF5 group '" + vars + "' holds " + std::to_string(held) +
                                  " variables but layer '" + p.layer + "' (" + e.layer->type() +
                                  ") has " + std::to_string(e.params.size()) +
                                  " (a different architecture)");
    }
    for (size_t k = 0; k < e.params.size(); ++k) {
      const ParamEntry& pe = g.params()[e.params[k]];
      v.layers[e.params[k]] = h5.read_floats(vars + "/" + std::to_string(k), pe.spec.shape);
    }
  }
  if (!with_optimizer || !s.compiled || !h5.exists("optimizer/vars")) return v;
  const std::vector<int> trainable = trainable_params(g, paths);
  const int64_t slots = static_cast<int64_t>(s.optimizer_state.size());
  const int64_t held = h5.children("optimizer/vars");
  const int64_t expected = 2 + static_cast<int64_t>(trainable.size()) * slots;
  if (held != 2 && held != expected) {
    throw FormatError(path, "HDF5 group 'optimizer/vars' holds " + std::to_string(held) +
                                " variables; " + s.compiled->optimizer.name + " on this model's " +
                                std::to_string(trainable.size()) + " trainable weights has " +
                                std::to_string(expected) + " (a different optimizer?)");
  }
  v.optimizer = true;
  v.iterations = h5.read_integer("optimizer/vars/0");
  if (v.iterations < 0) {
    throw FormatError(path, "HDF5 object 'optimizer/vars/0' (iterations) is " +
                                std::to_string(v.iterations) + ", below 0");
  }
  v.learning_rate = h5.read_float("optimizer/vars/1");
  if (!std::isfinite(v.learning_rate) || !(v.learning_rate > 0)) {
    throw FormatError(path, "HDF5 object 'optimizer/vars/1' (learning rate) is " +
                                std::to_string(v.learning_rate) + ", not > 0");
  }
  if (held == 2) return v;  // compiled, never trained: accumulators at zero
  v.slots.resize(trainable.size() * slots);
  for (size_t j = 0; j < trainable.size(); ++j) {
    const ParamEntry& pe = g.params()[trainable[j]];
    for (int64_t k = 0; k < slots; ++k) {
      v.slots[k * trainable.size() + j] =
          h5.read_floats("optimizer/vars/" + std::to_string(2 + j * slots + k), pe.spec.shape);
    }
  }
  return v;
}

void apply_variables(ModelState& s, const std::vector<KerasLayerPath>& paths, Variables v) {
  const Graph& g = *s.graph;
  for (size_t i = 0; i < g.params().size(); ++i) {
    if (v.layers[i].empty() && g.params()[i].size > 0) continue;
    std::copy(v.layers[i].begin(), v.layers[i].end(), s.params.data() + g.params()[i].offset);
  }
  if (!v.optimizer) return;
  s.iterations = v.iterations;
  s.learning_rate = v.learning_rate;
  const std::vector<int> trainable = trainable_params(g, paths);
  for (auto& slot : s.optimizer_state) std::fill(slot.data(), slot.data() + slot.size(), 0.f);
  for (size_t k = 0; k < s.optimizer_state.size() && !v.slots.empty(); ++k) {
    for (size_t j = 0; j < trainable.size(); ++j) {
      const auto& values = v.slots[k * trainable.size() + j];
      std::copy(values.begin(), values.end(),
                s.optimizer_state[k].data() + g.params()[trainable[j]].offset);
    }
  }
  s.train_on_batch_cache.reset();
}

// An upper bound on model.weights.h5 for `graph`: its floats (weights and up to three
// optimizer slots), plus HDF5's headers per object and file.
uint64_t weights_file_bound(const Graph& graph) {
  const uint64_t floats = static_cast<uint64_t>(graph.param_buffer_size());
  const uint64_t objects = 4 * (graph.layers().size() + 4 * graph.params().size()) + 16;
  return 16 * floats + objects * 8192 + 4 * kMiB;
}

std::string date_saved() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d@%H:%M:%S", &tm);
  return text;
}

std::optional<KerasCompile> compile_of(const ModelState& s) {
  if (!s.compiled) return std::nullopt;
  return KerasCompile{s.compiled->optimizer, loss_name(s.compiled->loss.kind()),
                      s.compiled->metrics};
}

std::string weights_image(const ModelState& s, const std::vector<KerasLayerPath>& paths) {
  H5Writer h5;
  write_variables(s, paths, h5);
  return h5.image();
}

}  // namespace

bool keras_files_available() {
  return true;
}

void save_keras_model(const Model& model, const std::string& path) {
  const ModelState& s = model.state();
  const json config = keras_config(*s.graph, s.name, compile_of(s));
  const json metadata = {{"keras_version", kKerasFormatVersion}, {"date_saved", date_saved()}};
  const std::string weights = weights_image(s, keras_layer_paths(*s.graph));
  write_file_atomically(path, zip_archive({{"metadata.json", metadata.dump()},
                                           {"config.json", config.dump()},
                                           {kWeightsEntry, weights}}));
}

namespace {

// The model `keras` describes, compiled as its file says, its weights not yet set; `bound`
// receives what its weights file can hold at most. `held` is what the file's weights part
// (`part`) holds: an architecture whose weights need more is refused before its parameter
// buffer is allocated.
Model build_keras_model(const KerasModel& keras, const std::string& path, const std::string& source,
                        uint64_t held, const std::string& part, uint64_t& bound) {
  std::pair<Node, Node> io;
  try {
    io = Graph::nodes_from_json(keras.architecture);
    const Graph graph(io.first, io.second);
    bound = weights_file_bound(graph);
    uint64_t floats = 0;
    for (const ParamEntry& p : graph.params()) floats += static_cast<uint64_t>(p.size);
    if (floats * sizeof(float) > held) {
      throw FormatError(path, source + " describes " + std::to_string(floats) + " weights (" +
                                  std::to_string(floats * sizeof(float)) + " bytes) but " + part +
                                  " holds " + std::to_string(held) +
                                  " bytes: the file is damaged or its parts do not match");
    }
  } catch (const json::exception& e) {
    throw FormatError(path, source + ": " + e.what());
  } catch (const ConfigError& e) {
    throw FormatError(path, source + ": " + e.what());
  } catch (const ShapeError& e) {
    throw FormatError(path, source + ": " + e.what());
  }
  Model model = allocating(path, "the parameters of model '" + keras.name + "'", bound,
                           [&] { return Model(io.first, io.second, keras.name); });
  // Every layer the file lists is one the model computes with (Keras lists no others).
  const auto in_graph = layers_by_name(*model.state().graph);
  for (const KerasLayerPath& p : keras.paths) {
    if (!in_graph.count(p.layer)) {
      throw FormatError(path, source + ": layer '" + p.layer +
                                  "' is not on the way from the input to the output");
    }
  }
  if (keras.compile) {
    try {
      model.compile(keras.compile->optimizer, keras.compile->loss, keras.compile->metrics);
    } catch (const ConfigError& e) {
      throw FormatError(path, source + ": compile_config: " + e.what() +
                                  " (load with compile=False to read the model without it)");
    }
    // Keras 2's wrapped metric named the accuracy it computed: that one, under its name.
    if (keras.compile->accuracy_kind) {
      model.state().compiled->accuracy_kind = *keras.compile->accuracy_kind;
    }
  }
  return model;
}

// How the layers of a Keras 2 weights group are matched to the model's.
enum class LegacyMatch {
  by_name,   // each group is the model's layer of that name: the file's own architecture
  by_order,  // the k-th group with weights is the model's k-th layer with weights, as
             // Keras's load_weights matches them (a model built again names layers anew)
};

// Keras 2's layer weights under `root` ("model_weights" in a whole-model .h5, "/" in what
// save_weights("x.h5") writes): the groups its layer_names attribute lists, each holding
// its layer's weights at <group>/<weight name> in its weight_names order.
std::vector<std::vector<float>> read_legacy_layers(const Graph& g, const H5Reader& h5,
                                                   const std::string& root, const std::string& path,
                                                   LegacyMatch match) {
  const auto by_name = layers_by_name(g);
  std::vector<const LayerEntry*> with_weights;
  for (const LayerEntry& e : g.layers()) {
    if (!e.params.empty()) with_weights.push_back(&e);
  }
  // The file's groups that hold weights, each with the model's layer it belongs to: all
  // matched (and counted) before a dataset is read.
  struct Group {
    std::string path;
    std::vector<std::string> names;
    const LayerEntry* layer = nullptr;
  };
  std::vector<Group> groups;
  const std::string prefix = root == "/" ? "" : root + "/";
  for (const std::string& layer : h5.strings_attribute(root, "layer_names")) {
    Group group{prefix + layer, {}, nullptr};
    group.names = h5.strings_attribute(group.path, "weight_names");
    if (match == LegacyMatch::by_name) {
      const auto found = by_name.find(layer);
      if (found == by_name.end()) {
        if (group.names.empty()) continue;
        throw FormatError(path, "HDF5 group '" + group.path + "' holds weights of a layer '" +
                                    layer + "' that model_config does not have");
      }
      group.layer = found->second;
    } else if (group.names.empty()) {
      continue;
    }
    groups.push_back(std::move(group));
  }
  if (match == LegacyMatch::by_order) {
    if (groups.size() != with_weights.size()) {
      throw FormatError(path, "HDF5 group '" + root + "' holds the weights of " +
                                  std::to_string(groups.size()) + " layers; the model has " +
                                  std::to_string(with_weights.size()) +
                                  " layers with weights (a different architecture)");
    }
    for (size_t k = 0; k < groups.size(); ++k) groups[k].layer = with_weights[k];
  }
  for (const Group& group : groups) {
    const LayerEntry& e = *group.layer;
    if (group.names.size() != e.params.size()) {
      throw FormatError(path, "HDF5 group '" + group.path + "' lists " +
                                  std::to_string(group.names.size()) + " weights but layer '" +
                                  e.layer->name + "' (" + e.layer->type() + ") has " +
                                  std::to_string(e.params.size()));
    }
  }
  std::vector<std::vector<float>> out(g.params().size());
  std::map<std::string, bool> seen;
  for (const Group& group : groups) {
    const LayerEntry& e = *group.layer;
    for (size_t i = 0; i < group.names.size(); ++i) {
      const ParamEntry& pe = g.params()[e.params[i]];
      out[e.params[i]] = h5.read_floats(group.path + "/" + group.names[i], pe.spec.shape);
    }
    seen[e.layer->name] = true;
  }
  for (const LayerEntry* e : with_weights) {
    if (!seen.count(e->layer->name)) {
      throw FormatError(path, "HDF5 group '" + root + "' has no weights for layer '" +
                                  e->layer->name + "' (" + e->layer->type() + ")");
    }
  }
  return out;
}

// Keras 2's whole-model .h5: the layers' weights (read_legacy_layers, by name), and the
// optimizer's variables at optimizer_weights/<name> in optimizer.variables order
// (iterations, then Keras 3's learning rate, which Keras 2 does not store, then the slots
// as in .keras files).
Variables read_legacy_variables(const ModelState& s, const std::vector<KerasLayerPath>& paths,
                                const H5Reader& h5, const std::string& path) {
  const Graph& g = *s.graph;
  Variables v;
  v.layers = read_legacy_layers(g, h5, "model_weights", path, LegacyMatch::by_name);
  if (!s.compiled || !h5.exists("optimizer_weights")) return v;
  const std::vector<std::string> names = h5.strings_attribute("optimizer_weights", "weight_names");
  const std::vector<int> trainable = trainable_params(g, paths);
  const size_t slots = s.optimizer_state.size();
  const size_t fixed =
      names.size() > 1 && names[1].find("learning_rate") != std::string::npos ? 2 : 1;
  if (names.empty() || names.size() != fixed + trainable.size() * slots) {
    throw FormatError(path, "HDF5 group 'optimizer_weights' lists " + std::to_string(names.size()) +
                                " variables; " + s.compiled->optimizer.name + " on this model's " +
                                std::to_string(trainable.size()) + " trainable weights has " +
                                std::to_string(fixed + trainable.size() * slots));
  }
  v.optimizer = true;
  v.iterations = h5.read_integer("optimizer_weights/" + names[0]);
  v.learning_rate = fixed == 2 ? h5.read_float("optimizer_weights/" + names[1])
                               : s.compiled->optimizer.learning_rate;
  if (v.iterations < 0 || !std::isfinite(v.learning_rate) || !(v.learning_rate > 0)) {
    throw FormatError(path, "HDF5 group 'optimizer_weights': iterations " +
                                std::to_string(v.iterations) + " or learning rate " +
                                std::to_string(v.learning_rate) + " out of range");
  }
  v.slots.resize(trainable.size() * slots);
  for (size_t j = 0; j < trainable.size(); ++j) {
    const ParamEntry& pe = g.params()[trainable[j]];
    for (size_t k = 0; k < slots; ++k) {
      v.slots[k * trainable.size() + j] =
          h5.read_floats("optimizer_weights/" + names[fixed + j * slots + k], pe.spec.shape);
    }
  }
  return v;
}

// The translation of a Keras config, with any JSON type or range error it meets (a key of
// the wrong type the translator did not check first) as a FormatError naming the part.
template <class F>
KerasModel translated(const std::string& path, const char* source, F&& translate) {
  try {
    return translate();
  } catch (const json::exception& e) {
    throw FormatError(path, std::string(source) + ": " + e.what());
  }
}

}  // namespace

Model load_keras_model(const std::string& path, bool compile) {
  const ZipReader zip(read_regular_file(path, kMaxContainerBytes, "Keras model (.keras)"), path);
  json config;
  try {
    config = json::parse(zip.read("config.json", kMaxConfigBytes));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a huge number
    throw FormatError(path, std::string("zip entry 'config.json' is not JSON: ") + e.what());
  }
  if (!compile && config.is_object()) config.erase("compile_config");
  const KerasModel keras =
      translated(path, "config.json", [&] { return model_from_keras_config(config, path); });
  if (!zip.contains(kWeightsEntry)) {
    throw FormatError(path, "has no zip entry 'model.weights.h5' (not a Keras 3 .keras file?)");
  }
  uint64_t bound = 0;
  Model model = build_keras_model(keras, path, "config.json", zip.declared_size(kWeightsEntry),
                                  "zip entry 'model.weights.h5'", bound);
  const std::string weights = zip.read(kWeightsEntry, bound);
  ModelState& s = model.state();
  const H5Reader h5(weights, path, "zip entry 'model.weights.h5'");
  apply_variables(s, keras.paths, read_variables(s, keras.paths, h5, path, true));
  return model;
}

Model load_legacy_h5_model(const std::string& path, bool compile) {
  const std::string bytes = read_regular_file(path, kMaxContainerBytes, "Keras .h5 model");
  const H5Reader h5(bytes, path, "HDF5 file");
  const auto text = h5.string_attribute("/", "model_config");
  if (!text) {
    throw FormatError(path,
                      "has no model_config attribute: not a Keras whole-model .h5 (a "
                      "weights-only .h5 is read by load_weights into a model built first)");
  }
  json model_config, training_config;
  try {
    model_config = json::parse(*text);
    const auto training = h5.string_attribute("/", "training_config");
    if (compile && training) {
      training_config = json::parse(*training);
    }
  } catch (const json::exception& e) {
    throw FormatError(path,
                      std::string("model_config or training_config is not JSON: ") + e.what());
  }
  const KerasModel keras = translated(path, "model_config", [&] {
    return model_from_keras_config(config_from_legacy_h5(model_config, training_config), path,
                                   "model_config");
  });
  uint64_t bound = 0;
  Model model = build_keras_model(keras, path, "model_config", bytes.size(), "the file", bound);
  ModelState& s = model.state();
  apply_variables(s, keras.paths, read_legacy_variables(s, keras.paths, h5, path));
  return model;
}

void load_legacy_h5_weights(Model& model, const std::string& path) {
  ModelState& s = model.state();
  const std::string bytes = read_regular_file(path, weights_file_bound(*s.graph), "Keras 2 .h5");
  const H5Reader h5(bytes, path, "HDF5 file");
  // Keras's rule: the weights at the root (save_weights), else a whole model's.
  std::string root = "/";
  if (!h5.has_attribute("/", "layer_names")) {
    if (!h5.exists("model_weights")) {
      throw FormatError(path,
                        "holds no Keras 2 weights (no layer_names attribute and no "
                        "model_weights group)");
    }
    root = "model_weights";
  }
  Variables v;
  v.layers = read_legacy_layers(*s.graph, h5, root, path, LegacyMatch::by_order);
  apply_variables(s, {}, std::move(v));
}

void save_keras_weights(const Model& model, const std::string& path) {
  const ModelState& s = model.state();
  write_file_atomically(path, weights_image(s, keras_layer_paths(*s.graph)));
}

void load_keras_weights(Model& model, const std::string& path) {
  ModelState& s = model.state();
  const uint64_t bound = weights_file_bound(*s.graph);
  const bool archive = is_keras_model_path(path);
  const std::string bytes =
      archive ? ZipReader(read_regular_file(path, kMaxContainerBytes, "Keras model (.keras)"), path)
                    .read(kWeightsEntry, bound)
              : read_regular_file(path, bound, "Keras weights file (.weights.h5)");
  const H5Reader h5(bytes, path, archive ? "zip entry 'model.weights.h5'" : "HDF5 file");
  const auto paths = keras_layer_paths(*s.graph);
  apply_variables(s, paths, read_variables(s, paths, h5, path, true));
}

}  // namespace tandem::detail
