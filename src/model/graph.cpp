#include "model/graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "nn/initializer.h"
#include "tandem/error.h"

namespace tandem::detail {

// Keras's to_snake_case: an underscore before each capitalised word ("MaxPooling2D" ->
// "max_pooling2d") and between a lower-case letter and a capital, then lower case.
std::string snake_case(const std::string& type) {
  const auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  const auto lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    const bool word = upper(c) && i + 1 < type.size() && lower(type[i + 1]);
    if (i > 0 && upper(c) && (word || lower(type[i - 1]))) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

namespace {

// Elements per sample, and parameters in a model, beyond which a graph is not one this
// library can hold (2^40 floats are 4 TiB). Keeping every size below it keeps every product
// and sum of sizes, here and in the layers, inside 64 bits.
constexpr int64_t kMaxElements = int64_t{1} << 40;

int64_t checked_size(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements) {
      throw ShapeError(what + ": shape " + shape_to_string(shape) +
                       " has more than 2^40 elements (or a negative dimension)");
    }
  }
  return n;
}

// A saved architecture's numbers that the layers read as integers must be integers: a float
// there would be converted with undefined behaviour.
void check_integers(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) return;
  const nlohmann::json& v = j.at(key);
  const bool ok = v.is_array() ? std::all_of(v.begin(), v.end(),
                                             [](const auto& e) { return e.is_number_integer(); })
                               : v.is_number_integer();
  if (!ok) throw ConfigError(where + ": '" + key + "' must be an integer, got " + v.dump());
}

size_t index_at(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_unsigned()) {
    throw ConfigError(where + ": '" + key + "' must be an index >= 0, got " + v.dump());
  }
  return v.get<size_t>();
}

}  // namespace

Graph::Graph(const Node& input, const Node& output) {
  if (!input.data() || !output.data()) throw ConfigError("Model: inputs and outputs must be set");
  if (!input.data()->layer->is_input()) {
    throw ConfigError("Model: `inputs` must come from tandem::Input(...)");
  }
  // Depth-first post-order from the output gives a topological order.
  std::unordered_map<const NodeData*, int> index;
  std::vector<const NodeData*> order;
  std::set<const NodeData*> on_path;
  std::vector<std::pair<const NodeData*, size_t>> stack = {{output.data().get(), 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next == 0) on_path.insert(node);
    if (next < node->inputs.size()) {
      const NodeData* child = node->inputs[next++].get();
      if (on_path.count(child)) throw ConfigError("Model: the graph has a cycle");
      if (!index.count(child)) stack.push_back({child, 0});
      continue;
    }
    on_path.erase(node);
    if (!index.count(node)) {
      if (node->layer->is_input() && node != input.data().get()) {
        throw ConfigError("Model: the outputs depend on an Input ('" + node->layer->name +
                          "') that is not the model's input");
      }
      index[node] = static_cast<int>(order.size());
      order.push_back(node);
    }
    stack.pop_back();
  }
  if (!index.count(input.data().get())) {
    throw ConfigError("Model: the outputs do not depend on the given input");
  }
  // The input first (it has no inputs, so moving it to the front keeps the order valid).
  std::stable_partition(order.begin(), order.end(),
                        [&](const NodeData* n) { return n == input.data().get(); });
  for (size_t i = 0; i < order.size(); ++i) index[order[i]] = static_cast<int>(i);

  std::unordered_map<const LayerImpl*, int> layer_index;
  for (const NodeData* data : order) {
    GraphNode node;
    node.layer = data->layer;
    node.shape = data->shape;
    node.size = shape_size(data->shape);
    for (const auto& in : data->inputs) {
      node.inputs.push_back(index.at(in.get()));
      node.input_shapes.push_back(in->shape);
      node.input_sizes.push_back(shape_size(in->shape));
      ++nodes_[node.inputs.back()].consumers;
    }
    auto [it, fresh] = layer_index.emplace(data->layer.get(), static_cast<int>(layers_.size()));
    if (fresh) layers_.push_back({data->layer});
    node.layer_index = it->second;
    ++layers_[it->second].uses;
    nodes_.push_back(std::move(node));
  }
  order_layers_as_keras();
  name_layers();
  layout_params();
}

