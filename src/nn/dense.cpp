// Dense: y = activation(x . kernel + bias) on the last axis.
//   x (rows, in) -> y (rows, units), rows = batch * (other per-sample axes)
//   kernel (in, units), bias (units,)   -- Keras's layout
#include <nlohmann/json.hpp>

#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class DenseLayer final : public LayerImpl {
 public:
  DenseLayer(int64_t units, ActivationKind activation, DenseOptions options)
      : units_(units), activation_(activation), options_(std::move(options)) {
    if (units <= 0) throw ConfigError("Dense: units must be > 0, got " + std::to_string(units));
    name = options_.name;
  }

  std::string type() const override { return "Dense"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() != 1 || inputs[0].empty()) {
      throw ShapeError("Dense '" + name + "': expects one input of rank >= 1 (per sample)");
    }
    Shape out = inputs[0];
    out.back() = units_;
    return out;
  }

  std::vector<ParamSpec> param_specs(const std::vector<Shape>& inputs) const override {
    const int64_t in = inputs.at(0).back();
    std::vector<ParamSpec> specs = {
        {"kernel", {in, units_}, options_.kernel_initializer, in, units_}};
    if (options_.use_bias)
      specs.push_back({"bias", {units_}, options_.bias_initializer, in, units_});
    return specs;
  }

  ActivationKind output_activation() const override { return activation_; }

  void forward(const ForwardArgs& a) override {
    const int64_t in = a.input_sizes[0] * a.batch / rows(a);
    GemmArgs g;
    g.m = rows(a), g.n = units_, g.k = in;
    g.a = a.inputs[0], g.b = a.params, g.c = a.output;
    g.bias = options_.use_bias ? a.params + in * units_ : nullptr;
    const bool fused = activation_ != ActivationKind::softmax;
    if (fused) g.activation = activation_;
    a.backend.gemm(g);
    if (!fused) a.backend.activation_forward(activation_, a.output, a.output, g.m, g.n);
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const int64_t m = rows(a), in = a.input_sizes[0] * a.batch / m;
    float* dz = b.grad_output;  // (m, units): becomes the gradient w.r.t. the pre-activation
    if (!b.grad_output_is_preactivation) {
      a.backend.activation_backward(activation_, a.output, dz, dz, m, units_);
    }
    // d x (m, in) = dz (m, units) . kernel^T (units, in)
    if (b.grad_inputs[0].data) {
      a.backend.gemm({.m = m,
                      .n = in,
                      .k = units_,
                      .a = dz,
                      .b = a.params,
                      .trans_b = true,
                      .c = b.grad_inputs[0].data,
                      .accumulate = b.grad_inputs[0].accumulate});
    }
    if (b.weight_grads) {
      b.weight_grads->weight_grad_operands(b.param_offset, a.inputs[0], dz, m);
      return;
    }
    // d kernel (in, units) = x^T (in, m) . dz (m, units)
    a.backend.gemm({.m = in,
                    .n = units_,
                    .k = m,
                    .a = a.inputs[0],
                    .trans_a = true,
                    .b = dz,
                    .c = b.grads,
                    .accumulate = b.accumulate_param_grads});
    if (options_.use_bias) {
      a.backend.bias_grad(dz, b.grads + in * units_, m, units_, b.accumulate_param_grads);
    }
  }

  nlohmann::json config() const override {
    return {{"name", name},
            {"units", units_},
            {"activation", activation_name(activation_)},
            {"use_bias", options_.use_bias},
            {"kernel_initializer", options_.kernel_initializer.name},
            {"bias_initializer", options_.bias_initializer.name}};
  }

 private:
  // Rows of the GEMM: the batch times every per-sample axis but the last.
  int64_t rows(const ForwardArgs& a) const {
    return a.batch * (a.output_size / units_);  // output_shape = (..., units)
  }

  int64_t units_;
  ActivationKind activation_;
  DenseOptions options_;
};

}  // namespace

std::shared_ptr<LayerImpl> dense_from_config(const nlohmann::json& c) {
  DenseOptions options;
  options.use_bias = c.value("use_bias", true);
  options.kernel_initializer = Initializer(c.value("kernel_initializer", "glorot_uniform"));
  options.bias_initializer = Initializer(c.value("bias_initializer", "zeros"));
  options.name = c.value("name", "");
  return std::make_shared<DenseLayer>(
      c.at("units").get<int64_t>(),
      parse_activation(c.value("activation", "linear"), "Dense '" + options.name + "'"), options);
}

}  // namespace tandem::detail

namespace tandem {

Layer Dense(int64_t units, const std::string& activation, DenseOptions options) {
  const std::string where = "Dense" + (options.name.empty() ? "" : " '" + options.name + "'");
  return Layer(std::make_shared<detail::DenseLayer>(units, parse_activation(activation, where),
                                                    std::move(options)));
}

}  // namespace tandem
