// Model::save / load / save_weights / load_weights over the container format; a .keras or
// .weights.h5 path goes to Keras 3's format (model/keras/keras_files.h) instead.
//   weights file: {"kind": "weights", "weights": [{"layer", "name", "shape"}...]}
//                 sections "w0", "w1", ... in get_weights() order
//   model file:   {"kind": "model", "name", "architecture", "compile": {...}, "iterations",
//                  "learning_rate"} + the weight sections + "optimizer/<slot>" sections
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/input_file.h"
#include "model/container.h"
#include "model/graph.h"
#include "model/keras/keras_files.h"
#include "model/model_state.h"
#include "tandem/error.h"
#include "tandem/model.h"

namespace tandem {
namespace {

using nlohmann::json;

void add_weights(const detail::ModelState& s, const std::vector<Tensor>& weights,
                 detail::Container& c) {
  json list = json::array();
  for (size_t i = 0; i < weights.size(); ++i) {
    const auto& e = s.graph->params()[i];
    list.push_back({{"layer", s.graph->layers()[e.layer_index].layer->name},
                    {"name", e.spec.name},
                    {"shape", e.spec.shape}});
    c.sections.push_back(
        {"w" + std::to_string(i),
         std::vector<float>(weights[i].data(), weights[i].data() + weights[i].size())});
  }
  c.header["weights"] = list;
}

// The file's weights as tensors, checked against the model's layout: count, then each
// shape, with the layer named on a mismatch.
// `source`, when given, receives for each of the model's params the index of the file's
// entry it was read from.
std::vector<Tensor> read_weights(const detail::Graph& graph, const std::string& model_name,
                                 const detail::Container& c, const std::string& path,
                                 std::vector<size_t>* source_out = nullptr) {
  const auto& params = graph.params();
  const json list = c.header.value("weights", json::array());
  if (!list.is_array()) throw FormatError(path, 16, "'weights' is not a list");
  if (list.size() != params.size()) {
    throw ShapeError(path + ": holds " + std::to_string(list.size()) +
                     " weight arrays but model '" + model_name + "' has " +
                     std::to_string(params.size()) + " (a different architecture)");
  }
  // Each entry names its layer and weight: matched by them, so a file written when tandem
  // ordered a branching graph's layers differently still loads each weight where it
  // belongs; by position where a file's names do not cover the model's one to one.
  std::map<std::pair<std::string, std::string>, size_t> by_name;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    if (entry.is_object() && entry.value("layer", json()).is_string() &&
        entry.value("name", json()).is_string()) {
      by_name.emplace(
          std::make_pair(entry.at("layer").get<std::string>(), entry.at("name").get<std::string>()),
          i);
    }
  }
  std::vector<size_t> source(params.size());
  bool named = by_name.size() == params.size();
  for (size_t i = 0; i < params.size() && named; ++i) {
    const auto found =
        by_name.find({graph.layers()[params[i].layer_index].layer->name, params[i].spec.name});
    named = found != by_name.end();
    if (named) source[i] = found->second;
  }
  for (size_t i = 0; i < params.size() && !named; ++i) source[i] = i;
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& e = params[i];
    const std::string layer = graph.layers()[e.layer_index].layer->name;
    Shape shape;
    const json& entry = list[source[i]];
    const bool valid = entry.is_object() && entry.contains("shape") &&
                       entry.at("shape").is_array() &&
                       std::all_of(entry.at("shape").begin(), entry.at("shape").end(),
                                   [](const json& d) { return d.is_number_integer(); });
    if (!valid) {
      throw FormatError(path, 0, "weight entry " + std::to_string(i) + " has no valid shape");
    }
    shape = entry.at("shape").get<Shape>();
    auto text = [&](const char* key) {
      return entry.contains(key) && entry.at(key).is_string() ? entry.at(key).get<std::string>()
                                                              : std::string("?");
    };
    if (shape != e.spec.shape) {
      throw ShapeError(path + ": weight " + std::to_string(i) + " (" + text("layer") + "/" +
                       text("name") + ") has shape " + shape_to_string(shape) + " but layer '" +
                       layer + "' " + e.spec.name + " needs " + shape_to_string(e.spec.shape) +
                       " (a different architecture)");
    }
    const auto& values = c.section("w" + std::to_string(source[i]), path).values;
    if (static_cast<int64_t>(values.size()) != e.size) {
      throw FormatError(path, 0,
                        "weight " + std::to_string(i) + " has " + std::to_string(values.size()) +
                            " values for shape " + shape_to_string(shape));
    }
    out.push_back(allocating(path, "weight " + std::to_string(i) + " of layer '" + layer + "'",
                             values.size() * sizeof(float), [&] { return Tensor(shape, values); }));
  }
  if (source_out) *source_out = std::move(source);
  return out;
}

