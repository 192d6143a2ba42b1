// The three update rules. Loops are element-wise over a contiguous range: vectorised, split
// across the device's threads, and memory-bound (RMSprop reads w, g, v and writes w, v).
#include <cmath>

#include "core/parallel_for.h"
#include "core/simd.h"
#include "optim/optimizer_kernel.h"
#include "tandem/error.h"

namespace tandem {

Optimizer SGD(double learning_rate, double momentum, bool nesterov) {
  Optimizer o;
  o.name = "sgd", o.learning_rate = learning_rate, o.momentum = momentum, o.nesterov = nesterov;
  return o;
}

Optimizer RMSprop(double learning_rate, double rho, double epsilon) {
  Optimizer o;
  o.name = "rmsprop", o.learning_rate = learning_rate, o.rho = rho, o.epsilon = epsilon;
  return o;
}

Optimizer Adam(double learning_rate, double beta_1, double beta_2, double epsilon) {
  Optimizer o;
  o.name = "adam", o.learning_rate = learning_rate, o.beta_1 = beta_1, o.beta_2 = beta_2;
  o.epsilon = epsilon;
  return o;
}

Optimizer optimizer_from_name(const std::string& name) {
  if (name == "sgd") return SGD();
  if (name == "rmsprop") return RMSprop();
  if (name == "adam") return Adam();
  throw ConfigError("unknown optimizer '" + name + "' (known: sgd, rmsprop, adam)");
}

namespace detail {
namespace {

// The update rules as plain loops over [begin, end): vectorised, and compiled per ISA.
TANDEM_MULTIVERSION void sgd_range(float* __restrict w, const float* __restrict g, int64_t begin,
                                   int64_t end, float lr) {
  for (int64_t i = begin; i < end; ++i) w[i] -= lr * g[i];
}

TANDEM_MULTIVERSION void momentum_range(float* __restrict w, const float* __restrict g,
                                        float* __restrict m, int64_t begin, int64_t end, float lr,
                                        float mu, bool nesterov) {
  if (nesterov) {
    for (int64_t i = begin; i < end; ++i) {
      m[i] = mu * m[i] - lr * g[i];
      w[i] += mu * m[i] - lr * g[i];
    }
  } else {
    for (int64_t i = begin; i < end; ++i) {
      m[i] = mu * m[i] - lr * g[i];
      w[i] += m[i];
    }
  }
}

TANDEM_MULTIVERSION void rmsprop_range(float* __restrict w, const float* __restrict g,
                                       float* __restrict v, int64_t begin, int64_t end, float lr,
                                       float rho, float eps) {
  for (int64_t i = begin; i < end; ++i) {
    v[i] = rho * v[i] + (1.f - rho) * g[i] * g[i];
    w[i] -= lr * g[i] / std::sqrt(v[i] + eps);
  }
}

TANDEM_MULTIVERSION void adam_range(float* __restrict w, const float* __restrict g,
                                    float* __restrict m, float* __restrict v, int64_t begin,
                                    int64_t end, float alpha, float b1, float b2, float eps) {
  for (int64_t i = begin; i < end; ++i) {
    m[i] += (g[i] - m[i]) * (1.f - b1);
    v[i] += (g[i] * g[i] - v[i]) * (1.f - b2);
    w[i] -= m[i] * alpha / (std::sqrt(v[i]) + eps);
  }
}

class SgdKernel final : public OptimizerKernel {
 public:
  explicit SgdKernel(const Optimizer& c)
      : momentum_(static_cast<float>(c.momentum)), nesterov_(c.nesterov) {}
  int state_slots() const override { return momentum_ != 0.f ? 1 : 0; }
  void update(float* w, const float* g, float* const* state, int64_t begin, int64_t end, int64_t,
              double learning_rate, int threads, int64_t) const override {
    const float lr = static_cast<float>(learning_rate);
    parallel_for(begin, end, threads, [&](int64_t b, int64_t e) {
      if (momentum_ == 0.f)
        sgd_range(w, g, b, e, lr);
      else
        momentum_range(w, g, state[0], b, e, lr, momentum_, nesterov_);
    });
  }

 private:
  float momentum_;
  bool nesterov_;
};

class RmspropKernel final : public OptimizerKernel {
 public:
  explicit RmspropKernel(const Optimizer& c)
      : rho_(static_cast<float>(c.rho)), epsilon_(static_cast<float>(c.epsilon)) {}
  int state_slots() const override { return 1; }
  void update(float* w, const float* g, float* const* state, int64_t begin, int64_t end, int64_t,
              double learning_rate, int threads, int64_t) const override {
    const float lr = static_cast<float>(learning_rate);
    parallel_for(begin, end, threads, [&](int64_t b, int64_t e) {
      rmsprop_range(w, g, state[0], b, e, lr, rho_, epsilon_);
    });
  }

 private:
  float rho_, epsilon_;
};

class AdamKernel final : public OptimizerKernel {
 public:
  explicit AdamKernel(const Optimizer& c) : config_(c) {}
  int state_slots() const override { return 2; }
  void update(float* w, const float* g, float* const* state, int64_t begin, int64_t end,
              int64_t iteration, double learning_rate, int threads, int64_t) const override {
    const float b1 = static_cast<float>(config_.beta_1), b2 = static_cast<float>(config_.beta_2);
    const float eps = static_cast<float>(config_.epsilon);
    // Bias correction with float32 powers, as Keras computes it.
    const float t = static_cast<float>(iteration);
    const float alpha = static_cast<float>(learning_rate) * std::sqrt(1.f - std::pow(b2, t)) /
                        (1.f - std::pow(b1, t));
    parallel_for(begin, end, threads, [&](int64_t b, int64_t e) {
      adam_range(w, g, state[0], state[1], b, e, alpha, b1, b2, eps);
    });
  }

 private:
  Optimizer config_;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw ConfigError("optimizer: " + what);
}

}  // namespace

std::unique_ptr<OptimizerKernel> make_optimizer_kernel(const Optimizer& c) {
  require(c.learning_rate >= 0 && std::isfinite(c.learning_rate),
          "learning_rate must be >= 0, got " + std::to_string(c.learning_rate));
  if (c.name == "sgd") {
    require(c.momentum >= 0 && c.momentum < 1, "sgd momentum must be in [0, 1)");
    return std::make_unique<SgdKernel>(c);
  }
  if (c.name == "rmsprop") {
    require(c.rho >= 0 && c.rho < 1, "rmsprop rho must be in [0, 1)");
    require(c.epsilon > 0, "rmsprop epsilon must be > 0");
    return std::make_unique<RmspropKernel>(c);
  }
  if (c.name == "adam") {
    require(c.beta_1 >= 0 && c.beta_1 < 1, "adam beta_1 must be in [0, 1)");
    require(c.beta_2 >= 0 && c.beta_2 < 1, "adam beta_2 must be in [0, 1)");
    require(c.epsilon > 0, "adam epsilon must be > 0");
    return std::make_unique<AdamKernel>(c);
  }
  throw ConfigError("unknown optimizer '" + c.name + "' (known: sgd, rmsprop, adam)");
}

}  // namespace detail
}  // namespace tandem
