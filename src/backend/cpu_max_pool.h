// Max pooling in training on channels-last tensors, by hand. oneDNN 2.6's training forward
// (the one that records where each maximum came from) ran 3.7x slower than its own
// inference forward on the MNIST convnet's first pooling (64x26x26x32, one thread: 1.46
// against 0.40 ms) and its backward took 1.06 ms; see docs/PERFORMANCE.md for these loops'
// times. Inference pooling and average pooling stay on oneDNN.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace tandem::detail {

// Whether these loops take the window: max pooling without dilation.
bool hand_max_pool(const Window2d& w);

// y (batch, out_h, out_w, c) = the largest of each window's cells inside x (batch, in_h,
// in_w, c); where (an int32 per output, the workspace) = that cell, kh * kernel_w + kw,
// the first of equal maxima in row-major order.
void max_pool_train_forward(const Window2d& w, const float* x, float* y, int32_t* where,
                            int threads);

// dx (batch, in_h, in_w, c) = dy routed to each window's recorded cell (summed where windows
// overlap); accumulate: dx += that.
void max_pool_backward(const Window2d& w, const float* dy, const int32_t* where, float* dx,
                       bool accumulate, int threads);

}  // namespace tandem::detail
