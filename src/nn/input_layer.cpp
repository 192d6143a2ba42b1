// InputLayer: the graph's entry; its "output" is the batch itself.
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class InputLayer final : public LayerImpl {
 public:
  explicit InputLayer(Shape shape) : shape_(std::move(shape)) {
    for (int64_t d : shape_) {
      if (d <= 0) {
        throw ShapeError("Input: every dimension must be > 0, got " + shape_to_string(shape_));
      }
    }
    if (shape_.empty()) throw ShapeError("Input: shape must have at least one dimension");
  }
  std::string type() const override { return "InputLayer"; }
  Shape output_shape(const std::vector<Shape>&) const override { return shape_; }
  bool is_input() const override { return true; }
  void forward(const ForwardArgs&) override {}
  void backward(const BackwardArgs&) override {}
  nlohmann::json config() const override { return {{"name", name}, {"shape", shape_}}; }

 private:
  Shape shape_;
};

}  // namespace

std::shared_ptr<LayerImpl> input_layer_from_config(const nlohmann::json& c) {
  return std::make_shared<InputLayer>(c.at("shape").get<Shape>());
}

}  // namespace tandem::detail

namespace tandem {

Node Input(const Shape& shape, const std::string& name) {
  auto node = std::make_shared<detail::NodeData>();
  node->layer = std::make_shared<detail::InputLayer>(shape);
  node->layer->name = name;
  node->shape = shape;
  return Node(std::move(node));
}

}  // namespace tandem