// Keras's Functional.layers order (keras/src/ops/function.py, map_graph): a depth-first walk
// from the output numbers each layer when first reached, before its inputs; a node's depth
// is 1 + the largest depth of the nodes it feeds (the output's is 0), a layer's the largest
// of its nodes'; layers by decreasing depth, then by that number. Decreasing depth is a
// topological order, and it is the order Keras gives weights, their groups in a .keras
// file and the optimizer's slots, so get_weights() and the files agree with Keras's.
void Graph::order_layers_as_keras() {
  const int n_layers = static_cast<int>(layers_.size());
  std::vector<int> first_seen(n_layers, -1), post;
  std::vector<char> finished(nodes_.size(), 0);
  int seen = 0;
  std::vector<std::pair<int, size_t>> stack = {{static_cast<int>(nodes_.size()) - 1, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next == 0 && first_seen[nodes_[node].layer_index] < 0) {
      first_seen[nodes_[node].layer_index] = seen++;
    }
    if (next < nodes_[node].inputs.size()) {
      const int in = nodes_[node].inputs[next++];
      if (!finished[in]) stack.push_back({in, 0});
      continue;
    }
    if (!finished[node]) {
      finished[node] = 1;
      post.push_back(node);
    }
    stack.pop_back();
  }
  std::vector<int> node_depth(nodes_.size(), 0), layer_depth(n_layers, 0);
  for (auto it = post.rbegin(); it != post.rend(); ++it) {
    const int layer = nodes_[*it].layer_index;
    const int depth = std::max(node_depth[*it], layer_depth[layer]);
    layer_depth[layer] = node_depth[*it] = depth;
    for (int in : nodes_[*it].inputs) node_depth[in] = std::max(node_depth[in], depth + 1);
  }
  std::vector<int> order(n_layers);
  for (int i = 0; i < n_layers; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return layer_depth[a] != layer_depth[b] ? layer_depth[a] > layer_depth[b]
                                            : first_seen[a] < first_seen[b];
  });
  std::vector<LayerEntry> layers;
  std::vector<int> new_index(n_layers);
  for (int i = 0; i < n_layers; ++i) {
    new_index[order[i]] = i;
    layers.push_back(std::move(layers_[order[i]]));
  }
  layers_ = std::move(layers);
  for (GraphNode& n : nodes_) n.layer_index = new_index[n.layer_index];
}

void Graph::name_layers() {
  std::map<std::string, int> counters;
  std::set<std::string> taken;
  for (const LayerEntry& e : layers_) {
    if (e.layer->name.empty()) continue;
    if (!taken.insert(e.layer->name).second) {
      throw ConfigError("Model: two layers are named '" + e.layer->name +
                        "'; layer names must be unique");
    }
  }
  for (LayerEntry& e : layers_) {
    if (!e.layer->name.empty()) continue;
    const std::string base = e.layer->is_input() ? "input" : snake_case(e.layer->type());
    std::string name;
    do {
      const int n = counters[base]++;
      // Keras numbers inputs from 1 (input_1) and other layers from none (dense, dense_1).
      if (e.layer->is_input())
        name = base + "_" + std::to_string(n + 1);
      else
        name = n == 0 ? base : base + "_" + std::to_string(n);
    } while (taken.count(name));
    taken.insert(name);
    e.layer->name = name;
  }
}

