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

// (height, width); one number means both, as Keras's int-or-tuple arguments do.
struct Size2 {
  int64_t height = 1, width = 1;
  Size2() = default;
  Size2(int64_t both) : height(both), width(both) {}  // NOLINT: implicit, like Keras's ints
  Size2(int64_t h, int64_t w) : height(h), width(w) {}
};

// Images are channels-last, (height, width, channels) per sample, as Keras's default.
struct Conv2DOptions {
  Size2 strides = 1;
  std::string padding = "valid";  // valid | same
  Size2 dilation_rate = 1;        // > 1 only with strides 1 (as in Keras)
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  std::string name;  // empty: conv2d, conv2d_1, ...
};

struct Pool2DOptions {
  std::optional<Size2> strides;   // none: pool_size
  std::string padding = "valid";  // valid | same
  std::string name;
};

struct BatchNormalizationOptions {
  int axis = -1;  // the channels: only the last axis (channels last)
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // beta
  bool scale = true;   // gamma
  // Training statistics over the global batch, summed across devices (true), or each
  // device's own rows (false: what multi_gpu_model and MirroredStrategy do).
  bool synchronized = false;
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  std::string name;
};

// ((top, bottom), (left, right)) rows and columns of zeros; one number means all four.
struct Padding2D {
  int64_t top = 1, bottom = 1, left = 1, right = 1;
  Padding2D() = default;
  Padding2D(int64_t all) : top(all), bottom(all), left(all), right(all) {}  // NOLINT
  Padding2D(int64_t rows, int64_t cols) : top(rows), bottom(rows), left(cols), right(cols) {}
  Padding2D(int64_t t, int64_t b, int64_t l, int64_t r) : top(t), bottom(b), left(l), right(r) {}
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
// filters outputs of a 2-D convolution over (height, width, channels) inputs; kernel
// (kernel_h, kernel_w, channels, filters), bias (filters,) -- Keras's layout.
Layer Conv2D(int64_t filters, Size2 kernel_size, const std::string& activation = "linear",
             Conv2DOptions options = {});
// The maximum (or mean, counting only cells inside the input) of each pool_size window.
Layer MaxPooling2D(Size2 pool_size = 2, Pool2DOptions options = {});
Layer AveragePooling2D(Size2 pool_size = 2, Pool2DOptions options = {});
// (height, width, channels) -> (channels): the mean over every position.
Layer GlobalAveragePooling2D(const std::string& name = "");
// Zeros around the height and width axes of (height, width, channels).
Layer ZeroPadding2D(Padding2D padding = 1, const std::string& name = "");
// Normalizes each channel (the last axis): in training with the batch's mean and (biased)
// variance, updating moving_mean and moving_variance as moving averages (momentum);
// in evaluate and predict with those moving statistics. Weights, in Keras's order: gamma,
// beta, moving_mean, moving_variance (the last two non-trainable). On several devices each
// device normalizes with its own batch's statistics (as Keras's MirroredStrategy does) and
// the moving statistics average the devices'.
Layer BatchNormalization(BatchNormalizationOptions options = {});
// The same values in another per-sample shape; one entry may be -1 (inferred).
Layer Reshape(const Shape& target_shape, const std::string& name = "");
// Element-wise sum of inputs of equal shape.
Layer Add(const std::string& name = "");
// Joins inputs along `axis` (of the per-sample shape; -1 = last).
Layer Concatenate(int axis = -1, const std::string& name = "");

}  // namespace tandem
