#include "model/keras/keras_config.h"

#include <algorithm>
#include <functional>
#include <map>

#include "model/keras/keras_layer_config.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

using namespace keras_json;

// ---- the functional graph ----

// keras_history [layer, node, tensor] of one __keras_tensor__ argument.
struct TensorRef {
  std::string layer;
  int64_t node = 0;
};

TensorRef tensor_ref(const json& t, const Where& w) {
  const json& history = member(member(t, "config", w), "keras_history", w);
  if (!history.is_array() || history.size() != 3 || !history[0].is_string() ||
      !history[1].is_number_integer() || !history[2].is_number_integer()) {
    w.fail("keras_history " + history.dump() + " is not [layer, node, tensor]");
  }
  if (history[2].get<int64_t>() != 0) {
    w.fail("tensor " + history.dump() + ": layers with several outputs are not supported");
  }
  return {history[0].get<std::string>(), history[1].get<int64_t>()};
}

// One inbound node's inputs: args[0] is a tensor or a list of them; kwargs may only hold
// training (tandem follows fit / evaluate / predict) and off values (mask: null).
std::vector<TensorRef> node_inputs(const json& node, const Where& w) {
  const json& args = member(node, "args", w);
  if (!args.is_array() || args.size() != 1) {
    w.fail("a call with " + std::to_string(args.is_array() ? args.size() : 0) +
           " positional arguments is not supported (one tensor or one list of tensors)");
  }
  const json kwargs = node.value("kwargs", json::object());
  for (const auto& [key, value] : kwargs.items()) {
    if (key != "training" && !is_off(value)) {
      w.fail("call argument '" + key + "' = " + value.dump() + " is not supported by tandem");
    }
  }
  std::vector<TensorRef> out;
  if (args[0].is_array()) {
    for (const json& t : args[0]) out.push_back(tensor_ref(t, w));
  } else {
    out.push_back(tensor_ref(args[0], w));
  }
  return out;
}

// input_layers / output_layers: [name, 0, 0] or [[name, 0, 0]]; tandem models have one.
TensorRef single_endpoint(const json& v, const char* what, const Where& w) {
  json e = v;
  if (e.is_array() && e.size() == 1 && e[0].is_array()) e = e[0];
  if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_number_integer()) {
    w.fail(std::string(what) + " " + v.dump() +
           ": several inputs or outputs are not supported (tandem models have one of each)");
  }
  return {e[0].get<std::string>(), e[1].get<int64_t>()};
}

void check_layer_entry(const json& l, const Where& w) {
  if (!l.is_object()) w.fail("a layer entry is not an object");
  const std::string cls = text(l, "class_name", w);
  if (cls == "Sequential" || cls == "Functional" || cls == "Model") {
    w.fail("nested models are not supported by tandem (layer '" +
           l.value("config", json::object()).value("name", std::string("?")) + "', " + cls + ")");
  }
  const json& registered = l.value("registered_name", json());
  if (registered.is_string() && registered.get<std::string>() != cls &&
      registered.get<std::string>().find('>') != std::string::npos) {
    w.fail("custom layer " + registered.get<std::string>() + " is not supported by tandem");
  }
}

// Paths over `names_and_types` (Keras's model.layers order).
std::vector<KerasLayerPath> paths_for(
    const std::vector<std::pair<std::string, std::string>>& layers) {
  std::map<std::string, int> used;
  std::vector<KerasLayerPath> out;
  for (const auto& [name, type] : layers) {
    const std::string base = snake_case(type);
    const auto [it, first] = used.emplace(base, 0);
    if (!first) ++it->second;
    out.push_back({name, "layers/" + (first ? base : base + "_" + std::to_string(it->second))});
  }
  return out;
}

