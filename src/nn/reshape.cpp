// Reshape: the same row-major values in another per-sample shape; forward and backward are
// copies (backward overwrites dx, or adds into it when accumulating).
//   x (batch, ...) -> y (batch, target_shape), one target entry may be -1 (inferred)
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class ReshapeLayer final : public LayerImpl {
 public:
  explicit ReshapeLayer(Shape target, const std::string& layer_name) : target_(std::move(target)) {
    name = layer_name;
    if (target_.empty()) throw ConfigError(where() + ": target_shape is empty");
    int inferred = 0;
    for (int64_t d : target_) {
      if (d == -1) {
        ++inferred;
      } else if (d <= 0) {
        throw ConfigError(where() + ": target_shape " + shape_to_string(target_) +
                          " has a size that is neither positive nor -1");
      }
    }
    if (inferred > 1) {
      throw ConfigError(where() + ": target_shape " + shape_to_string(target_) +
                        " may have at most one -1");
    }
  }

  std::string type() const override { return "Reshape"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() != 1) throw ShapeError(where() + ": expects one input");
    const int64_t size = shape_size(inputs[0]);
    const auto mismatch = [&] {
      return ShapeError(where() + ": cannot reshape " + shape_to_string(inputs[0]) + " (" +
                        std::to_string(size) + " values) to " + shape_to_string(target_));
    };
    int64_t known = 1;  // product of the given sizes, checked against size as it grows
    for (int64_t d : target_) {
      if (d == -1) continue;
      if (d > size || known > size / d) throw mismatch();
      known *= d;
    }
    Shape out = target_;
    for (int64_t& d : out) {
      if (d == -1) {
        if (size % known != 0) throw mismatch();
        d = size / known;
      }
    }
    if (shape_size(out) != size) throw mismatch();
    return out;
  }

  void forward(const ForwardArgs& a) override { copy_forward(a); }
  void backward(const BackwardArgs& b) override { copy_backward(b); }
  nlohmann::json config() const override { return {{"name", name}, {"target_shape", target_}}; }

 private:
  std::string where() const { return "Reshape" + (name.empty() ? "" : " '" + name + "'"); }
  Shape target_;
};

}  // namespace

std::shared_ptr<LayerImpl> reshape_from_config(const nlohmann::json& c) {
  const nlohmann::json& t = c.at("target_shape");
  Shape target;
  if (t.is_array()) {
    for (const auto& d : t) {
      if (!d.is_number_integer()) {
        throw ConfigError("Reshape: target_shape must be a list of integers, got " + t.dump());
      }
      target.push_back(d.get<int64_t>());
    }
  }
  return std::make_shared<ReshapeLayer>(target, c.value("name", ""));
}

}  // namespace tandem::detail

namespace tandem {

Layer Reshape(const Shape& target_shape, const std::string& name) {
  return Layer(std::make_shared<detail::ReshapeLayer>(target_shape, name));
}

}  // namespace tandem
