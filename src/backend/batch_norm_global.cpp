// Batch normalization over statistics of more rows than one device holds (synchronized
// BatchNormalization): the per-channel sums every device contributes, and the input
// gradient once those sums are global. Plain loops: no library has these two reductions,
// and they are memory-bound (each cache line of x and dy is read once).
#include <algorithm>
#include <cmath>

#include "backend/backend.h"

namespace tandem {
namespace {

// Channels are taken in blocks of one cache line; a block's rows are summed in order.
constexpr int64_t kChannelBlock = 16;

float gamma_of(const BatchNormArgs& a, int64_t c) {
  return a.gamma ? a.gamma[c] : 1.f;
}

}  // namespace

void Backend::batch_norm_sums(const BatchNormArgs& a, const float* dy, double* sums) {
  const int64_t rows = a.rows, channels = a.channels;
  const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for num_threads(threads()) schedule(static) if (blocks > 1)
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t c0 = k * kChannelBlock, width = std::min(kChannelBlock, channels - c0);
    double first[kChannelBlock] = {}, second[kChannelBlock] = {};
    const float* mean = a.mean + c0;
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = a.x + r * channels + c0;
      if (dy == nullptr) {
        for (int64_t j = 0; j < width; ++j) {
          const double d = static_cast<double>(x[j]) - mean[j];
          first[j] += d;
          second[j] += d * d;
        }
      } else {
        const float* g = dy + r * channels + c0;
        for (int64_t j = 0; j < width; ++j) {
          first[j] += g[j];
          second[j] += static_cast<double>(g[j]) * (static_cast<double>(x[j]) - mean[j]);
        }
      }
    }
    std::copy(first, first + width, sums + c0);
    std::copy(second, second + width, sums + channels + c0);
  }
}

void Backend::batch_norm_backward_global(const BatchNormArgs& a, const float* dy,
                                         const double* sums, double count, float* dx,
                                         bool accumulate) {
  const int64_t rows = a.rows, channels = a.channels;
  const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for num_threads(threads()) schedule(static) if (blocks > 1)
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t c0 = k * kChannelBlock, width = std::min(kChannelBlock, channels - c0);
    // dx = scale * dy - shift - slope * (x - mean), per channel.
    float scale[kChannelBlock], shift[kChannelBlock], slope[kChannelBlock], mean[kChannelBlock];
    for (int64_t j = 0; j < width; ++j) {
      const int64_t c = c0 + j;
      const double rstd = 1.0 / std::sqrt(static_cast<double>(a.variance[c]) + a.epsilon);
      const double s = gamma_of(a, c) * rstd;
      scale[j] = static_cast<float>(s);
      shift[j] = static_cast<float>(s * sums[c] / count);
      slope[j] = static_cast<float>(s * rstd * rstd * sums[channels + c] / count);
      mean[j] = a.mean[c];
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = a.x + r * channels + c0;
      const float* g = dy + r * channels + c0;
      float* out = dx + r * channels + c0;
      for (int64_t j = 0; j < width; ++j) {
        const float v = scale[j] * g[j] - shift[j] - slope[j] * (x[j] - mean[j]);
        out[j] = accumulate ? out[j] + v : v;
      }
    }
  }
}

}  // namespace tandem
