// Graph: a model's nodes in topological order and its layers in Keras's order (that of
// Functional.layers, also topological), with the layout of the flat parameter
// buffer (every parameter is a view at an offset into it). Built once per model; shared by
// all replicas, which own the buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "nn/layer.h"

namespace tandem::detail {

struct GraphNode {
  std::shared_ptr<LayerImpl> layer;
  int layer_index = -1;     // into Graph::layers
  std::vector<int> inputs;  // node indices, all earlier in order
  std::vector<Shape> input_shapes;
  std::vector<int64_t> input_sizes;
  Shape shape;        // per-sample output shape
  int64_t size = 0;   // shape_size(shape)
  int consumers = 0;  // nodes that read this one
};

struct ParamEntry {
  int layer_index;
  ParamSpec spec;
  int64_t offset;  // into the flat buffer, in floats
  int64_t size;
};

struct LayerEntry {
  std::shared_ptr<LayerImpl> layer;
  std::vector<int> params;   // into Graph::params
  int64_t param_offset = 0;  // first float of this layer's slice; 64-byte aligned
  int64_t param_count = 0;   // floats in the slice: its parameters, back to back
  int uses = 0;              // nodes that call this layer (> 1: shared weights)
};

class Graph {
 public:
  // The graph reachable backwards from `output`, whose only source must be `input`.
  Graph(const Node& input, const Node& output);

  const std::vector<GraphNode>& nodes() const { return nodes_; }
  const std::vector<LayerEntry>& layers() const { return layers_; }
  const std::vector<ParamEntry>& params() const { return params_; }
  const GraphNode& input() const { return nodes_.front(); }
  const GraphNode& output() const { return nodes_.back(); }
  // Floats in the flat parameter buffer, padding included.
  int64_t param_buffer_size() const { return param_buffer_size_; }
  // Trainable parameters, as Keras counts them.
  int64_t param_count() const { return param_count_; }
  bool is_chain() const;

  // Architecture as JSON (layers with configs, and how nodes connect), and back.
  nlohmann::json to_json() const;
  static std::pair<Node, Node> nodes_from_json(const nlohmann::json& architecture);

 private:
  void order_layers_as_keras();
  void name_layers();
  void layout_params();

  std::vector<GraphNode> nodes_;
  std::vector<LayerEntry> layers_;
  std::vector<ParamEntry> params_;
  int64_t param_buffer_size_ = 0;
  int64_t param_count_ = 0;
};

// Keras's to_snake_case of a class name: "MaxPooling2D" -> "max_pooling2d".
std::string snake_case(const std::string& type);

// Floats per 64-byte line: every layer's slice starts on one, so kernels see aligned data.
inline constexpr int64_t kParamAlignFloats = 16;

}  // namespace tandem::detail
