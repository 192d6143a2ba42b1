#include "nn/layer.h"

#include <algorithm>

#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem {

const Shape& Node::shape() const {
  if (!data_) throw ConfigError("Node: use of an empty node (not produced by Input or a layer)");
  return data_->shape;
}

Node Layer::operator()(const Node& input) const {
  return (*this)(std::vector<Node>{input});
}

Node Layer::operator()(const std::vector<Node>& inputs) const {
  auto node = std::make_shared<detail::NodeData>();
  node->layer = impl_;
  std::vector<Shape> shapes;
  for (const Node& input : inputs) {
    if (!input.data()) {
      throw ConfigError("layer " + impl_->type() + " '" + impl_->name +
                        "' called on an empty node");
    }
    node->inputs.push_back(input.data());
    shapes.push_back(input.shape());
  }
  node->shape = impl_->output_shape(shapes);
  return Node(std::move(node));
}

namespace detail {

std::shared_ptr<LayerImpl> layer_from_config(const std::string& type,
                                             const nlohmann::json& config) {
  std::shared_ptr<LayerImpl> layer;
  if (type == "InputLayer")
    layer = input_layer_from_config(config);
  else if (type == "Dense")
    layer = dense_from_config(config);
  else if (type == "Activation")
    layer = activation_from_config(config);
  else if (type == "Dropout")
    layer = dropout_from_config(config);
  else if (type == "Flatten")
    layer = flatten_from_config(config);
  else if (type == "Add")
    layer = add_from_config(config);
  else if (type == "Concatenate")
    layer = concatenate_from_config(config);
  else {
    throw ConfigError("unknown layer type '" + type +
                      "' (known: InputLayer, Dense, Activation, Dropout, Flatten, Add, "
                      "Concatenate)");
  }
  layer->name = config.value("name", "");
  return layer;
}

void write_or_add(float* dst, const float* src, int64_t n, bool accumulate) {
  if (accumulate) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
  } else if (dst != src) {
    std::copy(src, src + n, dst);
  }
}

}  // namespace detail
}  // namespace tandem
