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
  using Factory = std::shared_ptr<LayerImpl> (*)(const nlohmann::json&);
  static const std::pair<const char*, Factory> kFactories[] = {
      {"InputLayer", input_layer_from_config},
      {"Dense", dense_from_config},
      {"Activation", activation_from_config},
      {"Dropout", dropout_from_config},
      {"Flatten", flatten_from_config},
      {"Add", add_from_config},
      {"Concatenate", concatenate_from_config},
      {"Conv2D", conv2d_from_config},
      {"MaxPooling2D", max_pooling2d_from_config},
      {"AveragePooling2D", average_pooling2d_from_config},
      {"GlobalAveragePooling2D", global_average_pooling2d_from_config},
      {"ZeroPadding2D", zero_padding2d_from_config},
      {"Reshape", reshape_from_config},
      {"BatchNormalization", batch_normalization_from_config},
  };
  std::shared_ptr<LayerImpl> layer;
  std::string known;
  for (const auto& [name, factory] : kFactories) {
    if (type == name) layer = factory(config);
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  if (!layer) throw ConfigError("unknown layer type '" + type + "' (known: " + known + ")");
  layer->name = config.value("name", "");
  return layer;
}

void copy_forward(const ForwardArgs& a) {
  std::copy(a.inputs[0], a.inputs[0] + a.batch * a.output_size, a.output);
}

void copy_backward(const BackwardArgs& b) {
  const GradTarget& dx = b.grad_inputs[0];
  if (dx.data) {
    write_or_add(dx.data, b.grad_output, b.forward.batch * b.forward.output_size, dx.accumulate);
  }
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