// Where each of the file's weights sat in the flat buffer of the model that wrote it (the
// layout of Graph::layout_params over the file's order: a layer's weights back to back,
// each layer from a 64-byte line), and that buffer's size. Call after read_weights.
std::vector<int64_t> file_offsets(const json& list, int64_t& buffer) {
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  std::string layer;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string l = list[i].value("layer", "");
    if (i == 0 || l != layer) {
      offset = (offset + detail::kParamAlignFloats - 1) / detail::kParamAlignFloats *
               detail::kParamAlignFloats;
    }
    layer = l;
    offsets.push_back(offset);
    offset += shape_size(list[i].at("shape").get<Shape>());
  }
  buffer = (offset + detail::kParamAlignFloats - 1) / detail::kParamAlignFloats *
           detail::kParamAlignFloats;
  return offsets;
}

// What the architecture implies must be what the file holds, before anything is built from
// it: the parameter count (computed overflow-free by the graph) against the floats of the
// weight sections, and each optimizer section against the parameter buffer.
void check_sizes_against_file(const detail::Graph& graph, const detail::Container& c,
                              const std::string& path) {
  uint64_t weight_floats = 0;
  for (size_t i = 0; i < graph.params().size(); ++i) {
    for (const detail::Section& s : c.sections) {
      if (s.name == "w" + std::to_string(i)) {
        weight_floats += s.values.size();
        break;
      }
    }
  }
  if (weight_floats != static_cast<uint64_t>(graph.param_count())) {
    const auto& params = graph.params();
    const auto largest = std::max_element(params.begin(), params.end(),
                                          [](auto& a, auto& b) { return a.size < b.size; });
    throw FormatError(
        path, 16,
        "the architecture implies " + std::to_string(graph.param_count()) + " parameters" +
            (largest != params.end()
                 ? " (layer '" + graph.layers()[largest->layer_index].layer->name + "' " +
                       largest->spec.name + " alone " + std::to_string(largest->size) + ")"
                 : std::string()) +
            " but the file's weight sections hold " + std::to_string(weight_floats) +
            " floats; the file is damaged or not a model");
  }
  // Each optimizer section is a flat buffer of the writer's layout (checked against it once
  // the weights are read); it cannot exceed the weights' floats with every layer padded.
  const uint64_t most =
      weight_floats + static_cast<uint64_t>(graph.params().size() + 1) * detail::kParamAlignFloats;
  for (const detail::Section& s : c.sections) {
    if (s.name.rfind("optimizer/", 0) == 0 && s.values.size() > most) {
      throw FormatError(path, 16,
                        "section '" + s.name + "' has " + std::to_string(s.values.size()) +
                            " values, more than the architecture's parameter buffer can hold");
    }
  }
}

// Keras 2's .h5 is read (load, load_weights), never written: tandem's format under that name
// would make a file Keras cannot read, and Keras 3 writes no .h5 either.
[[noreturn]] void refuse_legacy_h5(const std::string& path, const char* what) {
  throw ConfigError(path + ": " + what +
                    " does not write Keras 2's .h5 format (tandem reads it: load and "
                    "load_weights); use Keras 3's .keras or .weights.h5, or .tandem");
}

uint64_t weights_bytes(const std::vector<Tensor>& weights) {
  uint64_t floats = 0;
  for (const Tensor& w : weights) floats += static_cast<uint64_t>(w.size());
  return floats * sizeof(float);
}

Model load_model(const detail::Container& c, const std::string& path, bool compile) {
  std::pair<Node, Node> io;
  std::vector<Tensor> weights;
  std::vector<size_t> source;
  const std::string name = c.header.value("name", "model");
  try {
    io = detail::Graph::nodes_from_json(c.header.at("architecture"));
    // The layout alone (no parameter buffer yet) says how much the model needs.
    const detail::Graph graph(io.first, io.second);
    check_sizes_against_file(graph, c, path);
    weights = read_weights(graph, name, c, path, &source);
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("invalid architecture: ") + e.what());
  } catch (const ConfigError& e) {
    throw FormatError(path, 16, std::string("invalid architecture: ") + e.what());
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;  // read_weights's, naming the file already
    throw FormatError(path, 16, "invalid architecture: " + what);
  }
  Model model = allocating(path, "the parameters of model '" + name + "'", weights_bytes(weights),
                           [&] { return Model(io.first, io.second, name); });
  auto& s = model.state();
  model.set_weights(weights);
  if (compile && c.header.contains("compile")) {
    try {
      const json& cc = c.header.at("compile");
      const json& oj = cc.at("optimizer");
      Optimizer o;
      o.name = oj.at("name").get<std::string>();
      o.learning_rate = oj.at("learning_rate").get<double>();
      o.momentum = oj.at("momentum").get<double>();
      o.nesterov = oj.at("nesterov").get<bool>();
      o.rho = oj.at("rho").get<double>();
      o.beta_1 = oj.at("beta_1").get<double>();
      o.beta_2 = oj.at("beta_2").get<double>();
      o.epsilon = oj.at("epsilon").get<double>();
      try {
        allocating(path, "the optimizer state of model '" + name + "'", weights_bytes(weights) * 2,
                   [&] {
                     model.compile(o, cc.at("loss").get<std::string>(),
                                   cc.at("metrics").get<std::vector<std::string>>());
                   });
      } catch (const ConfigError& e) {
        throw ConfigError(std::string(e.what()) +
                          " (load with compile=False to read the model without its compile "
                          "section)");
      }
      const json& iterations = c.header.at("iterations");
      if (!iterations.is_number_integer() || iterations.get<int64_t>() < 0) {
        throw FormatError(path, 16,
                          "iterations must be a whole number >= 0, got " + iterations.dump());
      }
      s.iterations = iterations.get<int64_t>();
      s.learning_rate = c.header.at("learning_rate").get<double>();
      if (!std::isfinite(s.learning_rate) || !(s.learning_rate > 0)) {
        throw FormatError(path, 16,
                          "learning_rate must be > 0, got " + c.header.at("learning_rate").dump());
      }
    } catch (const json::exception& e) {
      throw FormatError(path, 16, std::string("invalid compile section: ") + e.what());
    } catch (const ConfigError& e) {
      throw FormatError(path, 16, std::string("invalid compile section: ") + e.what());
    }
    // Each slot from the writer's layout into this model's (the same unless the writer
    // ordered the layers differently).
    int64_t file_buffer = 0;
    const std::vector<int64_t> offsets = file_offsets(c.header.at("weights"), file_buffer);
    const auto& params = s.graph->params();
    for (size_t k = 0; k < s.optimizer_state.size(); ++k) {
      const auto& values = c.section("optimizer/" + std::to_string(k), path).values;
      if (static_cast<int64_t>(values.size()) != file_buffer) {
        throw FormatError(path, 0,
                          "optimizer slot " + std::to_string(k) + " has " +
                              std::to_string(values.size()) + " values, expected " +
                              std::to_string(file_buffer));
      }
      for (size_t i = 0; i < params.size(); ++i) {
        const auto from = values.begin() + offsets[source[i]];
        std::copy(from, from + params[i].size, s.optimizer_state[k].data() + params[i].offset);
      }
    }
  }
  return model;
}

}  // namespace

