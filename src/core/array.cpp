#include "tandem/array.h"

namespace tandem {

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError("negative dimension in shape " + shape_to_string(shape));
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string batch_shape_to_string(const Shape& sample_shape) {
  std::string s = "(None";
  for (int64_t d : sample_shape) s += ", " + std::to_string(d);
  return s + ")";
}

}  // namespace tandem
