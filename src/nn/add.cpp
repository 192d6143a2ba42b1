// Add: y = x0 + x1 + ... (all the same shape). (batch, ...) x k -> (batch, ...)
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class AddLayer final : public LayerImpl {
 public:
  std::string type() const override { return "Add"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() < 2) throw ShapeError("Add '" + name + "': expects at least two inputs");
    for (const Shape& s : inputs) {
      if (s != inputs[0]) {
        throw ShapeError("Add '" + name + "': inputs differ in shape: " +
                         shape_to_string(inputs[0]) + " vs " + shape_to_string(s));
      }
    }
    return inputs[0];
  }
  void forward(const ForwardArgs& a) override {
    const int64_t n = a.batch * a.output_size;
    std::copy(a.inputs[0], a.inputs[0] + n, a.output);
    for (size_t i = 1; i < a.inputs.size(); ++i) write_or_add(a.output, a.inputs[i], n, true);
  }
  void backward(const BackwardArgs& b) override {
    const int64_t n = b.forward.batch * b.forward.output_size;
    for (const GradTarget& dx : b.grad_inputs) {
      if (dx.data) write_or_add(dx.data, b.grad_output, n, dx.accumulate);
    }
  }
  nlohmann::json config() const override { return {{"name", name}}; }
};

}  // namespace

std::shared_ptr<LayerImpl> add_from_config(const nlohmann::json&) {
  return std::make_shared<AddLayer>();
}

}  // namespace tandem::detail

namespace tandem {

Layer Add(const std::string& name) {
  auto layer = std::make_shared<detail::AddLayer>();
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
