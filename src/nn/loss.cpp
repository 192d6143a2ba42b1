#include "nn/loss.h"

#include <algorithm>
#include <cmath>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

float clip(float p) {
  return std::min(std::max(p, kEpsilon), 1.f - kEpsilon);
}

// -sum y log(clip(p / sum p)) for one row; gradient w.r.t. the row, scaled by `scale`.
double cce_row(const float* p, const float* y, int64_t c, float* grad, float scale, bool fused) {
  double sum_p = 0;
  for (int64_t j = 0; j < c; ++j) sum_p += p[j];
  double loss = 0;
  for (int64_t j = 0; j < c; ++j) {
    if (y[j] != 0.f) loss -= y[j] * std::log(clip(static_cast<float>(p[j] / sum_p)));
  }
  if (!grad) return loss;
  if (fused) {  // softmax: dL/dz = p * sum(y) - y
    float sum_y = 0;
    for (int64_t j = 0; j < c; ++j) sum_y += y[j];
    for (int64_t j = 0; j < c; ++j) grad[j] = scale * (p[j] * sum_y - y[j]);
    return loss;
  }
  // Through the normalisation q = p / s and the clip (zero gradient where clipped).
  const float s = static_cast<float>(sum_p);
  float dot = 0;  // sum_j dL/dq_j * q_j
  for (int64_t j = 0; j < c; ++j) {
    const float q = p[j] / s;
    const float dq = (q > kEpsilon && q < 1.f - kEpsilon) ? -y[j] / q : 0.f;
    grad[j] = dq;
    dot += dq * q;
  }
  for (int64_t j = 0; j < c; ++j) grad[j] = scale * (grad[j] - dot) / s;
  return loss;
}

// Keras's probability form takes log(clip(p)) as the logits of a sparse softmax cross-entropy,
// so p is normalised: -log(clip(p_k) / sum_j clip(p_j)). Fused (softmax output) p sums to one.
double sparse_row(const float* p, float label, int64_t c, float* grad, float scale, bool fused) {
  const int64_t k = static_cast<int64_t>(label);
  if (k < 0 || k >= c || static_cast<float>(k) != label) {
    throw ConfigError("sparse_categorical_crossentropy: label " + std::to_string(label) +
                      " is not an integer in [0, " + std::to_string(c) + ")");
  }
  if (fused) {
    const double loss = -std::log(clip(p[k]));
    if (!grad) return loss;
    for (int64_t j = 0; j < c; ++j) grad[j] = scale * p[j];
    grad[k] -= scale;
    return loss;
  }
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += clip(p[j]);
  const double loss = std::log(sum) - std::log(clip(p[k]));
  if (!grad) return loss;
  // d/dp_j = 1/sum - [j == k]/p_k, zero where the clip is active.
  const auto inside = [](float q) { return q > kEpsilon && q < 1.f - kEpsilon; };
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < c; ++j) grad[j] = inside(p[j]) ? scale * inv_sum : 0.f;
  if (inside(p[k])) grad[k] -= scale / p[k];
  return loss;
}

double bce_row(const float* p, const float* y, int64_t c, float* grad, float scale, bool fused) {
  double loss = 0;
  for (int64_t j = 0; j < c; ++j) {
    const float pc = clip(p[j]);
    loss -= y[j] * std::log(pc) + (1.f - y[j]) * std::log(1.f - pc);
    if (!grad) continue;
    if (fused) {
      grad[j] = scale * (p[j] - y[j]) / c;
    } else {
      const bool inside = p[j] > kEpsilon && p[j] < 1.f - kEpsilon;
      grad[j] = inside ? scale * (-y[j] / pc + (1.f - y[j]) / (1.f - pc)) / c : 0.f;
    }
  }
  return loss / c;
}

double mse_row(const float* p, const float* y, int64_t c, float* grad, float scale) {
  double loss = 0;
  for (int64_t j = 0; j < c; ++j) {
    const float d = p[j] - y[j];
    loss += static_cast<double>(d) * d;
    if (grad) grad[j] = scale * 2.f * d / c;
  }
  return loss / c;
}

}  // namespace

