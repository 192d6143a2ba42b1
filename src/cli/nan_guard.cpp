#include "cli/nan_guard.h"

#include <cmath>

namespace tandem::cli {

void NanGuard::on_train_batch_end(int64_t batch, const Logs& logs) {
  const auto loss = logs.find("loss");
  if (loss == logs.end() || std::isfinite(loss->second) || first_bad_) return;
  first_bad_ = "epoch " + std::to_string(epoch_ + 1) + ", step " + std::to_string(batch + 1) +
               " (loss " + (std::isnan(loss->second) ? "nan" : std::to_string(loss->second)) + ")";
  if (stop_) model().stop_training = true;
}

std::optional<std::string> non_finite_weight(const Model& model) {
  const std::vector<Tensor> weights = model.get_weights();
  for (size_t i = 0; i < weights.size(); ++i) {
    for (float v : weights[i].values()) {
      if (!std::isfinite(v)) {
        return "weight " + std::to_string(i) + " (shape " + shape_to_string(weights[i].shape()) +
               ")";
      }
    }
  }
  return {};
}

}  // namespace tandem::cli
