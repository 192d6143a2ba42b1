// The models of include/tandem/zoo.h, written with the public API only (as a user would).
#include "tandem/zoo.h"

#include <algorithm>

#include "tandem/error.h"
#include "tandem/layers.h"

namespace tandem::zoo {
namespace {

// Conv2D -> BatchNormalization -> relu (the blog's conv_module).
Node conv_module(const Node& x, int64_t filters, Size2 kernel, Size2 strides,
                 const std::string& padding = "same") {
  const Node y = Conv2D(filters, kernel, "linear", {.strides = strides, .padding = padding})(x);
  return Activation("relu")(BatchNormalization()(y));
}

Node inception_module(const Node& x, int64_t filters_1x1, int64_t filters_3x3) {
  return Concatenate()({conv_module(x, filters_1x1, 1, 1), conv_module(x, filters_3x3, 3, 1)});
}

Node downsample_module(const Node& x, int64_t filters) {
  const Node conv = conv_module(x, filters, 3, 2, "valid");
  const Node pool = MaxPooling2D(3, {.strides = 2})(x);
  return Concatenate()({conv, pool});
}

Node residual_block(const Node& x, int64_t filters, int64_t stride) {
  Node y =
      Conv2D(filters, 3, "linear", {.strides = stride, .padding = "same", .use_bias = false})(x);
  y = Activation("relu")(BatchNormalization()(y));
  y = Conv2D(filters, 3, "linear", {.padding = "same", .use_bias = false})(y);
  y = BatchNormalization()(y);
  Node shortcut = x;
  if (stride != 1 || x.shape().back() != filters) {
    shortcut = Conv2D(filters, 1, "linear", {.strides = stride, .use_bias = false})(x);
    shortcut = BatchNormalization()(shortcut);
  }
  return Activation("relu")(Add()({y, shortcut}));
}

}  // namespace

Model seed_mlp(int64_t classes) {
  const Node inputs = Input({784});
  Node x = inputs;
  for (int64_t width : {4096, 2048, 512, 64}) x = Dense(width, "relu")(x);
  return Model(inputs, Dense(classes, "softmax")(x), "seed_mlp");
}

Model mnist_convnet(const Shape& input, int64_t classes) {
  const Node inputs = Input(input);
  Node x = MaxPooling2D(2)(Conv2D(32, 3, "relu")(inputs));
  x = MaxPooling2D(2)(Conv2D(64, 3, "relu")(x));
  x = Dropout(0.5)(Flatten()(x));
  return Model(inputs, Dense(classes, "softmax")(x), "mnist_convnet");
}

Model minigooglenet(const Shape& input, int64_t classes) {
  const Node inputs = Input(input);
  Node x = conv_module(inputs, 96, 3, 1);
  x = inception_module(x, 32, 32);
  x = inception_module(x, 32, 48);
  x = downsample_module(x, 80);
  x = inception_module(x, 112, 48);
  x = inception_module(x, 96, 64);
  x = inception_module(x, 80, 80);
  x = inception_module(x, 48, 96);
  x = downsample_module(x, 96);
  x = inception_module(x, 176, 160);
  x = inception_module(x, 176, 160);
  x = AveragePooling2D(7)(x);
  x = Flatten()(Dropout(0.5)(x));
  return Model(inputs, Activation("softmax")(Dense(classes)(x)), "minigooglenet");
}

Model small_resnet(const Shape& input, int64_t classes) {
  const Node inputs = Input(input);
  Node x = Conv2D(16, 3, "linear", {.padding = "same", .use_bias = false})(inputs);
  x = Activation("relu")(BatchNormalization()(x));
  x = residual_block(x, 16, 1);
  x = residual_block(x, 32, 2);
  x = residual_block(x, 64, 2);
  x = GlobalAveragePooling2D()(x);
  return Model(inputs, Dense(classes, "softmax")(x), "small_resnet");
}

std::vector<std::string> names() {
  return {"seed-mlp", "mnist-convnet", "minigooglenet", "small-resnet"};
}

bool is_name(const std::string& name) {
  const auto all = names();
  return std::find(all.begin(), all.end(), name) != all.end();
}

Model by_name_or_file(const std::string& name_or_path) {
  return is_name(name_or_path) ? by_name(name_or_path) : Model::load(name_or_path);
}

Model by_name(const std::string& name, const Shape& input, int64_t classes) {
  if (name == "seed-mlp") {
    if (!input.empty() && input != Shape{784}) {
      throw ConfigError("model seed-mlp takes inputs of shape (784,), not " +
                        shape_to_string(input));
    }
    return seed_mlp(classes);
  }
  if (name == "mnist-convnet")
    return mnist_convnet(input.empty() ? Shape{28, 28, 1} : input, classes);
  if (name == "minigooglenet")
    return minigooglenet(input.empty() ? Shape{32, 32, 3} : input, classes);
  if (name == "small-resnet")
    return small_resnet(input.empty() ? Shape{32, 32, 3} : input, classes);
  std::string known;
  for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown model '" + name + "' (built-in models: " + known + ")");
}

}  // namespace tandem::zoo
