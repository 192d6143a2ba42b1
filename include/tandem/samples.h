// Samples: read-only rows of a dataset as fit/evaluate/predict consume them. Built from a
// float Tensor, or from a ByteArray with a scale (uint8 stays uint8 until a batch is
// formed: 4x less memory, and the conversion runs inside the data phase).
#pragma once

#include <cstdint>

#include "tandem/array.h"

namespace tandem {

class Samples {
 public:
  Samples(const Tensor& values);                        // NOLINT: implicit, like numpy arrays
  Samples(const ByteArray& values, float scale = 1.f);  // NOLINT
  int64_t count() const { return count_; }
  Shape sample_shape() const;  // shape without the leading axis
  int64_t sample_size() const { return sample_size_; }
  bool is_bytes() const { return bytes_.has_value; }

  // out (n, sample_size) = rows[0..n) converted to float (times scale for bytes).
  void gather(const int64_t* rows, int64_t n, float* out) const;
  // Rows [begin, end) as Samples sharing storage (validation_split).
  Samples slice(int64_t begin, int64_t end) const;
  // Float value of element (row, j), for validation of labels.
  float at(int64_t row, int64_t j) const;
  // A 64-bit hash of the values (and shape): ranks of a job check they hold the same data.
  uint64_t fingerprint() const;

 private:
  struct Bytes {
    ByteArray values;
    float scale = 1.f;
    bool has_value = false;
  };
  Tensor floats_;
  Bytes bytes_;
  Shape shape_;  // of the source array
  int64_t begin_ = 0, count_ = 0, sample_size_ = 0;
};

// x_train uint8 -> Samples that yield x * scale, e.g. scaled(x_train, 1.f / 255).
inline Samples scaled(const ByteArray& values, float scale) {
  return Samples(values, scale);
}

}  // namespace tandem