KerasModel sequential_from_keras(const json& config, const Where& w) {
  KerasModel m;
  const json& layers = member(config, "layers", w);
  if (!layers.is_array()) w.fail("'layers' is not a list");
  json arch_layers = json::array(), nodes = json::array();
  std::vector<std::pair<std::string, std::string>> keras_layers;
  for (size_t i = 0; i < layers.size(); ++i) {
    check_layer_entry(layers[i], w);
    const std::string type = text(layers[i], "class_name", w);
    const json& lc = member(layers[i], "config", w);
    const Where lw = w.at("layer '" + lc.value("name", std::string("?")) + "' (" + type + ")");
    if (i == 0 && type != "InputLayer") {
      // Keras 2 style: the input shape on the first layer, or the model's build shape.
      json shape = lc.contains("batch_input_shape") ? lc.at("batch_input_shape")
                   : lc.contains("batch_shape")     ? lc.at("batch_shape")
                                                    : config.value("build_input_shape", json());
      if (shape.is_null()) w.fail("the Sequential model has no input shape (never built)");
      arch_layers.push_back(
          {{"type", "InputLayer"},
           {"config", layer_config_from_keras("InputLayer", {{"batch_shape", shape}}, lw)}});
      nodes.push_back({{"layer", 0}, {"inputs", json::array()}});
    }
    if (i > 0 && type == "InputLayer") lw.fail("an InputLayer after the first layer");
    json own = lc;  // Keras 2 repeats the input shape on the first layer: the InputLayer has it
    if (type != "InputLayer") own.erase("batch_input_shape"), own.erase("batch_shape");
    json tc = layer_config_from_keras(type, own, lw);
    arch_layers.push_back({{"type", type}, {"config", tc}});
    const size_t index = arch_layers.size() - 1;
    nodes.push_back(
        {{"layer", index}, {"inputs", index == 0 ? json::array() : json::array({index - 1})}});
    if (type != "InputLayer") keras_layers.emplace_back(lc.value("name", ""), type);
  }
  if (keras_layers.empty()) w.fail("the Sequential model has no layers");
  m.architecture = {{"layers", arch_layers}, {"nodes", nodes}};
  m.paths = paths_for(keras_layers);
  return m;
}

KerasModel functional_from_keras(const json& config, const Where& w) {
  KerasModel m;
  const json& layers = member(config, "layers", w);
  if (!layers.is_array()) w.fail("'layers' is not a list");
  struct Pending {
    size_t layer;
    std::vector<TensorRef> inputs;
    int64_t call;  // this call's index among the layer's inbound nodes
  };
  json arch_layers = json::array(), nodes = json::array();
  std::map<std::string, size_t> layer_index;
  std::vector<Pending> pending;
  std::vector<std::pair<std::string, std::string>> keras_layers;
  std::map<std::pair<std::string, int64_t>, size_t> node_of;  // (layer, call) -> node
  for (const json& l : layers) {
    check_layer_entry(l, w);
    const std::string type = text(l, "class_name", w);
    const json& lc = member(l, "config", w);
    const std::string name = l.contains("name") ? text(l, "name", w) : lc.value("name", "");
    const Where lw = w.at("layer '" + name + "' (" + type + ")");
    if (name.empty()) lw.fail("has no name");
    if (!layer_index.emplace(name, arch_layers.size()).second)
      lw.fail("a second layer of this name");
    json tc = layer_config_from_keras(type, lc, lw);
    tc["name"] = name;
    arch_layers.push_back({{"type", type}, {"config", tc}});
    keras_layers.emplace_back(name, type);
    const json& inbound = l.value("inbound_nodes", json::array());
    if (!inbound.is_array()) lw.fail("'inbound_nodes' is not a list");
    if (type == "InputLayer") {
      if (!inbound.empty()) lw.fail("an InputLayer called on a tensor");
      node_of[{name, 0}] = nodes.size();
      nodes.push_back({{"layer", arch_layers.size() - 1}, {"inputs", json::array()}});
      continue;
    }
    for (size_t call = 0; call < inbound.size(); ++call) {
      pending.push_back(
          {arch_layers.size() - 1, node_inputs(inbound[call], lw), static_cast<int64_t>(call)});
    }
  }
  // Calls in an order where every input exists first (Keras's own list is one, but a file
  // need not be).
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      json inputs = json::array();
      bool ready = true;
      for (const TensorRef& t : it->inputs) {
        const auto found = node_of.find({t.layer, t.node});
        if (found == node_of.end()) {
          ready = false;
          break;
        }
        inputs.push_back(found->second);
      }
      if (!ready) {
        ++it;
        continue;
      }
      const std::string name = arch_layers[it->layer]["config"]["name"];
      node_of[{name, it->call}] = nodes.size();
      nodes.push_back({{"layer", it->layer}, {"inputs", inputs}});
      it = pending.erase(it);
      progress = true;
    }
    if (!progress) {
      const TensorRef& t = pending.front().inputs.front();
      w.fail("layer '" + std::string(arch_layers[pending.front().layer]["config"]["name"]) +
             "' is called on node " + std::to_string(t.node) + " of '" + t.layer +
             "', which no layer makes (or the graph has a cycle)");
    }
  }
  const TensorRef in = single_endpoint(member(config, "input_layers", w), "input_layers", w);
  const TensorRef out = single_endpoint(member(config, "output_layers", w), "output_layers", w);
  const auto out_node = node_of.find({out.layer, out.node});
  if (!node_of.count({in.layer, in.node}) || out_node == node_of.end()) {
    w.fail("input_layers or output_layers name a layer the model does not have");
  }
  // Graph::nodes_from_json builds every node listed and takes the last as the output: keep
  // the output last (nodes after it would be outside the model Keras builds).
  if (out_node->second != nodes.size() - 1) {
    w.fail("the output '" + out.layer +
           "' is not the last call of the graph (layers outside the path to the output, or "
           "several outputs, are not supported)");
  }
  m.architecture = {{"layers", arch_layers}, {"nodes", nodes}};
  m.paths = paths_for(keras_layers);
  return m;
}

}  // namespace

