// Max pooling in training (the hand loops in cpu_max_pool.cpp, through the CPU backend)
// against naive loops: windows that tile, overlap, pad ("same") and leave cells uncovered;
// channel counts that are not a vector's width; ties (a window of zeros, as after ReLU)
// route the gradient to the first cell; accumulate adds; 1 and 2 threads agree bitwise;
// inference pooling (oneDNN) gives the same maxima.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "tandem/error.h"

namespace tandem {
namespace {

struct Case {
  int64_t batch, in_h, in_w, c, kernel, stride;
  bool same;
};

Window2d window(const Case& k) {
  Window2d w;
  w.batch = k.batch, w.in_h = k.in_h, w.in_w = k.in_w, w.in_c = w.out_c = k.c;
  w.kernel_h = w.kernel_w = k.kernel;
  w.stride_h = w.stride_w = k.stride;
  if (k.same) {  // Keras's "same": ceil(in / stride) outputs, the padding split low-first
    w.out_h = (k.in_h + k.stride - 1) / k.stride;
    w.out_w = (k.in_w + k.stride - 1) / k.stride;
    const int64_t ph = std::max<int64_t>((w.out_h - 1) * k.stride + k.kernel - k.in_h, 0);
    const int64_t pw = std::max<int64_t>((w.out_w - 1) * k.stride + k.kernel - k.in_w, 0);
    w.pad_top = ph / 2, w.pad_bottom = ph - ph / 2, w.pad_left = pw / 2, w.pad_right = pw - pw / 2;
  } else {
    w.out_h = (k.in_h - k.kernel) / k.stride + 1;
    w.out_w = (k.in_w - k.kernel) / k.stride + 1;
  }
  return w;
}

// The naive forward and backward: each window's first largest cell takes the gradient.
void reference(const Window2d& w, const std::vector<float>& x, const std::vector<float>& dy,
               std::vector<float>& y, std::vector<double>& dx) {
  y.assign(w.output_size(), 0.f);
  dx.assign(w.input_size(), 0.0);
  for (int64_t n = 0; n < w.batch; ++n) {
    for (int64_t oh = 0; oh < w.out_h; ++oh) {
      for (int64_t ow = 0; ow < w.out_w; ++ow) {
        for (int64_t ch = 0; ch < w.in_c; ++ch) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
            for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
              const int64_t ih = oh * w.stride_h - w.pad_top + kh;
              const int64_t iw = ow * w.stride_w - w.pad_left + kw;
              if (ih < 0 || ih >= w.in_h || iw < 0 || iw >= w.in_w) continue;
              const int64_t i = ((n * w.in_h + ih) * w.in_w + iw) * w.in_c + ch;
              if (at < 0 || x[i] > best) best = x[i], at = i;
            }
          }
          const int64_t o = ((n * w.out_h + oh) * w.out_w + ow) * w.in_c + ch;
          y[o] = best;
          dx[at] += dy[o];
        }
      }
    }
  }
}

class MaxPoolTest : public testing::TestWithParam<Case> {};

TEST_P(MaxPoolTest, MatchesNaiveLoops) {
  const Window2d w = window(GetParam());
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(w.input_size()), dy(w.output_size());
  for (auto& v : x) v = u(gen) > 0.2f ? u(gen) : 0.f;  // ties: runs of zeros
  for (int64_t i = 0; i < w.in_c; ++i) x[i] = 0.f;     // the first window ties throughout
  for (auto& v : dy) v = u(gen);
  std::vector<float> y_ref;
  std::vector<double> dx_ref;
  reference(w, x, dy, y_ref, dx_ref);

  std::vector<float> first_dx;
  for (int threads : {1, 2}) {
    const auto backend = make_cpu_backend(threads);
    std::vector<float> y(w.output_size()), y_infer(w.output_size()), dx(w.input_size(), 5.f);
    std::vector<uint8_t> ws(w.output_size() * kPoolWorkspaceBytesPerOutput);
    backend->pool2d_forward(PoolKind::max, w, x.data(), y.data(), ws.data());
    backend->pool2d_forward(PoolKind::max, w, x.data(), y_infer.data(), nullptr);
    EXPECT_EQ(y, y_ref) << threads << " threads";
    EXPECT_EQ(y_infer, y_ref) << "oneDNN's inference pooling";
    backend->pool2d_backward(PoolKind::max, w, dy.data(), ws.data(), dx.data(), false);
    for (int64_t i = 0; i < w.input_size(); ++i) {
      ASSERT_NEAR(dx[i], dx_ref[i], 1e-6) << "input " << i << ", " << threads << " threads";
    }
    if (threads == 1) first_dx = dx;
    EXPECT_EQ(dx, first_dx) << "1 and 2 threads";
    backend->pool2d_backward(PoolKind::max, w, dy.data(), ws.data(), dx.data(), true);
    for (int64_t i = 0; i < w.input_size(); ++i) {
      ASSERT_NEAR(dx[i], 2 * dx_ref[i], 2e-6) << "accumulated, input " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, MaxPoolTest,
                         testing::Values(Case{3, 26, 26, 32, 2, 2, false},  // MNIST's first
                                         Case{2, 11, 11, 64, 2, 2, false},  // a row left over
                                         Case{2, 9, 7, 5, 3, 2, true},      // overlap, padding
                                         Case{1, 6, 6, 3, 3, 1, true},      // stride 1
                                         Case{2, 5, 5, 17, 5, 1, false},    // one window
                                         Case{64, 4, 4, 1, 2, 2, false}));  // one channel

TEST(MaxPool, BackwardWithoutItsForwardsWorkspaceIsAnError) {
  const Window2d w = window({1, 4, 4, 2, 2, 2, false});
  std::vector<float> dy(w.output_size()), dx(w.input_size());
  EXPECT_THROW(
      make_cpu_backend(1)->pool2d_backward(PoolKind::max, w, dy.data(), nullptr, dx.data(), false),
      BackendError);
}

}  // namespace
}  // namespace tandem
