#include "tandem/samples.h"

#include <algorithm>
#include <cstring>

#include "tandem/error.h"

namespace tandem {

Samples::Samples(const Tensor& values) : floats_(values), shape_(values.shape()) {
  if (values.rank() == 0) throw ShapeError("Samples: need an array with a leading sample axis");
  count_ = values.dim(0);
  sample_size_ = values.row_size();
}

Samples::Samples(const ByteArray& values, float scale) : shape_(values.shape()) {
  if (values.rank() == 0) throw ShapeError("Samples: need an array with a leading sample axis");
  bytes_ = {values, scale, true};
  count_ = values.dim(0);
  sample_size_ = values.row_size();
}

Shape Samples::sample_shape() const {
  Shape s(shape_.begin() + 1, shape_.end());
  return s;
}

void Samples::gather(const int64_t* rows, int64_t n, float* out) const {
  const int64_t width = sample_size_;
  if (bytes_.has_value) {
    const uint8_t* src = bytes_.values.data();
    const float scale = bytes_.scale;
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* row = src + (begin_ + rows[r]) * width;
      float* dst = out + r * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<float>(row[j]) * scale;
    }
  } else {
    const float* src = floats_.data();
    for (int64_t r = 0; r < n; ++r) {
      const float* row = src + (begin_ + rows[r]) * width;
      std::copy(row, row + width, out + r * width);
    }
  }
}

Samples Samples::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > count_) {
    throw ShapeError("Samples::slice: [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") outside [0, " + std::to_string(count_) + ")");
  }
  Samples out = *this;
  out.begin_ = begin_ + begin;
  out.count_ = end - begin;
  return out;
}

namespace {

// 64-bit multiply-xor hash over 8-byte words (and the tail), seeded.
uint64_t hash_bytes(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  }
  for (; i < size; ++i) h = (h ^ p[i]) * kMul;
  return h ^ (h >> 32);
}

}  // namespace

uint64_t Samples::fingerprint() const {
  uint64_t h = hash_bytes(shape_.data(), shape_.size() * sizeof(shape_[0]), 0x7a6e64656dull);
  h = hash_bytes(&count_, sizeof count_, h);
  if (bytes_.has_value) {
    h = hash_bytes(&bytes_.scale, sizeof bytes_.scale, h);
    return hash_bytes(bytes_.values.data() + begin_ * sample_size_,
                      static_cast<size_t>(count_ * sample_size_), h);
  }
  return hash_bytes(floats_.data() + begin_ * sample_size_,
                    static_cast<size_t>(count_ * sample_size_) * sizeof(float), h);
}

float Samples::at(int64_t row, int64_t j) const {
  const int64_t i = (begin_ + row) * sample_size_ + j;
  return bytes_.has_value ? static_cast<float>(bytes_.values[i]) * bytes_.scale : floats_[i];
}

}  // namespace tandem
