// Backend: the small set of kernels a replica needs. One instance per device; it owns that
// device's threads. All matrices are row-major float32.
#pragma once

#include <cstdint>
#include <functional>
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

// A 2-D window (a convolution kernel or a pooling window) sliding over channels-last
// tensors: input (batch, in_h, in_w, in_c) -> output (batch, out_h, out_w, out_c).
// Strides and dilation in Keras's convention (1: none); padding in pixels on each side.
struct Window2d {
  int64_t batch = 0;
  int64_t in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;

  int64_t input_size() const { return batch * in_h * in_w * in_c; }
  int64_t output_size() const { return batch * out_h * out_w * out_c; }
};

// Average pooling counts only the cells inside the input (Keras and TensorFlow with
// padding="same").
enum class PoolKind { max, average };

// Max pooling in training records where each maximum came from; the caller provides this
// many bytes per output element for it (pool2d_forward checks the backend needs no more).
constexpr int64_t kPoolWorkspaceBytesPerOutput = 4;

// Batch normalization over the rows of x (rows, channels), per channel (channels last: an
// image's height and width are folded into rows):
//   y = gamma * (x - mean) / sqrt(variance + epsilon) + beta
struct BatchNormArgs {
  int64_t rows = 0, channels = 0;
  float epsilon = 1e-3f;
  const float* x = nullptr;      // (rows, channels)
  const float* gamma = nullptr;  // (channels,), or null: 1
  const float* beta = nullptr;   // (channels,), or null: 0
  // (channels,): in training written with the batch's statistics (variance biased, over
  // rows); in inference read (the moving statistics).
  float* mean = nullptr;
  float* variance = nullptr;
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

  // Convolution, kernel (kernel_h, kernel_w, in_c, out_c) in Keras's layout, bias (out_c,)
  // or null. y = activation(conv(x, kernel) + bias); activation is fused (not softmax).
  virtual void conv2d_forward(const Window2d& w, const float* x, const float* kernel,
                              const float* bias, ActivationKind activation, float* y);
  // dx (input) = conv2d's input gradient from dy (output); accumulate: dx += it.
  virtual void conv2d_backward_data(const Window2d& w, const float* dy, const float* kernel,
                                    float* dx, bool accumulate);
  // dkernel (kernel_h, kernel_w, in_c, out_c) and dbias (out_c,) (skipped when null) from
  // x (input) and dy (output); accumulate adds into both.
  virtual void conv2d_backward_weights(const Window2d& w, const float* x, const float* dy,
                                       float* dkernel, float* dbias, bool accumulate);
  // Pooling, out_c == in_c. workspace: null in inference; in training, for max pooling,
  // kPoolWorkspaceBytesPerOutput bytes per output element, read again by pool2d_backward.
  virtual void pool2d_forward(PoolKind kind, const Window2d& w, const float* x, float* y,
                              void* workspace);
  // dx (input) from dy (output); accumulate: dx += it.
  virtual void pool2d_backward(PoolKind kind, const Window2d& w, const float* dy,
                               const void* workspace, float* dx, bool accumulate);
  // y (rows, channels); training as described at BatchNormArgs.
  virtual void batch_norm_forward(const BatchNormArgs& a, bool training, float* y);
  // From dy and the forward's x, mean and variance (training: the batch's, whose gradient
  // flows through them too; otherwise the moving ones, constants): dx (overwritten, or
  // added into when accumulate; dx == dy allowed), dgamma and dbeta (each null exactly when
  // gamma and beta are; added into when accumulate_params).
  virtual void batch_norm_backward(const BatchNormArgs& a, bool training, const float* dy,
                                   float* dx, bool accumulate, float* dgamma, float* dbeta,
                                   bool accumulate_params);
  // Per-channel sums over the rows of x, about a.mean (read, not computed):
  //   dy null:  sums[c] = sum (x - mean),  sums[channels + c] = sum (x - mean)^2
  //   dy given: sums[c] = sum dy,          sums[channels + c] = sum dy * (x - mean)
  // in double, each channel summed row after row (the same for any thread count). What a
  // synchronized batch normalization adds up across devices.
  virtual void batch_norm_sums(const BatchNormArgs& a, const float* dy, double* sums);
  // Batch normalization's input gradient when a.mean and a.variance are the statistics of
  // `count` rows of which x holds some, and sums are batch_norm_sums of dy over all of them:
  //   dx = gamma * rstd * (dy - sums[c] / count - (x - mean) * rstd^2 * sums[C + c] / count)
  // with rstd = 1 / sqrt(variance + epsilon). dx overwritten, or added into when accumulate;
  // dx == dy allowed.
  virtual void batch_norm_backward_global(const BatchNormArgs& a, const float* dy,
                                          const double* sums, double count, float* dx,
                                          bool accumulate);

  // Waits for queued work (no-op on CPU, where every call is synchronous).
  virtual void synchronize() {}
};

// oneDNN-backed CPU backend using `threads` OpenMP threads (<= 0: all available).
std::unique_ptr<Backend> make_cpu_backend(int threads);

// Makes a device's backend from its thread count; strategies take one, so tests, later
// devices (CUDA) and calibrate's kernel timing (make_timed_backend) can supply their own.
using BackendFactory = std::function<std::unique_ptr<Backend>(int threads)>;

}  // namespace tandem
