// Keras's to_categorical for uint8 class labels.
#include <algorithm>
#include <string>

#include "tandem/datasets.h"

namespace tandem {

// (count,) -> (count, num_classes). Like Keras, a trailing dim of 1 is dropped first, so
// (count, 1) column labels also give (count, num_classes).
Tensor to_categorical(const ByteArray& labels, int num_classes) {
  Shape shape = labels.shape();
  if (shape.size() > 1 && shape.back() == 1) shape.pop_back();
  if (shape.size() != 1) {
    throw ShapeError("to_categorical: labels must be (count,) or (count, 1), got " +
                     shape_to_string(labels.shape()));
  }
  const std::span<const uint8_t> values = labels.values();
  if (num_classes <= 0) {
    if (values.empty()) {
      throw ConfigError("to_categorical: cannot infer num_classes from zero labels; pass it");
    }
    num_classes = *std::max_element(values.begin(), values.end()) + 1;
  }

  shape.push_back(num_classes);
  Tensor one_hot(std::move(shape));  // (count, num_classes), zero-filled
  float* row = one_hot.data();
  for (size_t i = 0; i < values.size(); ++i, row += num_classes) {
    if (values[i] >= num_classes) {
      throw ConfigError("to_categorical: label " + std::to_string(values[i]) + " at index " +
                        std::to_string(i) +
                        " is out of range for num_classes=" + std::to_string(num_classes) +
                        " (labels must be 0.." + std::to_string(num_classes - 1) + ")");
    }
    row[values[i]] = 1.0f;
  }
  return one_hot;
}

}  // namespace tandem
