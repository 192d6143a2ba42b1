// ZeroPadding2D: rows and columns of zeros around each image.
//   x (batch, h, w, c) -> y (batch, top + h + bottom, left + w + right, c)
// Backward takes the interior of dy: overwrites dx, or adds into it when accumulating.
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "nn/window.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

constexpr int64_t kMaxPadding = 1 << 16;

class ZeroPadding2DLayer final : public LayerImpl {
 public:
  explicit ZeroPadding2DLayer(Padding2D padding) : p_(padding) {
    for (const int64_t v : {p_.top, p_.bottom, p_.left, p_.right}) {
      if (v < 0 || v > kMaxPadding) {
        throw ConfigError("ZeroPadding2D: padding must be in [0, " + std::to_string(kMaxPadding) +
                          "], got ((" + std::to_string(p_.top) + ", " + std::to_string(p_.bottom) +
                          "), (" + std::to_string(p_.left) + ", " + std::to_string(p_.right) +
                          "))");
      }
    }
  }

  std::string type() const override { return "ZeroPadding2D"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    const Shape& in = image_input(inputs, "ZeroPadding2D '" + name + "'");
    return {p_.top + in[0] + p_.bottom, p_.left + in[1] + p_.right, in[2]};
  }

  void forward(const ForwardArgs& a) override {
    const Shape& in = a.input_shapes[0];
    const int64_t h = in[0], w = in[1], c = in[2];
    const int64_t ow = a.output_shape[1], oh = a.output_shape[0];
    std::fill(a.output, a.output + a.batch * a.output_size, 0.f);
    for (int64_t n = 0; n < a.batch; ++n) {
      for (int64_t y = 0; y < h; ++y) {
        const float* src = a.inputs[0] + ((n * h + y) * w) * c;
        float* dst = a.output + ((n * oh + y + p_.top) * ow + p_.left) * c;
        std::copy(src, src + w * c, dst);
      }
    }
  }

  void backward(const BackwardArgs& b) override {
    const GradTarget& dx = b.grad_inputs[0];
    if (!dx.data) return;
    const ForwardArgs& a = b.forward;
    const Shape& in = a.input_shapes[0];
    const int64_t h = in[0], w = in[1], c = in[2];
    const int64_t ow = a.output_shape[1], oh = a.output_shape[0];
    for (int64_t n = 0; n < a.batch; ++n) {
      for (int64_t y = 0; y < h; ++y) {
        const float* src = b.grad_output + ((n * oh + y + p_.top) * ow + p_.left) * c;
        write_or_add(dx.data + ((n * h + y) * w) * c, src, w * c, dx.accumulate);
      }
    }
  }

  nlohmann::json config() const override {
    return {{"name", name},
            {"padding", nlohmann::json::array({nlohmann::json::array({p_.top, p_.bottom}),
                                               nlohmann::json::array({p_.left, p_.right})})}};
  }

 private:
  Padding2D p_;
};

}  // namespace

// Keras writes padding as an int, a pair (rows, columns) or ((top, bottom), (left, right)).
std::shared_ptr<LayerImpl> zero_padding2d_from_config(const nlohmann::json& c) {
  const nlohmann::json p = c.value("padding", nlohmann::json(1));
  const auto bad = [&] {
    return ConfigError("ZeroPadding2D '" + c.value("name", std::string()) +
                       "': padding must be an int, a pair or a pair of pairs, got " + p.dump());
  };
  const auto integer = [&](const nlohmann::json& v) {
    if (!v.is_number_integer()) throw bad();
    return v.get<int64_t>();
  };
  Padding2D padding;
  if (p.is_number_integer()) {
    padding = Padding2D(integer(p));
  } else if (p.is_array() && p.size() == 2 && p[0].is_array() && p[1].is_array()) {
    if (p[0].size() != 2 || p[1].size() != 2) throw bad();
    padding = Padding2D(integer(p[0][0]), integer(p[0][1]), integer(p[1][0]), integer(p[1][1]));
  } else if (p.is_array() && p.size() == 2) {
    padding = Padding2D(integer(p[0]), integer(p[1]));
  } else {
    throw bad();
  }
  return std::make_shared<ZeroPadding2DLayer>(padding);
}

}  // namespace tandem::detail

namespace tandem {

Layer ZeroPadding2D(Padding2D padding, const std::string& name) {
  auto layer = std::make_shared<detail::ZeroPadding2DLayer>(padding);
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
