// Activation: y = f(x), element-wise (softmax: over the last axis). (batch, ...) -> same.
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class ActivationLayer final : public LayerImpl {
 public:
  explicit ActivationLayer(ActivationKind kind) : kind_(kind) {}
  std::string type() const override { return "Activation"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() != 1) throw ShapeError("Activation '" + name + "': expects one input");
    return inputs[0];
  }
  ActivationKind output_activation() const override { return kind_; }

  void forward(const ForwardArgs& a) override {
    const int64_t cols = last_axis(a);
    a.backend.activation_forward(kind_, a.inputs[0], a.output, a.batch * a.output_size / cols,
                                 cols);
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const GradTarget& dx = b.grad_inputs[0];
    if (!dx.data) return;
    const int64_t cols = last_axis(a), rows = a.batch * a.output_size / cols;
    if (!b.grad_output_is_preactivation) {
      a.backend.activation_backward(kind_, a.output, b.grad_output, b.grad_output, rows, cols);
    }
    write_or_add(dx.data, b.grad_output, rows * cols, dx.accumulate);
  }

  nlohmann::json config() const override {
    return {{"name", name}, {"activation", activation_name(kind_)}};
  }

 private:
  static int64_t last_axis(const ForwardArgs& a) { return a.output_shape.back(); }

  ActivationKind kind_;
};

}  // namespace

std::shared_ptr<LayerImpl> activation_from_config(const nlohmann::json& c) {
  return std::make_shared<ActivationLayer>(
      parse_activation(c.at("activation").get<std::string>(), "Activation"));
}

}  // namespace tandem::detail

namespace tandem {

Layer Activation(const std::string& activation, const std::string& name) {
  auto layer = std::make_shared<detail::ActivationLayer>(
      parse_activation(activation, "Activation" + (name.empty() ? "" : " '" + name + "'")));
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
