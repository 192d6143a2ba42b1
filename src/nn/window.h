// What Conv2D and the pooling layers share: padding modes, the output size of a window
// sliding along one axis, and the (height, width, channels) input check.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "tandem/layers.h"

namespace tandem::detail {

enum class Padding { valid, same };

// "valid" | "same" (Keras's names); anything else is a ConfigError naming `where`.
Padding parse_padding(const std::string& name, const std::string& where);
const char* padding_name(Padding padding);

// A window of `kernel` cells, `dilation` apart, stepping `stride` along an axis of `in`.
//   valid: out = (in - span) / stride + 1, no padding (span = (kernel - 1) * dilation + 1)
//   same:  out = ceil(in / stride), padded so the windows cover the axis; the odd cell of
//          padding goes after (TensorFlow's and Keras's rule).
struct AxisWindow {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};
AxisWindow axis_window(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                       Padding padding);

// Checks one (height, width, channels) input; `what` is "Conv2D 'conv2d'" for errors.
const Shape& image_input(const std::vector<Shape>& inputs, const std::string& what);

// The Window2d of a layer's call: input (h, w, c) -> output (oh, ow, oc), this batch.
Window2d make_window(const Shape& input, const Shape& output, int64_t batch, Size2 kernel,
                     Size2 strides, Size2 dilation, Padding padding);

// Size2 as Keras writes it in a config: [height, width]; reads an int or a pair, checking
// each is >= 1. `what` names the layer and argument for errors.
nlohmann::json size2_to_json(Size2 size);
Size2 size2_from_json(const nlohmann::json& value, const std::string& what);
void check_size2(Size2 size, const std::string& what);

}  // namespace tandem::detail
