// BatchNormalization on the last axis (channels):
//   x (batch, ..., channels) -> y (same), rows = batch * (every other per-sample axis)
//   gamma, beta, moving_mean, moving_variance (channels,)   -- Keras's weights, in order
// Training: normalizes with the batch's mean and biased variance (kept in scratch for
// backward); backward writes dx (overwritten, or added into when accumulating), dgamma and
// dbeta, and writes the batch statistics, weighted by batch * sample_weight, into the
// moving statistics' slots, from which the optimizer step makes the moving averages
// (optim/moving_averages.h). Inference: normalizes with the moving statistics (a backward
// then treats them as constants).
// Synchronized: training statistics over the global batch. Each replica sums, about the
// moving mean (the same on every replica, so the sums cancel little), x - m and (x - m)^2
// with its row count; those 2C + 1 doubles are summed across replicas (ReplicaSum), and
// backward sums dy and dy * (x - mean) alike (2C) before the input gradient. N replicas
// then compute what one computes on the whole batch.
#include <algorithm>
#include <cmath>
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
    // -1, or the last axis counted as Keras 2 writes it, the batch axis being 0 (3 for
    // images), checked against the input's rank when the layer is called.
    if (o_.axis != -1 && o_.axis < 1) {
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
    if (o_.axis > 0 && !inputs.empty() && o_.axis != static_cast<int>(inputs[0].size())) {
      throw ConfigError(where() + ": axis " + std::to_string(o_.axis) +
                        " is not the last axis of its input (channels last only)");
    }
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

  // The batch's mean and variance (C each); synchronized, then the 2C + 1 doubles summed
  // across replicas (64-byte aligned: 2C floats are a whole number of doubles).
  int64_t scratch_floats(const std::vector<Shape>& inputs, int64_t) const override {
    const int64_t c = inputs.at(0).back();
    return 2 * c + (o_.synchronized ? 2 * (2 * c + 1) : 0);
  }

  int64_t replica_sum_size(const std::vector<Shape>& inputs, bool backward) const override {
    const int64_t c = inputs.at(0).back();
    return o_.synchronized ? 2 * c + (backward ? 0 : 1) : 0;
  }

  void forward(const ForwardArgs& a) override {
    BatchNormArgs b = args(a.params, a.input_shapes[0].back(), a.batch * a.output_size, a.inputs[0],
                           a.training, a.scratch);
    if (a.training && o_.synchronized) {
      global_statistics(a, b);
      a.backend.batch_norm_forward(b, false, a.output);  // with the global statistics
      return;
    }
    a.backend.batch_norm_forward(b, a.training, a.output);
  }

  void backward(const BackwardArgs& b) override {
    const ForwardArgs& a = b.forward;
    const int64_t c = a.input_shapes[0].back();
    const BatchNormArgs n =
        args(a.params, c, a.batch * a.output_size, a.inputs[0], a.training, a.scratch);
    const GradTarget& dx = b.grad_inputs[0];
    float* grads = b.grads;
    float* dgamma = o_.scale ? grads : nullptr;
    float* dbeta = o_.center ? grads + (o_.scale ? c : 0) : nullptr;
    if (a.training && o_.synchronized) {
      synchronized_backward(b, n, dgamma, dbeta);
    } else {
      // With no input gradient wanted, dx goes over dy (oneDNN allows it in place).
      a.backend.batch_norm_backward(n, a.training, b.grad_output, dx.data ? dx.data : b.grad_output,
                                    dx.data && dx.accumulate, dgamma, dbeta,
                                    b.accumulate_param_grads);
    }
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
            {"synchronized", o_.synchronized},
            {"beta_initializer", o_.beta_initializer.name},
            {"gamma_initializer", o_.gamma_initializer.name},
            {"moving_mean_initializer", o_.moving_mean_initializer.name},
            {"moving_variance_initializer", o_.moving_variance_initializer.name}};
  }

 private:
  std::string where() const {
    return "BatchNormalization" + (name.empty() ? std::string() : " '" + name + "'");
  }

  static double* sums(float* scratch, int64_t c) {
    return reinterpret_cast<double*>(scratch + 2 * c);
  }
  const float* moving_mean(const float* params, int64_t c) const {
    return params + (o_.scale ? c : 0) + (o_.center ? c : 0);
  }

  // The global batch's mean and biased variance into b.mean and b.variance (scratch), from
  // sums about the moving mean m: mean = m + S1 / N, variance = S2 / N - (S1 / N)^2.
  void global_statistics(const ForwardArgs& a, BatchNormArgs& b) const {
    const int64_t c = b.channels;
    double* s = sums(a.scratch, c);
    BatchNormArgs about = b;
    about.mean = const_cast<float*>(moving_mean(a.params, c));  // read only
    a.backend.batch_norm_sums(about, nullptr, s);
    s[2 * c] = static_cast<double>(b.rows);
    if (a.replica_sum) a.replica_sum->sum(s, 2 * c + 1);
    const double rows = s[2 * c];
    for (int64_t i = 0; i < c; ++i) {
      const double offset = s[i] / rows;
      b.mean[i] = static_cast<float>(about.mean[i] + offset);
      b.variance[i] = static_cast<float>(std::max(0.0, s[c + i] / rows - offset * offset));
    }
  }

  // dgamma and dbeta from this replica's rows; dx from the sums over every replica's.
  void synchronized_backward(const BackwardArgs& b, const BatchNormArgs& n, float* dgamma,
                             float* dbeta) const {
    const ForwardArgs& a = b.forward;
    const int64_t c = n.channels;
    double* s = sums(a.scratch, c);
    const double rows = s[2 * c];  // the global batch's, from forward
    a.backend.batch_norm_sums(n, b.grad_output, s);
    for (int64_t i = 0; i < c; ++i) {
      const double rstd = 1.0 / std::sqrt(static_cast<double>(n.variance[i]) + n.epsilon);
      const auto g = static_cast<float>(s[c + i] * rstd), d = static_cast<float>(s[i]);
      if (dgamma) dgamma[i] = b.accumulate_param_grads ? dgamma[i] + g : g;
      if (dbeta) dbeta[i] = b.accumulate_param_grads ? dbeta[i] + d : d;
    }
    const GradTarget& dx = b.grad_inputs[0];
    if (a.replica_sum) a.replica_sum->sum(s, 2 * c);
    if (dx.data) {
      a.backend.batch_norm_backward_global(n, b.grad_output, s, rows, dx.data, dx.accumulate);
    }
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
  o.synchronized = c.value("synchronized", false);
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
