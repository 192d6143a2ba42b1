// Dropout (inverted): in training y = x * mask / (1 - rate), mask ~ Bernoulli(1 - rate);
// identity otherwise. (batch, ...) -> same. The scaled mask is kept in scratch for backward.
#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class DropoutLayer final : public LayerImpl {
 public:
  explicit DropoutLayer(double rate) : rate_(rate) {
    if (!(rate >= 0.0 && rate < 1.0)) {
      throw ConfigError("Dropout: rate must be in [0, 1), got " + std::to_string(rate));
    }
  }
  std::string type() const override { return "Dropout"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() != 1) throw ShapeError("Dropout '" + name + "': expects one input");
    return inputs[0];
  }
  int64_t scratch_floats(const std::vector<Shape>& inputs, int64_t batch) const override {
    return batch * shape_size(inputs.at(0));
  }

  void forward(const ForwardArgs& a) override {
    const int64_t n = a.batch * a.output_size;
    const float* x = a.inputs[0];
    if (!a.training || rate_ == 0.0) {
      std::copy(x, x + n, a.output);
      return;
    }
    const float scale = static_cast<float>(1.0 / (1.0 - rate_));
    const float keep = static_cast<float>(1.0 - rate_);
    float* mask = a.scratch;  // (batch, size): 0 or 1/(1-rate)
    for (int64_t b = 0; b < a.batch; ++b) {
      Rng rng(Rng::derive(a.stream, static_cast<uint64_t>(a.first_sample + b)));
      float* row = mask + b * a.output_size;
      for (int64_t i = 0; i < a.output_size; ++i) row[i] = rng.uniform() < keep ? scale : 0.f;
    }
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) a.output[i] = x[i] * mask[i];
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const GradTarget& dx = b.grad_inputs[0];
    if (!dx.data) return;
    const int64_t n = a.batch * a.output_size;
    float* dy = b.grad_output;
    if (a.training && rate_ != 0.0) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) dy[i] *= a.scratch[i];
    }
    write_or_add(dx.data, dy, n, dx.accumulate);
  }

  nlohmann::json config() const override {
    return {{"name", name}, {"rate", rate_}};
  }

 private:
  double rate_;
};

}  // namespace

std::shared_ptr<LayerImpl> dropout_from_config(const nlohmann::json& c) {
  return std::make_shared<DropoutLayer>(c.at("rate").get<double>());
}

}  // namespace tandem::detail

namespace tandem {

Layer Dropout(double rate, const std::string& name) {
  auto layer = std::make_shared<detail::DropoutLayer>(rate);
  layer->name = name;
  return Layer(layer);
}

}  // namespace tandem
