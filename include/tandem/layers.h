// Keras-shaped functional API: Input() makes a symbolic tensor (Node); a Layer called on
// Nodes makes a new Node. Model(inputs, outputs) turns the resulting graph into a model.
//
//   auto inputs = tandem::Input({784});
//   auto x = tandem::Dense(4096, "relu")(inputs);
//   auto outputs = tandem::Dense(10, "softmax")(x);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/array.h"

namespace tandem {

namespace detail {
class LayerImpl;
struct NodeData;
}  // namespace detail

// A symbolic tensor: the output of a layer in a graph. shape() excludes the batch axis.
class Node {
 public:
  Node() = default;
  explicit Node(std::shared_ptr<detail::NodeData> data) : data_(std::move(data)) {}
  const Shape& shape() const;
  const std::shared_ptr<detail::NodeData>& data() const { return data_; }

 private:
  std::shared_ptr<detail::NodeData> data_;
};

// A layer, ready to be called on nodes. Calling the same Layer twice shares its weights.
class Layer {
 public:
  explicit Layer(std::shared_ptr<detail::LayerImpl> impl) : impl_(std::move(impl)) {}
  Node operator()(const Node& input) const;
  Node operator()(const std::vector<Node>& inputs) const;
  const std::shared_ptr<detail::LayerImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::LayerImpl> impl_;
};

// Keras initializer names: glorot_uniform, glorot_normal, he_normal, he_uniform,
// random_normal, random_uniform, zeros, ones. A seed makes one layer's draw fixed;
// without one it derives from the global seed (set_random_seed) and the layer's position.
struct Initializer {
  std::string name = "glorot_uniform";
  std::optional<uint64_t> seed;
  Initializer() = default;
  Initializer(const char* n) : name(n) {}  // NOLINT: implicit, like Keras's strings
  Initializer(std::string n, std::optional<uint64_t> s = {}) : name(std::move(n)), seed(s) {}
};

struct DenseOptions {
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;  // empty: dense, dense_1, ... in model order
};

// Per-sample shape (batch axis excluded), like Keras's Input(shape=...).
Node Input(const Shape& shape, const std::string& name = "");
// units outputs; activation: linear (default), relu, sigmoid, tanh, softmax. Acts on the
// last axis of its input, like Keras.
Layer Dense(int64_t units, const std::string& activation = "linear", DenseOptions options = {});
Layer Activation(const std::string& activation, const std::string& name = "");
// Inverted dropout: in training, zeroes a `rate` fraction and scales the rest by 1/(1-rate);
// identity in evaluate/predict. Masks come from the fit's seed, so a seeded fit repeats exactly.
Layer Dropout(double rate, const std::string& name = "");
Layer Flatten(const std::string& name = "");
// Element-wise sum of inputs of equal shape.
Layer Add(const std::string& name = "");
// Joins inputs along `axis` (of the per-sample shape; -1 = last).
Layer Concatenate(int axis = -1, const std::string& name = "");

}  // namespace tandem
