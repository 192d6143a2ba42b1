// BatchNormalization on the last axis (channels):
//   x (batch, ..., channels) -> y (same), rows = batch * (every other per-sample axis)
//   gamma, beta, moving_mean, moving_variance (channels,)   -- Keras's weights, in order
// Training: normalizes with the batch's mean and biased variance (kept in scratch for
// backward); backward writes dx (overwritten, or added into when accumulating), dgamma and
// dbeta, and writes the batch statistics, weighted by batch * sample_weight, into the
// moving statistics' slots, from which the optimizer step makes the moving averages
// (optim/moving_averages.h). Inference: normalizes with the moving statistics (a backward
// then treats them as constants).
#include <nlohmann/json.hpp>

#include "nn/layer.h"
#include "nn/layer_factories.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class BatchNormalizationLayer final : public LayerImpl {
 public:
  explicit BatchNormalizationLayer(BatchNormalizationOptions options) : o_(std::move(options)) {
    name = o_.name;
    if (o_.axis != -1) {
      throw ConfigError(where() + ": axis must be -1 (channels last), got " +
                        std::to_string(o_.axis));
    }
    if (!(o_.momentum >= 0 && o_.momentum < 1)) {
      throw ConfigError(where() + ": momentum must be in [0, 1), got " +
                        std::to_string(o_.momentum));
    }
    if (!(o_.epsilon > 0 && o_.epsilon < 1)) {
      throw ConfigError(where() + ": epsilon must be in (0, 1), got " + std::to_string(o_.epsilon));
    }
  }

  std::string type() const override { return "BatchNormalization"; }

  Shape output_shape(const std::vector<Shape>& inputs) const override {
    if (inputs.size() != 1 || inputs[0].empty()) {
      throw ShapeError(where() + ": expects one input of rank >= 1 (per sample)");
    }
    return inputs[0];
  }

  std::vector<ParamSpec> param_specs(const std::vector<Shape>& inputs) const override {
    const int64_t c = inputs.at(0).back();
    std::vector<ParamSpec> specs;
    if (o_.scale) specs.push_back({"gamma", {c}, o_.gamma_initializer, c, c});
    if (o_.center) specs.push_back({"beta", {c}, o_.beta_initializer, c, c});
    specs.push_back({"moving_mean", {c}, o_.moving_mean_initializer, c, c, false, o_.momentum});
    specs.push_back(
        {"moving_variance", {c}, o_.moving_variance_initializer, c, c, false, o_.momentum});
    return specs;
  }

  int64_t scratch_floats(const std::vector<Shape>& inputs, int64_t) const override {
    return 2 * inputs.at(0).back();  // the batch's mean and variance
  }

  void forward(const ForwardArgs& a) override {
    const BatchNormArgs b = args(a.params, a.input_shapes[0].back(), a.batch * a.output_size,
                                 a.inputs[0], a.training, a.scratch);
    a.backend.batch_norm_forward(b, a.training, a.output);
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const int64_t c = a.input_shapes[0].back();
    const BatchNormArgs n =
        args(a.params, c, a.batch * a.output_size, a.inputs[0], a.training, a.scratch);
    // With no input gradient wanted, dx goes over dy (oneDNN allows it in place).
    const GradTarget& dx = b.grad_inputs[0];
    float* grads = b.grads;
    float* dgamma = o_.scale ? grads : nullptr;
    float* dbeta = o_.center ? grads + (o_.scale ? c : 0) : nullptr;
    a.backend.batch_norm_backward(n, a.training, b.grad_output, dx.data ? dx.data : b.grad_output,
                                  dx.data && dx.accumulate, dgamma, dbeta,
                                  b.accumulate_param_grads);
    // The moving statistics' slots: the batch's, weighted. Zero for a gradient taken in
    // inference mode (only tests do that; no training step follows such a forward).
    float* moving = grads + (o_.scale ? c : 0) + (o_.center ? c : 0);
    const float weight = a.training ? static_cast<float>(a.batch) * b.sample_weight : 0.f;
    for (int64_t i = 0; i < 2 * c; ++i) {
      const float v = weight * a.scratch[i];  // mean, then variance
      moving[i] = b.accumulate_param_grads ? moving[i] + v : v;
    }
  }

  nlohmann::json config() const override {
    return {{"name", name},
            {"axis", o_.axis},
            {"momentum", o_.momentum},
            {"epsilon", o_.epsilon},
            {"center", o_.center},
            {"scale", o_.scale},
            {"beta_initializer", o_.beta_initializer.name},
            {"gamma_initializer", o_.gamma_initializer.name},
            {"moving_mean_initializer", o_.moving_mean_initializer.name},
            {"moving_variance_initializer", o_.moving_variance_initializer.name}};
  }

 private:
  std::string where() const {
    return "BatchNormalization" + (name.empty() ? std::string() : " '" + name + "'");
  }

  // The layer's slice: [gamma][beta][moving_mean][moving_variance]. Training uses (and
  // fills) the batch statistics in scratch; inference reads the moving ones.
  BatchNormArgs args(const float* params, int64_t c, int64_t elements, const float* x,
                     bool training, float* scratch) const {
    BatchNormArgs b;
    b.channels = c;
    b.rows = elements / c;
    b.epsilon = static_cast<float>(o_.epsilon);
    b.x = x;
    const float* p = params;
    if (o_.scale) b.gamma = p, p += c;
    if (o_.center) b.beta = p, p += c;
    if (training) {
      b.mean = scratch, b.variance = scratch + c;
    } else {  // read only in inference
      b.mean = const_cast<float*>(p), b.variance = const_cast<float*>(p + c);
    }
    return b;
  }

  BatchNormalizationOptions o_;
};

}  // namespace

std::shared_ptr<LayerImpl> batch_normalization_from_config(const nlohmann::json& c) {
  BatchNormalizationOptions o;
  o.name = c.value("name", "");
  const std::string where = "BatchNormalization '" + o.name + "'";
  if (c.value("synchronized", false)) {
    throw ConfigError(where + ": synchronized=True is not supported yet");
  }
  const nlohmann::json axis = c.value("axis", nlohmann::json(-1));
  if (axis.is_array() && axis.size() == 1 && axis[0].is_number_integer()) {
    o.axis = axis[0].get<int>();
  } else if (axis.is_number_integer()) {
    o.axis = axis.get<int>();
  } else {
    throw ConfigError(where + ": axis must be -1, got " + axis.dump());
  }
  o.momentum = c.value("momentum", 0.99);
  o.epsilon = c.value("epsilon", 1e-3);
  o.center = c.value("center", true);
  o.scale = c.value("scale", true);
  o.beta_initializer = Initializer(c.value("beta_initializer", "zeros"));
  o.gamma_initializer = Initializer(c.value("gamma_initializer", "ones"));
  o.moving_mean_initializer = Initializer(c.value("moving_mean_initializer", "zeros"));
  o.moving_variance_initializer = Initializer(c.value("moving_variance_initializer", "ones"));
  return std::make_shared<BatchNormalizationLayer>(o);
}

}  // namespace tandem::detail

namespace tandem {

Layer BatchNormalization(BatchNormalizationOptions options) {
  return Layer(std::make_shared<detail::BatchNormalizationLayer>(std::move(options)));
}

}  // namespace tandem