KerasModel model_from_keras_config(const json& config, const std::string& path,
                                   const std::string& source) {
  const Where w{path, source, ""};
  if (!config.is_object()) w.fail("not a JSON object");
  const std::string cls = text(config, "class_name", w);
  const json& inner = member(config, "config", w);
  KerasModel m;
  if (cls == "Sequential") {
    m = sequential_from_keras(inner, w.at("Sequential"));
  } else if (cls == "Functional" || cls == "Model") {
    m = functional_from_keras(inner, w.at("Functional"));
  } else {
    w.fail("model class " + cls +
           " is not supported by tandem (Sequential and functional models are; a subclassed "
           "model's code is not in the file)");
  }
  m.name = inner.value("name", std::string("model"));
  if (!m.name.size()) m.name = "model";
  m.compile = compile_from_keras(config.value("compile_config", json()), w);
  return m;
}

json config_from_legacy_h5(const json& model_config, const json& training_config) {
  json config = model_config;
  if (config.is_object() && config.value("config", json()).is_object() &&
      config["config"].value("layers", json()).is_array()) {
    for (json& layer : config["config"]["layers"]) {
      if (!layer.is_object() || !layer.value("inbound_nodes", json()).is_array()) continue;
      for (json& node : layer["inbound_nodes"]) {
        if (!node.is_array()) continue;  // Keras 3's {"args", "kwargs"} already
        // Keras 2: [[layer, node, tensor, kwargs], ...], one entry per input.
        json args = json::array(), kwargs = json::object();
        for (const json& t : node) {
          if (!t.is_array() || t.size() < 3) {
            args.push_back(t);  // left for model_from_keras_config to name
            continue;
          }
          args.push_back({{"class_name", "__keras_tensor__"},
                          {"config", {{"keras_history", {t[0], t[1], t[2]}}}}});
          if (t.size() > 3 && t[3].is_object()) kwargs.update(t[3]);
        }
        node = {{"args", args.size() == 1 ? args : json::array({args})}, {"kwargs", kwargs}};
      }
    }
  }
  if (!training_config.is_object()) return config;
  json compile = training_config;
  if (compile.contains("optimizer_config")) {
    json optimizer = compile["optimizer_config"];
    if (optimizer.is_object() && optimizer.value("class_name", json()).is_string()) {
      std::string cls = optimizer["class_name"];
      if (cls.rfind("Custom>", 0) == 0) optimizer["class_name"] = cls.substr(7);
    }
    compile["optimizer"] = optimizer;
    compile.erase("optimizer_config");
  }
  // Metrics: ["accuracy"], [["accuracy"]] or Keras 2's wrapped [[{"class_name":
  // "MeanMetricWrapper", "config": {"name": "accuracy", "fn": "categorical_accuracy"}}]]:
  // their names, and a wrapper with its function (the accuracy Keras computed).
  json names = json::array();
  std::function<void(const json&)> collect = [&](const json& m) {
    if (m.is_array()) {
      for (const json& e : m) collect(e);
    } else if (m.is_object() && m.value("class_name", json()) == "MeanMetricWrapper" &&
               m.value("config", json()).is_object() &&
               m["config"].value("fn", json()).is_string()) {
      names.push_back(
          {{"class_name", "MeanMetricWrapper"},
           {"config", {{"name", m["config"].value("name", json())}, {"fn", m["config"]["fn"]}}}});
    } else if (m.is_object() && m.value("config", json()).is_object() &&
               m["config"].value("name", json()).is_string()) {
      names.push_back(m["config"]["name"]);
    } else {
      names.push_back(m);
    }
  };
  if (compile.contains("metrics") && !compile["metrics"].is_null()) collect(compile["metrics"]);
  compile["metrics"] = names;
  config["compile_config"] = compile;
  return config;
}

