#include "nn/window.h"

#include "tandem/error.h"

namespace tandem::detail {

Padding parse_padding(const std::string& name, const std::string& where) {
  if (name == "valid") return Padding::valid;
  if (name == "same") return Padding::same;
  throw ConfigError(where + ": padding must be 'valid' or 'same', got '" + name + "'");
}

const char* padding_name(Padding padding) {
  return padding == Padding::valid ? "valid" : "same";
}

AxisWindow axis_window(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                       Padding padding) {
  const int64_t span = (kernel - 1) * dilation + 1;
  if (padding == Padding::valid) {
    return {in >= span ? (in - span) / stride + 1 : 0, 0, 0};
  }
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + span - in, 0);
  return {out, total / 2, total - total / 2};
}

const Shape& image_input(const std::vector<Shape>& inputs, const std::string& what) {
  if (inputs.size() != 1) {
    throw ShapeError(what + ": expects one input, got " + std::to_string(inputs.size()));
  }
  const Shape& s = inputs[0];
  if (s.size() != 3) {
    throw ShapeError(what +
                     ": expects inputs of shape (height, width, channels) per sample "
                     "(channels last), got " +
                     shape_to_string(s) +
                     (s.size() < 3 ? "; reshape flat data or start the model with "
                                     "Input((height, width, channels))"
                                   : ""));
  }
  for (int64_t d : s) {
    if (d <= 0) throw ShapeError(what + ": input shape " + shape_to_string(s) + " has a zero size");
  }
  return s;
}

Window2d make_window(const Shape& input, const Shape& output, int64_t batch, Size2 kernel,
                     Size2 strides, Size2 dilation, Padding padding) {
  const AxisWindow h =
      axis_window(input[0], kernel.height, strides.height, dilation.height, padding);
  const AxisWindow w = axis_window(input[1], kernel.width, strides.width, dilation.width, padding);
  Window2d win;
  win.batch = batch;
  win.in_h = input[0], win.in_w = input[1], win.in_c = input[2];
  win.out_h = output[0], win.out_w = output[1], win.out_c = output[2];
  win.kernel_h = kernel.height, win.kernel_w = kernel.width;
  win.stride_h = strides.height, win.stride_w = strides.width;
  win.dilation_h = dilation.height, win.dilation_w = dilation.width;
  win.pad_top = h.pad_before, win.pad_bottom = h.pad_after;
  win.pad_left = w.pad_before, win.pad_right = w.pad_after;
  return win;
}

nlohmann::json size2_to_json(Size2 size) {
  return nlohmann::json::array({size.height, size.width});
}

void check_size2(Size2 size, const std::string& what) {
  if (size.height < 1 || size.width < 1) {
    throw ConfigError(what + " must be >= 1, got (" + std::to_string(size.height) + ", " +
                      std::to_string(size.width) + ")");
  }
}

Size2 size2_from_json(const nlohmann::json& value, const std::string& what) {
  Size2 size;
  if (value.is_number_integer()) {
    size = Size2(value.get<int64_t>());
  } else if (value.is_array() && value.size() == 2 && value[0].is_number_integer() &&
             value[1].is_number_integer()) {
    size = Size2(value[0].get<int64_t>(), value[1].get<int64_t>());
  } else {
    throw ConfigError(what + " must be an integer or a pair of integers, got " + value.dump());
  }
  check_size2(size, what);
  return size;
}

}  // namespace tandem::detail
