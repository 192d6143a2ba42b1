// Array<T>: an n-dimensional, row-major host array with shared storage. Tensor (float) is
// what models consume; ByteArray (uint8) is how datasets stay compact until a batch is formed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tandem/error.h"

namespace tandem {

using Shape = std::vector<int64_t>;

int64_t shape_size(const Shape& shape);                        // product of dims (1 for rank 0)
std::string shape_to_string(const Shape& shape);               // "(60000, 784)"
std::string batch_shape_to_string(const Shape& sample_shape);  // (784) -> "(None, 784)"

template <class T>
class Array {
 public:
  Array() : storage_(std::make_shared<std::vector<T>>()) {}
  // Zero-filled array of the given shape.
  explicit Array(Shape shape)
      : shape_(std::move(shape)), storage_(std::make_shared<std::vector<T>>(shape_size(shape_))) {}
  // Takes ownership of values; their count must match the shape.
  Array(Shape shape, std::vector<T> values) : shape_(std::move(shape)) {
    if (static_cast<int64_t>(values.size()) != shape_size(shape_)) {
      throw ShapeError("Array: " + std::to_string(values.size()) + " values do not fill shape " +
                       shape_to_string(shape_));
    }
    storage_ = std::make_shared<std::vector<T>>(std::move(values));
  }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const { return shape_.at(axis < 0 ? axis + rank() : axis); }
  int64_t size() const { return static_cast<int64_t>(storage_->size()); }
  bool empty() const { return storage_->empty(); }
  // Elements per entry along axis 0: size / shape[0].
  int64_t row_size() const { return rank() == 0 || shape_[0] == 0 ? 0 : size() / shape_[0]; }

  T* data() { return storage_->data(); }
  const T* data() const { return storage_->data(); }
  std::span<T> values() { return {storage_->data(), storage_->size()}; }
  std::span<const T> values() const { return {storage_->data(), storage_->size()}; }
  T& operator[](int64_t i) { return (*storage_)[i]; }
  const T& operator[](int64_t i) const { return (*storage_)[i]; }

  // Same storage, new shape; one dim may be -1 and is inferred.
  Array reshape(Shape shape) const {
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == -1) {
        if (infer >= 0) throw ShapeError("reshape: more than one -1 in " + shape_to_string(shape));
        infer = static_cast<int64_t>(i);
      } else {
        known *= shape[i];
      }
    }
    if (infer >= 0 && known > 0) shape[infer] = size() / known;
    if (shape_size(shape) != size()) {
      throw ShapeError("reshape: cannot reshape " + shape_to_string(shape_) + " to " +
                       shape_to_string(shape));
    }
    Array out = *this;
    out.shape_ = std::move(shape);
    return out;
  }

  // Deep copy.
  Array clone() const { return Array(shape_, *storage_); }

 private:
  Shape shape_;
  std::shared_ptr<std::vector<T>> storage_;
};

using Tensor = Array<float>;
using ByteArray = Array<uint8_t>;

}  // namespace tandem