void Graph::layout_params() {
  int64_t offset = 0;
  for (size_t li = 0; li < layers_.size(); ++li) {
    LayerEntry& entry = layers_[li];
    entry.param_offset = offset;
    std::vector<ParamSpec> first_specs;
    bool first = true;
    for (const GraphNode& node : nodes_) {
      if (node.layer_index != static_cast<int>(li)) continue;
      auto specs = entry.layer->param_specs(node.input_shapes);
      if (first) {
        first_specs = std::move(specs);
        first = false;
      } else {
        bool same = specs.size() == first_specs.size();
        for (size_t i = 0; same && i < specs.size(); ++i) {
          same = specs[i].shape == first_specs[i].shape;
        }
        if (!same) {
          throw ShapeError("layer '" + entry.layer->name +
                           "' is called on inputs of different shapes; shared weights need "
                           "the same shape each time");
        }
      }
    }
    const std::string where = "layer '" + entry.layer->name + "'";
    for (ParamSpec& spec : first_specs) {
      check_initializer_name(spec.initializer.name, where);
      const int64_t size = checked_size(spec.shape, where + " " + spec.name);
      entry.params.push_back(static_cast<int>(params_.size()));
      params_.push_back({static_cast<int>(li), std::move(spec), offset, size});
      param_count_ += size;
      offset += size;  // a layer's parameters are contiguous: layers index them from its start
      if (offset > kMaxElements) {
        throw ShapeError("model: more than 2^40 parameters up to " + where);
      }
    }
    entry.param_count = offset - entry.param_offset;
    offset = (offset + kParamAlignFloats - 1) / kParamAlignFloats * kParamAlignFloats;
  }
  param_buffer_size_ = offset;
}

bool Graph::is_chain() const {
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (nodes_[i].inputs.size() != 1 || nodes_[i].inputs[0] != static_cast<int>(i) - 1) {
      return false;
    }
  }
  return true;
}

nlohmann::json Graph::to_json() const {
  nlohmann::json layers = nlohmann::json::array(), nodes = nlohmann::json::array();
  for (const LayerEntry& e : layers_) {
    layers.push_back({{"type", e.layer->type()}, {"config", e.layer->config()}});
  }
  for (const GraphNode& n : nodes_)
    nodes.push_back({{"layer", n.layer_index}, {"inputs", n.inputs}});
  return {{"layers", layers}, {"nodes", nodes}};
}

// Architectures come from files: every index is checked, and every node's size is checked
// (overflow-free, below kMaxElements) before the next layer computes with it.
std::pair<Node, Node> Graph::nodes_from_json(const nlohmann::json& architecture) {
  std::vector<Layer> layers;
  for (const auto& l : architecture.at("layers")) {
    const std::string where = "architecture: layer " + std::to_string(layers.size());
    const nlohmann::json& config = l.at("config");
    for (const char* key : {"units", "axis", "shape", "seed"}) check_integers(config, key, where);
    layers.emplace_back(layer_from_config(l.at("type").get<std::string>(), config));
  }
  std::vector<Node> nodes;
  for (const auto& n : architecture.at("nodes")) {
    const std::string where = "architecture: node " + std::to_string(nodes.size());
    const size_t li = index_at(n, "layer", where);
    if (li >= layers.size()) throw ConfigError("architecture: node refers to a missing layer");
    const auto& impl = layers[li].impl();
    if (impl->is_input()) {
      auto data = std::make_shared<NodeData>();
      data->layer = impl;
      data->shape = impl->output_shape({});
      checked_size(data->shape, where + " (" + impl->type() + ")");
      nodes.emplace_back(std::move(data));
      continue;
    }
    std::vector<Node> inputs;
    int64_t input_elements = 0;  // what Concatenate sums stays below kMaxElements too
    const nlohmann::json& ins = n.at("inputs");
    if (!ins.is_array()) throw ConfigError(where + ": 'inputs' must be a list of node indices");
    for (const auto& in : ins) {
      if (!in.is_number_unsigned() || in.get<size_t>() >= nodes.size()) {
        throw ConfigError("architecture: node input out of order");
      }
      inputs.push_back(nodes[in.get<size_t>()]);
      if (__builtin_add_overflow(input_elements, shape_size(inputs.back().shape()),
                                 &input_elements) ||
          input_elements > kMaxElements) {
        throw ShapeError(where + ": inputs of more than 2^40 elements per sample");
      }
    }
    nodes.push_back(layers[li](inputs));
    checked_size(nodes.back().shape(), where + " (" + impl->type() + ")");
  }
  if (nodes.empty()) throw ConfigError("architecture: no nodes");
  return {nodes.front(), nodes.back()};
}

}  // namespace tandem::detail