std::vector<KerasLayerPath> keras_layer_paths(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> layers;
  for (const LayerEntry& e : graph.layers()) layers.emplace_back(e.layer->name, e.layer->type());
  return paths_for(layers);
}

json keras_config(const Graph& graph, const std::string& name,
                  const std::optional<KerasCompile>& compile) {
  const auto& gnodes = graph.nodes();
  // Each node's call index among its layer's calls, for keras_history.
  std::vector<int64_t> call_of(gnodes.size());
  std::vector<int64_t> calls(graph.layers().size(), 0);
  for (size_t n = 0; n < gnodes.size(); ++n) call_of[n] = calls[gnodes[n].layer_index]++;
  const auto tensor = [&](int n) {
    return json{
        {"class_name", "__keras_tensor__"},
        {"config",
         {{"shape", shape_with_batch(gnodes[n].shape)},
          {"dtype", "float32"},
          {"keras_history", {graph.layers()[gnodes[n].layer_index].layer->name, call_of[n], 0}}}}};
  };
  json layers = json::array();
  for (int li = 0; li < static_cast<int>(graph.layers().size()); ++li) {
    const LayerImpl& layer = *graph.layers()[li].layer;
    json inbound = json::array();
    json build_shape;
    for (size_t n = 0; n < gnodes.size(); ++n) {
      if (gnodes[n].layer_index != li || layer.is_input()) continue;
      json args = json::array();
      json shapes = json::array();
      for (int in : gnodes[n].inputs) {
        args.push_back(tensor(in));
        shapes.push_back(shape_with_batch(gnodes[in].shape));
      }
      const bool several = gnodes[n].inputs.size() > 1;
      if (build_shape.is_null()) build_shape = several ? shapes : shapes[0];
      inbound.push_back(
          {{"args", several ? json::array({args}) : args}, {"kwargs", json::object()}});
    }
    const Shape input_shape = layer.is_input() ? gnodes[0].shape : Shape{};
    json entry = {{"module", "keras.layers"},
                  {"class_name", layer.type()},
                  {"config", keras_layer_config(layer, input_shape)},
                  {"registered_name", nullptr},
                  {"name", layer.name},
                  {"inbound_nodes", inbound}};
    if (!build_shape.is_null()) entry["build_config"] = {{"input_shape", build_shape}};
    layers.push_back(entry);
  }
  const auto endpoint = [&](size_t n) {
    return json::array({graph.layers()[gnodes[n].layer_index].layer->name, call_of[n], 0});
  };
  json out = {{"module", "keras.src.models.functional"},
              {"class_name", "Functional"},
              {"config",
               {{"name", name},
                {"trainable", true},
                {"layers", layers},
                {"input_layers", endpoint(0)},
                {"output_layers", endpoint(gnodes.size() - 1)}}},
              {"registered_name", "Functional"},
              {"build_config", {{"input_shape", nullptr}}}};
  if (compile) {
    out["compile_config"] = keras_compile_config(*compile);
  }
  return out;
}

}  // namespace tandem::detail
