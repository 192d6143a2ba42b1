#include "backend/cpu_max_pool.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/simd.h"

namespace tandem::detail {
namespace {

static_assert(kPoolWorkspaceBytesPerOutput == sizeof(int32_t));
constexpr int32_t kNoCell = -1;  // a window with no cell inside the input (not in Keras)

// f(cell, ih, iw) for each cell of the window whose top-left is (h0, w0) that lies inside
// the input, in row-major order; cell = kh * kernel_w + kw.
template <class F>
inline void for_each_cell(const Window2d& w, int64_t h0, int64_t w0, F&& f) {
  for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
    const int64_t ih = h0 + kh;
    if (ih < 0 || ih >= w.in_h) continue;
    for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
      const int64_t iw = w0 + kw;
      if (iw >= 0 && iw < w.in_w) f(static_cast<int32_t>(kh * w.kernel_w + kw), ih, iw);
    }
  }
}

// One output row (n, oh): each output's maximum over its window's cells, and which cell.
// The cells' channel vectors are compared whole, so the loops vectorize over channels
// (a 32-bit cell index selects like the float beside it).
TANDEM_MULTIVERSION
void forward_row(const Window2d& w, int64_t row, const float* x, float* y, int32_t* where) {
  const int64_t c = w.in_c, n = row / w.out_h, oh = row % w.out_h;
  const int64_t h0 = oh * w.stride_h - w.pad_top;
  for (int64_t ow = 0; ow < w.out_w; ++ow) {
    const int64_t out = (row * w.out_w + ow) * c;
    float* yo = y + out;
    int32_t* wo = where + out;
    const int64_t w0 = ow * w.stride_w - w.pad_left;
    bool first = true;
    for_each_cell(w, h0, w0, [&](int32_t cell, int64_t ih, int64_t iw) {
      const float* xi = x + ((n * w.in_h + ih) * w.in_w + iw) * c;
      if (first) {
        for (int64_t i = 0; i < c; ++i) yo[i] = xi[i], wo[i] = cell;
        first = false;
        return;
      }
      for (int64_t i = 0; i < c; ++i) {
        const bool larger = xi[i] > yo[i];
        yo[i] = larger ? xi[i] : yo[i];
        wo[i] = larger ? cell : wo[i];
      }
    });
    if (first) {
      std::fill(yo, yo + c, -std::numeric_limits<float>::infinity());
      std::fill(wo, wo + c, kNoCell);
    }
  }
}

// One image n: dx (+)= dy at each window's recorded cell.
TANDEM_MULTIVERSION
void backward_image(const Window2d& w, int64_t n, const float* dy, const int32_t* where, float* dxn,
                    bool accumulate) {
  const int64_t c = w.in_c;
  if (!accumulate) std::fill(dxn, dxn + w.in_h * w.in_w * c, 0.f);
  for (int64_t oh = 0; oh < w.out_h; ++oh) {
    const int64_t h0 = oh * w.stride_h - w.pad_top;
    for (int64_t ow = 0; ow < w.out_w; ++ow) {
      const int64_t out = ((n * w.out_h + oh) * w.out_w + ow) * c;
      const float* dyo = dy + out;
      const int32_t* wo = where + out;
      const int64_t w0 = ow * w.stride_w - w.pad_left;
      for_each_cell(w, h0, w0, [&](int32_t cell, int64_t ih, int64_t iw) {
        float* dxi = dxn + (ih * w.in_w + iw) * c;
        for (int64_t i = 0; i < c; ++i) dxi[i] += wo[i] == cell ? dyo[i] : 0.f;
      });
    }
  }
}

}  // namespace

bool hand_max_pool(const Window2d& w) {
  return w.dilation_h == 1 && w.dilation_w == 1 && w.in_c == w.out_c;
}

void max_pool_train_forward(const Window2d& w, const float* x, float* y, int32_t* where,
                            int threads) {
  const int64_t rows = w.batch * w.out_h;
#pragma omp parallel for num_threads(threads) schedule(static) if (w.output_size() >= (1 << 14))
  for (int64_t row = 0; row < rows; ++row) forward_row(w, row, x, y, where);
}

void max_pool_backward(const Window2d& w, const float* dy, const int32_t* where, float* dx,
                       bool accumulate, int threads) {
  const int64_t image = w.in_h * w.in_w * w.in_c;
  // One image per iteration: windows of one image may overlap, those of two never do.
#pragma omp parallel for num_threads(threads) schedule(static) if (w.input_size() >= (1 << 14))
  for (int64_t n = 0; n < w.batch; ++n) backward_image(w, n, dy, where, dx + n * image, accumulate);
}

}  // namespace tandem::detail
