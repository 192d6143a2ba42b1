// Dropout (inverted): in training y = x * mask / (1 - rate), mask ~ Bernoulli(1 - rate);
// identity otherwise. (batch, ...) -> same. The scaled mask is kept in scratch for backward.
#include <bit>
#include <cmath>
#include <cstdint>

#include "core/parallel_for.h"
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
    const auto threshold = static_cast<uint64_t>(std::ceil(static_cast<double>(keep) * 0x1.0p24));
    const auto scale_bits = std::bit_cast<uint32_t>(scale);
    // Each sample has its own stream, so samples are drawn in parallel with the same masks.
#pragma omp parallel for num_threads(a.backend.threads()) if (n >= kParallelGrain)
    for (int64_t b = 0; b < a.batch; ++b) {
      Rng rng(Rng::derive(a.stream, static_cast<uint64_t>(a.first_sample + b)));
      float* row = mask + b * a.output_size;
      const float* in = x + b * a.output_size;
      float* out = a.output + b * a.output_size;
      // rng.uniform() < keep, on the uniform's 24 integer bits and without a branch (a
      // kept-or-dropped branch mispredicts on every other element): the same masks.
      for (int64_t i = 0; i < a.output_size; ++i) {
        const uint32_t kept = 0u - static_cast<uint32_t>((rng.next() >> 40) < threshold);
        row[i] = std::bit_cast<float>(scale_bits & kept);
      }
#pragma omp simd
      for (int64_t i = 0; i < a.output_size; ++i) out[i] = in[i] * row[i];
    }
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
