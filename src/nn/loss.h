// Losses with Keras semantics, computed over the last axis and averaged over the others.
// Every function returns SUMS over the batch (not means) so that data-parallel replicas can
// add their parts and divide once by the global batch: the result then does not depend on
// how the batch was split.
#pragma once

#include <cstdint>
#include <string>

#include "backend/activation.h"

namespace tandem::detail {

enum class LossKind {
  categorical_crossentropy,
  sparse_categorical_crossentropy,
  binary_crossentropy,
  mean_squared_error
};

// Accepts Keras's names and aliases (mse, categorical_crossentropy, ...). ConfigError else.
LossKind parse_loss(const std::string& name);
const char* loss_name(LossKind kind);

// Keras's backend epsilon, used to clip probabilities before log.
inline constexpr float kEpsilon = 1e-7f;

class Loss {
 public:
  explicit Loss(LossKind kind) : kind_(kind) {}
  LossKind kind() const { return kind_; }

  // Target values per sample for a model output of output_size values with last axis
  // `classes`: sparse labels take one value per row, others one per output value.
  int64_t target_size(int64_t output_size, int64_t classes) const;
  // True when the gradient can be taken through this output activation in closed form
  // (softmax + cross-entropy, sigmoid + binary cross-entropy): stabler and cheaper.
  bool fuses_with(ActivationKind activation) const;

  // out (batch, output_size) viewed as rows of `classes`; target as target_size says.
  // Returns the sum over the batch of per-sample losses. When grad is not null it receives
  // grad_scale * d(per-sample loss)/d(out) -- or d/d(pre-activation) when fused.
  double compute(const float* out, const float* target, int64_t batch, int64_t output_size,
                 int64_t classes, float* grad, float grad_scale, bool fused) const;

 private:
  LossKind kind_;
};

enum class AccuracyKind { categorical, sparse_categorical, binary };

// Keras 3's choice for metrics=["accuracy"] (by shapes, as its compile_utils.get_metric):
// binary for a single output value, sparse for sparse labels, else categorical. (Keras 2
// also took binary for binary cross-entropy on several outputs; Keras 3 takes categorical.)
AccuracyKind accuracy_for(LossKind loss, int64_t classes);

// Sum over the batch of per-sample accuracy (each in [0, 1]).
double accuracy_sum(AccuracyKind kind, const float* out, const float* target, int64_t batch,
                    int64_t output_size, int64_t classes);

}  // namespace tandem::detail
