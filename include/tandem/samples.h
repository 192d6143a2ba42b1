// Samples: read-only rows of a dataset as fit/evaluate/predict consume them. Built from a
// float Tensor, or from a ByteArray with a scale (uint8 stays uint8 until a batch is
// formed: 4x less memory, and the conversion runs inside the data phase).
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/array.h"

namespace tandem {

class Samples {
 public:
  Samples(const Tensor& values);                        // NOLINT: implicit, like numpy arrays
  Samples(const ByteArray& values, float scale = 1.f);  // NOLINT
  // A view of memory owned elsewhere (a numpy array): `owner` keeps it alive and is released
  // when the last Samples sharing it goes. shape includes the leading sample axis.
  static Samples view(std::shared_ptr<const float> owner, Shape shape);
  static Samples view(std::shared_ptr<const uint8_t> owner, Shape shape, float scale = 1.f);
  int64_t count() const { return count_; }
  Shape sample_shape() const;  // shape without the leading axis
  int64_t sample_size() const { return sample_size_; }
  bool is_bytes() const { return bytes_ != nullptr; }

  // out (n, sample_size) = rows[0..n) converted to float (times scale for bytes).
  void gather(const int64_t* rows, int64_t n, float* out) const;
  // Rows [begin, end) as Samples sharing storage (validation_split).
  Samples slice(int64_t begin, int64_t end) const;
  // Float value of element (row, j), for validation of labels.
  float at(int64_t row, int64_t j) const;
  // A 64-bit hash of the values (and shape): ranks of a job check they hold the same data.
  uint64_t fingerprint() const;

 private:
  Samples() = default;
  Samples& set_shape(Shape shape);

  // Exactly one of the two holds the source array's values (row-major, shape_).
  std::shared_ptr<const float> floats_;
  std::shared_ptr<const uint8_t> bytes_;
  float scale_ = 1.f;  // bytes only
  Shape shape_;        // of the source array
  int64_t begin_ = 0, count_ = 0, sample_size_ = 0;
};

// x_train uint8 -> Samples that yield x * scale, e.g. scaled(x_train, 1.f / 255).
inline Samples scaled(const ByteArray& values, float scale) {
  return Samples(values, scale);
}

}  // namespace tandem
