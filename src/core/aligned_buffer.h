// AlignedBuffer: a 64-byte aligned, zero-initialised float array that never reallocates
// behind the caller's back (views into it stay valid until resize()).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace tandem {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t size) { resize(size); }

  // Discards contents; new contents are zero.
  void resize(int64_t size) {
    if (size == size_) {
      zero();
      return;
    }
    data_.reset();
    size_ = 0;
    if (size == 0) return;
    const size_t bytes = (static_cast<size_t>(size) * sizeof(float) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    data_.reset(static_cast<float*>(p));
    size_ = size;
    zero();
  }
  void zero() {
    if (size_) std::memset(data_.get(), 0, static_cast<size_t>(size_) * sizeof(float));
  }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

}  // namespace tandem
