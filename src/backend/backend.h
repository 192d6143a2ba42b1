// Backend: the small set of kernels a replica needs. One instance per device; it owns that
// device's threads. All matrices are row-major float32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/activation.h"

namespace tandem {

// c (m, n) = op(a) (m, k) x op(b) (k, n) [+ bias (n,)], then activation (not softmax).
// op(a) = a^T when trans_a: a is then stored (k, m). Likewise b is stored (n, k) when trans_b.
// accumulate: c += result (no bias or activation allowed then).
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  bool trans_a = false;
  const float* b = nullptr;
  bool trans_b = false;
  float* c = nullptr;
  const float* bias = nullptr;
  ActivationKind activation = ActivationKind::linear;
  bool accumulate = false;
  // Leading dimensions (elements between rows of the stored matrix); 0: packed. lda lets a
  // GEMM read a column block of a wider matrix, e.g. x[:, i0:i1].
  int64_t lda = 0, ldb = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int threads() const = 0;

  virtual void gemm(const GemmArgs& args) = 0;
  // y (rows, cols) = f(x), row-wise for softmax. In place (x == y) allowed.
  virtual void activation_forward(ActivationKind activation, const float* x, float* y, int64_t rows,
                                  int64_t cols) = 0;
  // dx = dy * f'(.), computed from the activation's output y. dx == dy allowed (in place).
  virtual void activation_backward(ActivationKind activation, const float* y, const float* dy,
                                   float* dx, int64_t rows, int64_t cols) = 0;
  // db (cols,) = sum over rows of dy (rows, cols); accumulate adds into db.
  virtual void bias_grad(const float* dy, float* db, int64_t rows, int64_t cols,
                         bool accumulate) = 0;
  // Waits for queued work (no-op on CPU, where every call is synchronous).
  virtual void synchronize() {}
};

// oneDNN-backed CPU backend using `threads` OpenMP threads (<= 0: all available).
std::unique_ptr<Backend> make_cpu_backend(int threads);

// Makes a device's backend from its thread count; strategies take one, so tests and later
// devices (CUDA) can supply their own.
using BackendFactory = std::unique_ptr<Backend> (*)(int threads);

}  // namespace tandem
