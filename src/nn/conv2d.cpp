// Conv2D: y = activation(conv(x, kernel) + bias), channels last.
//   x (batch, h, w, in) -> y (batch, out_h, out_w, filters)
//   kernel (kh, kw, in, filters), bias (filters,)   -- Keras's layout
// Backward overwrites (or, with accumulate, adds into) dx, dkernel and dbias; the
// activation's derivative is taken in place on grad_output from the saved output.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "nn/window.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Beyond this a window size is a typo, and products of sizes could overflow.
constexpr int64_t kMaxWindow = 1 << 16;

class Conv2DLayer final : public LayerImpl {
 public:
  Conv2DLayer(int64_t filters, Size2 kernel_size, ActivationKind activation, Conv2DOptions options)
      : filters_(filters),
        kernel_(kernel_size),
        activation_(activation),
        padding_(parse_padding(options.padding, where(options.name))),
        options_(std::move(options)) {
    name = options_.name;
    const std::string w = where(name);
    if (filters <= 0 || filters > kMaxWindow * kMaxWindow) {
      throw ConfigError(w + ": filters must be > 0, got " + std::to_string(filters));
    }
    check_size2(kernel_, w + ": kernel_size");
    check_size2(options_.strides, w + ": strides");
    check_size2(options_.dilation_rate, w + ": dilation_rate");
    for (const Size2 s : {kernel_, options_.strides, options_.dilation_rate}) {
      if (s.height > kMaxWindow || s.width > kMaxWindow) {
        throw ConfigError(w + ": kernel_size, strides and dilation_rate must be <= " +
                          std::to_string(kMaxWindow));
      }
    }
    const bool strided = options_.strides.height > 1 || options_.strides.width > 1;
    const bool dilated = options_.dilation_rate.height > 1 || options_.dilation_rate.width > 1;
    if (strided && dilated) {
      throw ConfigError(w +
                        ": strides > 1 cannot be combined with dilation_rate > 1 (as in Keras)");
    }
  }

  std::string type() const override { return "Conv2D"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    const Shape& in = image_input(inputs, where(name));
    const Size2 s = options_.strides, d = options_.dilation_rate;
    const AxisWindow h = axis_window(in[0], kernel_.height, s.height, d.height, padding_);
    const AxisWindow w = axis_window(in[1], kernel_.width, s.width, d.width, padding_);
    if (h.out <= 0 || w.out <= 0) {
      throw ShapeError(where(name) + ": kernel " + std::to_string(kernel_.height) + "x" +
                       std::to_string(kernel_.width) + " (dilation " + std::to_string(d.height) +
                       "x" + std::to_string(d.width) + ") does not fit its input " +
                       shape_to_string(in) + " with padding 'valid'");
    }
    return {h.out, w.out, filters_};
  }

  std::vector<ParamSpec> param_specs(const std::vector<Shape>& inputs) const override {
    const int64_t in = inputs.at(0).at(2), area = kernel_.height * kernel_.width;
    // Keras's fans for a conv kernel: the receptive field times the channels on each side.
    // Saturated: the graph refuses a kernel that large before anything is drawn.
    const auto fan = [](int64_t a, int64_t b) {
      int64_t r = 0;
      return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
    };
    const int64_t fan_in = fan(area, in), fan_out = fan(area, filters_);
    std::vector<ParamSpec> specs = {{"kernel",
                                     {kernel_.height, kernel_.width, in, filters_},
                                     options_.kernel_initializer,
                                     fan_in,
                                     fan_out}};
    if (options_.use_bias) {
      specs.push_back({"bias", {filters_}, options_.bias_initializer, fan_in, fan_out});
    }
    return specs;
  }

  ActivationKind output_activation() const override { return activation_; }

  void forward(const ForwardArgs& a) override {
    const Window2d w = window(a);
    const float* bias = options_.use_bias ? a.params + kernel_size(w) : nullptr;
    const bool fused = activation_ != ActivationKind::softmax;
    a.backend.conv2d_forward(w, a.inputs[0], a.params, bias,
                             fused ? activation_ : ActivationKind::linear, a.output);
    if (!fused) {
      a.backend.activation_forward(activation_, a.output, a.output, w.output_size() / filters_,
                                   filters_);
    }
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const Window2d w = window(a);
    float* dz = b.grad_output;  // (batch, out_h, out_w, filters), then w.r.t. the pre-activation
    if (!b.grad_output_is_preactivation) {
      a.backend.activation_backward(activation_, a.output, dz, dz, w.output_size() / filters_,
                                    filters_);
    }
    if (b.grad_inputs[0].data) {
      a.backend.conv2d_backward_data(w, dz, a.params, b.grad_inputs[0].data,
                                     b.grad_inputs[0].accumulate);
    }
    a.backend.conv2d_backward_weights(w, a.inputs[0], dz, b.grads,
                                      options_.use_bias ? b.grads + kernel_size(w) : nullptr,
                                      b.accumulate_param_grads);
  }

  nlohmann::json config() const override {
    return {{"name", name},
            {"filters", filters_},
            {"kernel_size", size2_to_json(kernel_)},
            {"strides", size2_to_json(options_.strides)},
            {"padding", padding_name(padding_)},
            {"dilation_rate", size2_to_json(options_.dilation_rate)},
            {"activation", activation_name(activation_)},
            {"use_bias", options_.use_bias},
            {"kernel_initializer", options_.kernel_initializer.name},
            {"bias_initializer", options_.bias_initializer.name}};
  }

 private:
  static std::string where(const std::string& name) {
    return "Conv2D" + (name.empty() ? std::string() : " '" + name + "'");
  }
  Window2d window(const ForwardArgs& a) const {
    return make_window(a.input_shapes[0], a.output_shape, a.batch, kernel_, options_.strides,
                       options_.dilation_rate, padding_);
  }
  static int64_t kernel_size(const Window2d& w) {
    return w.kernel_h * w.kernel_w * w.in_c * w.out_c;
  }

  int64_t filters_;
  Size2 kernel_;
  ActivationKind activation_;
  Padding padding_;
  Conv2DOptions options_;
};

}  // namespace

std::shared_ptr<LayerImpl> conv2d_from_config(const nlohmann::json& c) {
  Conv2DOptions options;
  options.name = c.value("name", "");
  const std::string what = "Conv2D '" + options.name + "'";
  options.strides = size2_from_json(c.value("strides", nlohmann::json(1)), what + ": strides");
  options.padding = c.value("padding", "valid");
  options.dilation_rate =
      size2_from_json(c.value("dilation_rate", nlohmann::json(1)), what + ": dilation_rate");
  options.use_bias = c.value("use_bias", true);
  options.kernel_initializer = Initializer(c.value("kernel_initializer", "glorot_uniform"));
  options.bias_initializer = Initializer(c.value("bias_initializer", "zeros"));
  return std::make_shared<Conv2DLayer>(
      c.at("filters").get<int64_t>(), size2_from_json(c.at("kernel_size"), what + ": kernel_size"),
      parse_activation(c.value("activation", "linear"), what), options);
}

}  // namespace tandem::detail

namespace tandem {

Layer Conv2D(int64_t filters, Size2 kernel_size, const std::string& activation,
             Conv2DOptions options) {
  const std::string where = "Conv2D" + (options.name.empty() ? "" : " '" + options.name + "'");
  return Layer(std::make_shared<detail::Conv2DLayer>(
      filters, kernel_size, parse_activation(activation, where), std::move(options)));
}

}  // namespace tandem