LossKind parse_loss(const std::string& name) {
  if (name == "categorical_crossentropy") return LossKind::categorical_crossentropy;
  if (name == "sparse_categorical_crossentropy") return LossKind::sparse_categorical_crossentropy;
  if (name == "binary_crossentropy") return LossKind::binary_crossentropy;
  if (name == "mean_squared_error" || name == "mse") return LossKind::mean_squared_error;
  throw ConfigError("unknown loss '" + name +
                    "' (known: categorical_crossentropy, sparse_categorical_crossentropy, "
                    "binary_crossentropy, mean_squared_error/mse)");
}

const char* loss_name(LossKind kind) {
  switch (kind) {
    case LossKind::categorical_crossentropy:
      return "categorical_crossentropy";
    case LossKind::sparse_categorical_crossentropy:
      return "sparse_categorical_crossentropy";
    case LossKind::binary_crossentropy:
      return "binary_crossentropy";
    case LossKind::mean_squared_error:
      return "mean_squared_error";
  }
  return "?";
}

int64_t Loss::target_size(int64_t output_size, int64_t classes) const {
  return kind_ == LossKind::sparse_categorical_crossentropy ? output_size / classes : output_size;
}

bool Loss::fuses_with(ActivationKind activation) const {
  switch (kind_) {
    case LossKind::categorical_crossentropy:
    case LossKind::sparse_categorical_crossentropy:
      return activation == ActivationKind::softmax;
    case LossKind::binary_crossentropy:
      return activation == ActivationKind::sigmoid;
    case LossKind::mean_squared_error:
      return false;
  }
  return false;
}

double Loss::compute(const float* out, const float* target, int64_t batch, int64_t output_size,
                     int64_t classes, float* grad, float grad_scale, bool fused) const {
  const int64_t rows_per_sample = output_size / classes;
  const int64_t rows = batch * rows_per_sample;
  // A sample's loss is the mean over its rows.
  const float scale = grad_scale / static_cast<float>(rows_per_sample);
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = out + r * classes;
    float* g = grad ? grad + r * classes : nullptr;
    switch (kind_) {
      case LossKind::categorical_crossentropy:
        total += cce_row(p, target + r * classes, classes, g, scale, fused);
        break;
      case LossKind::sparse_categorical_crossentropy:
        total += sparse_row(p, target[r], classes, g, scale, fused);
        break;
      case LossKind::binary_crossentropy:
        total += bce_row(p, target + r * classes, classes, g, scale, fused);
        break;
      case LossKind::mean_squared_error:
        total += mse_row(p, target + r * classes, classes, g, scale);
        break;
    }
  }
  return total / static_cast<double>(rows_per_sample);
}

AccuracyKind accuracy_for(LossKind loss, int64_t classes) {
  if (classes == 1) return AccuracyKind::binary;
  if (loss == LossKind::sparse_categorical_crossentropy) return AccuracyKind::sparse_categorical;
  return AccuracyKind::categorical;
}

double accuracy_sum(AccuracyKind kind, const float* out, const float* target, int64_t batch,
                    int64_t output_size, int64_t classes) {
  const int64_t rows_per_sample = output_size / classes;
  const int64_t rows = batch * rows_per_sample;
  double correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = out + r * classes;
    const int64_t predicted = std::max_element(p, p + classes) - p;
    switch (kind) {
      case AccuracyKind::categorical: {
        const float* y = target + r * classes;
        correct += (std::max_element(y, y + classes) - y) == predicted;
        break;
      }
      case AccuracyKind::sparse_categorical:
        correct += static_cast<int64_t>(target[r]) == predicted;
        break;
      case AccuracyKind::binary: {
        const float* y = target + r * classes;
        int64_t hits = 0;
        // Keras's: the label equals the thresholded output (soft labels never do).
        for (int64_t j = 0; j < classes; ++j) hits += y[j] == (p[j] > 0.5f ? 1.f : 0.f);
        correct += static_cast<double>(hits) / classes;
        break;
      }
    }
  }
  return correct / static_cast<double>(rows_per_sample);
}

}  // namespace tandem::detail
