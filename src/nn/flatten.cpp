// Flatten: (batch, d1, d2, ...) -> (batch, d1*d2*...). Row-major data is already flat, so
// forward and backward are copies.
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class FlattenLayer final : public LayerImpl {
 public:
  std::string type() const override { return "Flatten"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() != 1) throw ShapeError("Flatten '" + name + "': expects one input");
    return {shape_size(inputs[0])};
  }
  void forward(const ForwardArgs& a) override { copy_forward(a); }
  void backward(const BackwardArgs& b) override { copy_backward(b); }
  nlohmann::json config() const override { return {{"name", name}}; }
};

}  // namespace

std::shared_ptr<LayerImpl> flatten_from_config(const nlohmann::json&) {
  return std::make_shared<FlattenLayer>();
}

}  // namespace tandem::detail

namespace tandem {

Layer Flatten(const std::string& name) {
  auto layer = std::make_shared<detail::FlattenLayer>();
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
