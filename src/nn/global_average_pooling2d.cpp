// GlobalAveragePooling2D: the mean of each channel over every position.
//   x (batch, h, w, c) -> y (batch, c)
// One average-pooling window covering the whole image; backward spreads dy / (h * w) over
// it, overwriting dx or adding into it when accumulating.
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "nn/window.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class GlobalAveragePooling2DLayer final : public LayerImpl {
 public:
  std::string type() const override { return "GlobalAveragePooling2D"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    return {image_input(inputs, "GlobalAveragePooling2D '" + name + "'")[2]};
  }

  void forward(const ForwardArgs& a) override {
    a.backend.pool2d_forward(PoolKind::average, window(a), a.inputs[0], a.output, nullptr);
  }

  void backward(const BackwardArgs& b) override {
    const GradTarget& dx = b.grad_inputs[0];
    if (!dx.data) return;
    b.forward.backend.pool2d_backward(PoolKind::average, window(b.forward), b.grad_output, nullptr,
                                      dx.data, dx.accumulate);
  }

  nlohmann::json config() const override { return {{"name", name}}; }

 private:
  static Window2d window(const ForwardArgs& a) {
    const Shape& in = a.input_shapes[0];
    Window2d w;
    w.batch = a.batch;
    w.in_h = in[0], w.in_w = in[1], w.in_c = in[2];
    w.out_h = 1, w.out_w = 1, w.out_c = in[2];
    w.kernel_h = in[0], w.kernel_w = in[1];
    return w;
  }
};

}  // namespace

std::shared_ptr<LayerImpl> global_average_pooling2d_from_config(const nlohmann::json& c) {
  if (c.value("keepdims", false)) {
    throw ConfigError("GlobalAveragePooling2D '" + c.value("name", std::string()) +
                      "': keepdims=True is not supported");
  }
  return std::make_shared<GlobalAveragePooling2DLayer>();
}

}  // namespace tandem::detail

namespace tandem {

Layer GlobalAveragePooling2D(const std::string& name) {
  auto layer = std::make_shared<detail::GlobalAveragePooling2DLayer>();
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