void Model::save_weights(const std::string& path) const {
  ensure_built();
  if (detail::is_keras_weights_path(path)) return detail::save_keras_weights(*this, path);
  if (detail::is_legacy_h5_path(path)) refuse_legacy_h5(path, "save_weights");
  detail::Container c;
  c.header["kind"] = "weights";
  add_weights(*state_, get_weights(), c);
  detail::write_container(path, std::move(c));
}

void Model::load_weights(const std::string& path) {
  ensure_built();
  if (detail::is_keras_weights_path(path) || detail::is_keras_model_path(path)) {
    return detail::load_keras_weights(*this, path);  // a .keras file's model.weights.h5
  }
  if (detail::is_legacy_h5_path(path)) return detail::load_legacy_h5_weights(*this, path);
  const auto c = detail::read_container(path, "");
  const std::string kind = c.header.value("kind", "");
  if (kind != "weights" && kind != "model") {
    throw FormatError(path, 16, "holds a '" + kind + "', expected weights or a model");
  }
  std::vector<Tensor> weights;
  try {
    weights = read_weights(*state_->graph, state_->name, c, path);
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("invalid weights list: ") + e.what());
  }
  set_weights(weights);
}

void Model::save(const std::string& path) const {
  ensure_built();
  if (detail::is_keras_model_path(path)) return detail::save_keras_model(*this, path);
  if (detail::is_legacy_h5_path(path)) refuse_legacy_h5(path, "save");
  const auto& s = *state_;
  detail::Container c;
  c.header["kind"] = "model";
  c.header["name"] = s.name;
  c.header["architecture"] = s.graph->to_json();
  if (s.compiled) {
    const Optimizer& o = s.compiled->optimizer;
    c.header["compile"] = {{"optimizer",
                            {{"name", o.name},
                             {"learning_rate", o.learning_rate},
                             {"momentum", o.momentum},
                             {"nesterov", o.nesterov},
                             {"rho", o.rho},
                             {"beta_1", o.beta_1},
                             {"beta_2", o.beta_2},
                             {"epsilon", o.epsilon}}},
                           {"loss", detail::loss_name(s.compiled->loss.kind())},
                           {"metrics", s.compiled->metrics}};
    c.header["iterations"] = s.iterations;
    c.header["learning_rate"] = s.learning_rate;
  }
  add_weights(s, get_weights(), c);
  for (size_t k = 0; k < s.optimizer_state.size(); ++k) {
    const auto& slot = s.optimizer_state[k];
    c.sections.push_back({"optimizer/" + std::to_string(k),
                          std::vector<float>(slot.data(), slot.data() + slot.size())});
  }
  detail::write_container(path, std::move(c));
}

Model Model::load(const std::string& path, const LoadOptions& options) {
  if (detail::is_keras_model_path(path)) return detail::load_keras_model(path, options.compile);
  if (detail::is_legacy_h5_path(path)) return detail::load_legacy_h5_model(path, options.compile);
  const auto c = detail::read_container(path, "model");
  try {
    return load_model(c, path, options.compile);
  } catch (const json::exception& e) {
    throw FormatError(path, 16, std::string("invalid model header: ") + e.what());
  }
}

}  // namespace tandem
