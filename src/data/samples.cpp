#include "tandem/samples.h"

#include <algorithm>
#include <cstring>

#include "tandem/error.h"

namespace tandem {

// The array's storage stays alive as long as the pointer (aliasing a copy of the array).
Samples::Samples(const Tensor& values) : floats_(values.data(), [keep = values](const float*) {}) {
  set_shape(values.shape());
}

Samples::Samples(const ByteArray& values, float scale)
    : bytes_(values.data(), [keep = values](const uint8_t*) {}), scale_(scale) {
  set_shape(values.shape());
}

Samples Samples::view(std::shared_ptr<const float> owner, Shape shape) {
  Samples out;
  out.floats_ = std::move(owner);
  return std::move(out.set_shape(std::move(shape)));
}

Samples Samples::view(std::shared_ptr<const uint8_t> owner, Shape shape, float scale) {
  Samples out;
  out.bytes_ = std::move(owner);
  out.scale_ = scale;
  return std::move(out.set_shape(std::move(shape)));
}

Samples& Samples::set_shape(Shape shape) {
  if (shape.empty()) throw ShapeError("Samples: need an array with a leading sample axis");
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError("Samples: negative dimension in " + shape_to_string(shape));
  }
  shape_ = std::move(shape);
  count_ = shape_[0];
  sample_size_ = shape_size(Shape(shape_.begin() + 1, shape_.end()));
  return *this;
}

Shape Samples::sample_shape() const {
  Shape s(shape_.begin() + 1, shape_.end());
  return s;
}

void Samples::gather(const int64_t* rows, int64_t n, float* out) const {
  const int64_t width = sample_size_;
  if (bytes_) {
    const uint8_t* src = bytes_.get();
    const float scale = scale_;
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* row = src + (begin_ + rows[r]) * width;
      float* dst = out + r * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) dst[j] = static_cast<float>(row[j]) * scale;
    }
  } else {
    const float* src = floats_.get();
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
  if (bytes_) {
    h = hash_bytes(&scale_, sizeof scale_, h);
    return hash_bytes(bytes_.get() + begin_ * sample_size_,
                      static_cast<size_t>(count_ * sample_size_), h);
  }
  return hash_bytes(floats_.get() + begin_ * sample_size_,
                    static_cast<size_t>(count_ * sample_size_) * sizeof(float), h);
}

float Samples::at(int64_t row, int64_t j) const {
  const int64_t i = (begin_ + row) * sample_size_ + j;
  return bytes_ ? static_cast<float>(bytes_.get()[i]) * scale_ : floats_.get()[i];
}

}  // namespace tandem
