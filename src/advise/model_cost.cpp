// ModelCost::of: a model's layers as the cost model sees them. Dense and Conv2D are FLOPs
// (2 per multiply-add; backward computes the weight gradient and, unless the layer reads
// the model's input, the input gradient, each as many FLOPs as forward). The other layers
// are the bytes they read and write per sample, in passes over their output (or input):
// what the CPU backend's kernels do, counted once per tensor touched.
#include <map>
#include <set>

#include "advise/cost_model.h"
#include "model/model_state.h"
#include "nn/window.h"
#include "tandem/error.h"
#include "tandem/model.h"

namespace tandem::detail {
namespace {

// Float passes per sample of a memory-bound layer: over its input (in) and output (out)
// in forward, and in backward.
struct Passes {
  double forward_in, forward_out, backward_in, backward_out;
};

// By Keras class name. Pooling reads its input and writes its output (max pooling also
// its argmax workspace), and backward the reverse; batch normalization reads x for its
// statistics and again to normalize, and in backward reads x and dy twice (reductions,
// then dx) and writes dx; Add reads every input (its output's size each) and copies dy
// into each input's gradient.
const std::map<std::string, Passes>& memory_layers() {
  static const std::map<std::string, Passes> passes = {
      {"MaxPooling2D", {1, 2, 1, 2}},
      {"AveragePooling2D", {1, 1, 1, 1}},
      {"GlobalAveragePooling2D", {1, 0, 1, 0}},
      {"BatchNormalization", {0, 3, 0, 5}},
      {"Activation", {0, 2, 0, 3}},
      {"Dropout", {0, 3, 0, 3}},
      {"Concatenate", {0, 2, 0, 2}},
      {"Flatten", {0, 2, 0, 2}},
      {"Reshape", {0, 2, 0, 2}},
      {"ZeroPadding2D", {1, 1, 1, 1}},
  };
  return passes;
}

// Input(w0) -> Dense(w1) -> ... as ModelCost::dense describes it: every layer a Dense used
// once, each reading the one before on a flat input; its widths, empty for any other graph
// (its steps are not those of the rate curves measured on such chains).
std::vector<int64_t> dense_chain_widths(const Graph& graph) {
  if (graph.input().shape.size() != 1) return {};
  std::vector<int64_t> widths = {graph.input().size};
  for (size_t i = 1; i < graph.nodes().size(); ++i) {
    const GraphNode& node = graph.nodes()[i];
    if (node.layer->type() != "Dense" || graph.layers()[node.layer_index].uses != 1 ||
        node.inputs != std::vector<int>{static_cast<int>(i) - 1} || node.shape.size() != 1) {
      return {};
    }
    widths.push_back(node.shape.back());
  }
  return widths;
}

}  // namespace

ModelCost ModelCost::of(const Model& model) {
  const ModelState& state = model.state();
  if (!state.graph) throw ConfigError("advise: the model has no layers yet");
  const Graph& graph = *state.graph;
  ModelCost m;
  m.input_size = graph.input().size;
  std::set<int> counted;  // a shared layer's parameters travel once
  for (size_t i = 1; i < graph.nodes().size(); ++i) {
    const GraphNode& node = graph.nodes()[i];
    const LayerEntry& entry = graph.layers()[node.layer_index];
    const std::string type = node.layer->type();
    LayerCost l;
    l.name = node.layer->name;
    if (counted.insert(node.layer_index).second) l.params = entry.param_count;
    if (entry.param_count > 0 && (type != "Dense" || entry.uses != 1)) m.dense_used_once = false;
    bool reads_model_input = false;
    int64_t in = 0;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      reads_model_input = reads_model_input || node.inputs[k] == 0;
      in += node.input_sizes[k];
    }
    const double out = static_cast<double>(node.size);
    if (type == "Dense" || type == "Conv2D") {
      int64_t kernel = 0;
      for (const int p : entry.params) {
        if (graph.params()[p].spec.name == "kernel") kernel = graph.params()[p].size;
      }
      const int64_t units = node.shape.back();
      // Multiply-adds: every output position (a Dense row, a conv pixel) times the kernel.
      l.kind = type == "Dense" ? CostKind::dense : CostKind::conv;
      l.forward_flops = 2.0 * (out / static_cast<double>(units)) * static_cast<double>(kernel);
      l.backward_flops = l.forward_flops * (reads_model_input ? 1 : 2);
      l.backward_data = !reads_model_input;
      if (type == "Conv2D") {
        const nlohmann::json c = node.layer->config();
        const std::string where = "advise: Conv2D '" + l.name + "'";
        l.window = make_window(
            node.input_shapes.at(0), node.shape, 1, size2_from_json(c.at("kernel_size"), where),
            size2_from_json(c.at("strides"), where), size2_from_json(c.at("dilation_rate"), where),
            parse_padding(c.at("padding").get<std::string>(), where));
      }
    } else if (type == "Add") {
      const auto k = static_cast<double>(node.inputs.size());
      l.kind = CostKind::memory;
      l.forward_bytes = 4.0 * (k + 1) * out;
      l.backward_bytes = 4.0 * 2 * k * out;
    } else if (const auto it = memory_layers().find(type); it != memory_layers().end()) {
      const Passes& p = it->second;
      l.kind = type.find("Pooling2D") != std::string::npos ? CostKind::pool : CostKind::memory;
      l.forward_bytes = 4.0 * (p.forward_in * static_cast<double>(in) + p.forward_out * out);
      l.backward_bytes = 4.0 * (p.backward_in * static_cast<double>(in) + p.backward_out * out);
    } else {
      throw ConfigError("advise: layer '" + l.name + "' (" + type +
                        ") has no cost model; known are Dense, Conv2D, Add and " + [] {
                          std::string names;
                          for (const auto& [name, passes] : memory_layers()) {
                            names += (names.empty() ? "" : ", ") + name;
                          }
                          return names;
                        }());
    }
    m.layers.push_back(l);
  }
  if (m.layers.empty()) throw ConfigError("advise: the model has no layers");
  m.widths = dense_chain_widths(graph);
  return m;
}

}  // namespace tandem::detail
