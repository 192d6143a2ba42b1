// Models users train, built as their Keras programs build them: the report's MLP, Keras's
// MNIST convnet example, MiniGoogLeNet (the multi-GPU blog post's CIFAR-10 model) and a
// small ResNet. The CLI's --model and `advise` accept their names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/array.h"
#include "tandem/model.h"

namespace tandem::zoo {

// Input(784) -> Dense(4096, 2048, 512, 64; relu) -> Dense(10, softmax)
Model seed_mlp(int64_t classes = 10);
// Input(28, 28, 1) -> Conv2D(32, 3, relu) -> MaxPooling2D(2) -> Conv2D(64, 3, relu)
// -> MaxPooling2D(2) -> Flatten -> Dropout(0.5) -> Dense(classes, softmax)
Model mnist_convnet(const Shape& input = {28, 28, 1}, int64_t classes = 10);
// conv modules (Conv2D-BatchNormalization-relu), inception modules (1x1 and 3x3 branches
// concatenated) and downsample modules (a strided 3x3 conv beside a max pool), then
// AveragePooling2D(7), Dropout(0.5), Dense(classes), softmax -- for 32x32 inputs.
Model minigooglenet(const Shape& input = {32, 32, 3}, int64_t classes = 10);
// A conv stem and three residual stages (16, 32, 64 filters; two 3x3 Conv2D-BN per block,
// Add with the shortcut, relu), GlobalAveragePooling2D, Dense(classes, softmax).
Model small_resnet(const Shape& input = {32, 32, 3}, int64_t classes = 10);

// "seed-mlp", "mnist-convnet", "minigooglenet", "small-resnet"; input: the per-sample
// shape (empty: the model's default). Unknown name: ConfigError listing the names.
Model by_name(const std::string& name, const Shape& input = {}, int64_t classes = 10);
std::vector<std::string> names();
bool is_name(const std::string& name);
// A built-in model by name, or else a saved model file (Model::load: .tandem or .keras).
Model by_name_or_file(const std::string& name_or_path);

}  // namespace tandem::zoo
