// MaxPooling2D and AveragePooling2D: the maximum or the mean of each window, per channel.
//   x (batch, h, w, c) -> y (batch, out_h, out_w, c)
// Max pooling in training keeps, in its scratch, where each maximum came from (oneDNN's
// workspace); backward routes each gradient there. Average pooling counts only cells
// inside the input (padding "same" at the edges), as Keras does. Backward overwrites dx,
// or adds into it when accumulating.
#include <nlohmann/json.hpp>

#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "nn/window.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

constexpr int64_t kMaxWindow = 1 << 16;

class Pool2DLayer final : public LayerImpl {
 public:
  Pool2DLayer(PoolKind kind, Size2 pool_size, Pool2DOptions options)
      : kind_(kind),
        pool_(pool_size),
        strides_(options.strides.value_or(pool_size)),
        padding_(parse_padding(options.padding, where(kind, options.name))) {
    name = options.name;
    const std::string w = where(kind_, name);
    check_size2(pool_, w + ": pool_size");
    check_size2(strides_, w + ": strides");
    for (const Size2 s : {pool_, strides_}) {
      if (s.height > kMaxWindow || s.width > kMaxWindow) {
        throw ConfigError(w + ": pool_size and strides must be <= " + std::to_string(kMaxWindow));
      }
    }
  }

  std::string type() const override {
    return kind_ == PoolKind::max ? "MaxPooling2D" : "AveragePooling2D";
  }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    const Shape& in = image_input(inputs, where(kind_, name));
    const AxisWindow h = axis_window(in[0], pool_.height, strides_.height, 1, padding_);
    const AxisWindow w = axis_window(in[1], pool_.width, strides_.width, 1, padding_);
    if (h.out <= 0 || w.out <= 0) {
      throw ShapeError(where(kind_, name) + ": pool_size " + std::to_string(pool_.height) + "x" +
                       std::to_string(pool_.width) + " does not fit its input " +
                       shape_to_string(in) + " with padding 'valid'");
    }
    return {h.out, w.out, in[2]};
  }

  int64_t scratch_floats(const std::vector<Shape>& inputs, int64_t batch) const override {
    if (kind_ != PoolKind::max) return 0;
    static_assert(kPoolWorkspaceBytesPerOutput == sizeof(float));
    return batch * shape_size(output_shape(inputs));
  }

  void forward(const ForwardArgs& a) override {
    a.backend.pool2d_forward(kind_, window(a), a.inputs[0], a.output,
                             a.training && kind_ == PoolKind::max ? a.scratch : nullptr);
  }

  void backward(const BackwardArgs& b) override {
    const GradTarget& dx = b.grad_inputs[0];
    if (!dx.data) return;
    const ForwardArgs& a = b.forward;
    b.forward.backend.pool2d_backward(kind_, window(a), b.grad_output,
                                      kind_ == PoolKind::max ? a.scratch : nullptr, dx.data,
                                      dx.accumulate);
  }

  nlohmann::json config() const override {
    return {{"name", name},
            {"pool_size", size2_to_json(pool_)},
            {"strides", size2_to_json(strides_)},
            {"padding", padding_name(padding_)}};
  }

 private:
  static std::string where(PoolKind kind, const std::string& name) {
    return std::string(kind == PoolKind::max ? "MaxPooling2D" : "AveragePooling2D") +
           (name.empty() ? std::string() : " '" + name + "'");
  }
  Window2d window(const ForwardArgs& a) const {
    return make_window(a.input_shapes[0], a.output_shape, a.batch, pool_, strides_, 1, padding_);
  }

  PoolKind kind_;
  Size2 pool_, strides_;
  Padding padding_;
};

std::shared_ptr<LayerImpl> pool_from_config(PoolKind kind, const nlohmann::json& c) {
  Pool2DOptions options;
  options.name = c.value("name", "");
  const std::string what =
      std::string(kind == PoolKind::max ? "MaxPooling2D" : "AveragePooling2D") + " '" +
      options.name + "'";
  const Size2 pool = size2_from_json(c.value("pool_size", nlohmann::json(2)), what + ": pool_size");
  if (c.contains("strides") && !c["strides"].is_null()) {
    options.strides = size2_from_json(c["strides"], what + ": strides");
  }
  options.padding = c.value("padding", "valid");
  return std::make_shared<Pool2DLayer>(kind, pool, options);
}

}  // namespace

std::shared_ptr<LayerImpl> max_pooling2d_from_config(const nlohmann::json& c) {
  return pool_from_config(PoolKind::max, c);
}
std::shared_ptr<LayerImpl> average_pooling2d_from_config(const nlohmann::json& c) {
  return pool_from_config(PoolKind::average, c);
}

}  // namespace tandem::detail

namespace tandem {

Layer MaxPooling2D(Size2 pool_size, Pool2DOptions options) {
  return Layer(std::make_shared<detail::Pool2DLayer>(PoolKind::max, pool_size, std::move(options)));
}
Layer AveragePooling2D(Size2 pool_size, Pool2DOptions options) {
  return Layer(
      std::make_shared<detail::Pool2DLayer>(PoolKind::average, pool_size, std::move(options)));
}

}  // namespace tandem
