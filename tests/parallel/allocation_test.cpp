// The warm training step allocates nothing (STYLE habit 4): after a first step has sized
// every buffer, further steps make no heap allocation in tandem's code, on one device and
// on several, with every strategy and reducer, for an MLP and for a convnet with every image
// layer and BatchNormalization. The steps run on a plain-loop test backend:
// oneDNN 2.6 itself allocates inside every primitive execution (an argument map per call),
// which no caller can avoid, so it would hide ours.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <numeric>

#include "backend/backend.h"
#include "model/model_state.h"
#include "parallel/strategy.h"
#include "test_util.h"

namespace {
std::atomic<int64_t> g_allocations{0};
std::atomic<bool> g_trap{false};  // debugging aid: TANDEM_TRAP_ALLOCATION=1 stops at the first
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (g_trap.load(std::memory_order_relaxed)) __builtin_trap();
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace tandem {
namespace {

// Plain loops, no allocation: the Backend contract, slowly.
class LoopBackend final : public Backend {
 public:
  explicit LoopBackend(int) {}
  std::string name() const override { return "loops"; }
  int threads() const override { return 1; }
  void gemm(const GemmArgs& g) override {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        float s = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          s += (g.trans_a ? g.a[p * g.m + i] : g.a[i * g.k + p]) *
               (g.trans_b ? g.b[j * g.k + p] : g.b[p * g.n + j]);
        }
        if (g.bias) s += g.bias[j];
        if (g.activation == ActivationKind::relu) s = s > 0 ? s : 0;
        if (g.activation == ActivationKind::tanh) s = std::tanh(s);
        if (g.activation == ActivationKind::sigmoid) s = 1 / (1 + std::exp(-s));
        g.c[i * g.n + j] = g.accumulate ? g.c[i * g.n + j] + s : s;
      }
    }
  }
  void activation_forward(ActivationKind a, const float* x, float* y, int64_t rows,
                          int64_t cols) override {
    cpu_->activation_forward(a, x, y, rows, cols);  // OpenMP loops, no allocation
  }
  void activation_backward(ActivationKind a, const float* y, const float* dy, float* dx,
                           int64_t rows, int64_t cols) override {
    cpu_->activation_backward(a, y, dy, dx, rows, cols);
  }
  void bias_grad(const float* dy, float* db, int64_t rows, int64_t cols, bool acc) override {
    cpu_->bias_grad(dy, db, rows, cols, acc);
  }

  // Convolution, pooling and batch normalization as plain loops over NHWC (the oneDNN
  // versions allocate inside execution, as matmul does).
  void conv2d_forward(const Window2d& w, const float* x, const float* k, const float* bias,
                      ActivationKind activation, float* y) override {
    for (int64_t i = 0; i < w.output_size(); ++i) y[i] = bias ? bias[i % w.out_c] : 0.f;
    each_tap(w, [&](int64_t xi, int64_t yi, int64_t ki) {
      for (int64_t c = 0; c < w.in_c; ++c) {
        for (int64_t f = 0; f < w.out_c; ++f) y[yi + f] += x[xi + c] * k[ki + c * w.out_c + f];
      }
    });
    if (activation != ActivationKind::linear) {
      activation_forward(activation, y, y, w.output_size() / w.out_c, w.out_c);
    }
  }
  void conv2d_backward_data(const Window2d& w, const float* dy, const float* k, float* dx,
                            bool accumulate) override {
    if (!accumulate) std::fill(dx, dx + w.input_size(), 0.f);
    each_tap(w, [&](int64_t xi, int64_t yi, int64_t ki) {
      for (int64_t c = 0; c < w.in_c; ++c) {
        for (int64_t f = 0; f < w.out_c; ++f) dx[xi + c] += dy[yi + f] * k[ki + c * w.out_c + f];
      }
    });
  }
  void conv2d_backward_weights(const Window2d& w, const float* x, const float* dy, float* dk,
                               float* db, bool accumulate) override {
    if (!accumulate) {
      std::fill(dk, dk + w.kernel_h * w.kernel_w * w.in_c * w.out_c, 0.f);
      if (db) std::fill(db, db + w.out_c, 0.f);
    }
    each_tap(w, [&](int64_t xi, int64_t yi, int64_t ki) {
      for (int64_t c = 0; c < w.in_c; ++c) {
        for (int64_t f = 0; f < w.out_c; ++f) dk[ki + c * w.out_c + f] += x[xi + c] * dy[yi + f];
      }
    });
    for (int64_t i = 0; db && i < w.output_size(); ++i) db[i % w.out_c] += dy[i];
  }
  // Max pooling's workspace holds the input index of each maximum (as int32).
  void pool2d_forward(PoolKind kind, const Window2d& w, const float* x, float* y,
                      void* workspace) override {
    auto* where = static_cast<int32_t*>(workspace);
    for (int64_t o = 0; o < w.output_size(); ++o) {
      float best = -INFINITY, sum = 0;
      int64_t cells = 0, arg = 0;
      each_cell(w, o, [&](int64_t xi) {
        sum += x[xi], ++cells;
        if (x[xi] > best) best = x[xi], arg = xi;
      });
      y[o] = kind == PoolKind::max ? best : sum / static_cast<float>(cells);
      if (where) where[o] = static_cast<int32_t>(arg);
    }
  }
  void pool2d_backward(PoolKind kind, const Window2d& w, const float* dy, const void* workspace,
                       float* dx, bool accumulate) override {
    if (!accumulate) std::fill(dx, dx + w.input_size(), 0.f);
    const auto* where = static_cast<const int32_t*>(workspace);
    for (int64_t o = 0; o < w.output_size(); ++o) {
      if (kind == PoolKind::max) {
        dx[where[o]] += dy[o];
        continue;
      }
      int64_t cells = 0;
      each_cell(w, o, [&](int64_t) { ++cells; });
      each_cell(w, o, [&](int64_t xi) { dx[xi] += dy[o] / static_cast<float>(cells); });
    }
  }
  void batch_norm_forward(const BatchNormArgs& a, bool training, float* y) override {
    for (int64_t c = 0; c < a.channels; ++c) {
      if (training) {
        double sum = 0, squares = 0;
        for (int64_t r = 0; r < a.rows; ++r) sum += a.x[r * a.channels + c];
        const double mean = sum / static_cast<double>(a.rows);
        for (int64_t r = 0; r < a.rows; ++r) {
          squares += (a.x[r * a.channels + c] - mean) * (a.x[r * a.channels + c] - mean);
        }
        a.mean[c] = static_cast<float>(mean);
        a.variance[c] = static_cast<float>(squares / static_cast<double>(a.rows));
      }
      const float scale = (a.gamma ? a.gamma[c] : 1.f) / std::sqrt(a.variance[c] + a.epsilon);
      for (int64_t r = 0; r < a.rows; ++r) {
        const int64_t i = r * a.channels + c;
        y[i] = (a.x[i] - a.mean[c]) * scale + (a.beta ? a.beta[c] : 0.f);
      }
    }
  }
  void batch_norm_backward(const BatchNormArgs& a, bool training, const float* dy, float* dx,
                           bool accumulate, float* dgamma, float* dbeta,
                           bool accumulate_params) override {
    for (int64_t c = 0; c < a.channels; ++c) {
      const float inv = 1.f / std::sqrt(a.variance[c] + a.epsilon);
      float sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t r = 0; r < a.rows; ++r) {
        const int64_t i = r * a.channels + c;
        sum_dy += dy[i], sum_dy_xhat += dy[i] * (a.x[i] - a.mean[c]) * inv;
      }
      const float g = a.gamma ? a.gamma[c] : 1.f, n = static_cast<float>(a.rows);
      for (int64_t r = 0; r < a.rows; ++r) {  // dy is read before dx (maybe dy) is written
        const int64_t i = r * a.channels + c;
        const float xhat = (a.x[i] - a.mean[c]) * inv;
        const float d =
            training ? g * inv * (dy[i] - sum_dy / n - xhat * sum_dy_xhat / n) : g * inv * dy[i];
        dx[i] = accumulate ? dx[i] + d : d;
      }
      if (dgamma) dgamma[c] = (accumulate_params ? dgamma[c] : 0.f) + sum_dy_xhat;
      if (dbeta) dbeta[c] = (accumulate_params ? dbeta[c] : 0.f) + sum_dy;
    }
  }

 private:
  // For each output position and kernel tap inside the input: f(input offset of the
  // pixel, output offset of the position, kernel offset of the tap), channels innermost.
  template <class F>
  static void each_tap(const Window2d& w, F&& f) {
    for (int64_t n = 0; n < w.batch; ++n) {
      for (int64_t oy = 0; oy < w.out_h; ++oy) {
        for (int64_t ox = 0; ox < w.out_w; ++ox) {
          for (int64_t ky = 0; ky < w.kernel_h; ++ky) {
            const int64_t iy = oy * w.stride_h - w.pad_top + ky * w.dilation_h;
            for (int64_t kx = 0; kx < w.kernel_w; ++kx) {
              const int64_t ix = ox * w.stride_w - w.pad_left + kx * w.dilation_w;
              if (iy < 0 || iy >= w.in_h || ix < 0 || ix >= w.in_w) continue;
              f(((n * w.in_h + iy) * w.in_w + ix) * w.in_c,
                ((n * w.out_h + oy) * w.out_w + ox) * w.out_c,
                (ky * w.kernel_w + kx) * w.in_c * w.out_c);
            }
          }
        }
      }
    }
  }
  // The input offsets of output element o's window cells inside the input (pooling).
  template <class F>
  static void each_cell(const Window2d& w, int64_t o, F&& f) {
    const int64_t c = o % w.out_c, ox = o / w.out_c % w.out_w, oy = o / w.out_c / w.out_w % w.out_h;
    const int64_t n = o / w.out_c / w.out_w / w.out_h;
    for (int64_t ky = 0; ky < w.kernel_h; ++ky) {
      const int64_t iy = oy * w.stride_h - w.pad_top + ky;
      for (int64_t kx = 0; kx < w.kernel_w; ++kx) {
        const int64_t ix = ox * w.stride_w - w.pad_left + kx;
        if (iy >= 0 && iy < w.in_h && ix >= 0 && ix < w.in_w) {
          f(((n * w.in_h + iy) * w.in_w + ix) * w.in_c + c);
        }
      }
    }
  }

  std::unique_ptr<Backend> cpu_ = make_cpu_backend(1);
};

std::unique_ptr<Backend> make_loop_backend(int threads) {
  return std::make_unique<LoopBackend>(threads);
}

// The MLP, or a convnet with every image layer and BatchNormalization (input (4, 5, 1)).
Model model_for(bool convnet) {
  set_random_seed(1);
  if (!convnet) {
    auto in = Input({20});
    auto x = Dropout(0.1)(Dense(64, "relu")(in));
    return Model(in, Dense(5, "softmax")(Dense(32, "tanh")(x)));
  }
  auto in = Input({4, 5, 1});
  auto x = Conv2D(3, 3, "relu", {.padding = "same"})(ZeroPadding2D(1)(in));  // (6, 7, 3)
  x = BatchNormalization()(x);
  auto a = MaxPooling2D(2, {.padding = "same"})(x);  // (3, 4, 3)
  auto b = AveragePooling2D(2, {.padding = "same"})(Conv2D(3, 1, "tanh", {.use_bias = false})(x));
  x = Concatenate()({a, b});  // (3, 4, 6)
  return Model(in, Dense(5, "softmax")(GlobalAveragePooling2D()(x)));
}

int64_t allocations_in_steps(int devices, const std::string& strategy, const std::string& reducer,
                             bool convnet = false) {
  Model model = model_for(convnet);
  model.compile(Adam(), "categorical_crossentropy", {"accuracy"});
  auto toy = test::make_toy(96, 20, 5, 2);
  const Samples xs(convnet ? toy.x.reshape({-1, 4, 5, 1}) : toy.x), ys(toy.y_onehot);
  detail::StrategyOptions o;
  o.devices = devices;
  o.kind = detail::parse_strategy(strategy);
  o.reducer = detail::parse_reducer(reducer);
  o.threads_per_device = 1;
  o.bucket_bytes = 1024;
  o.make_backend = &make_loop_backend;
  auto run = detail::make_strategy(model.state(), o);
  run->prepare(32);
  std::vector<int64_t> rows(32);
  std::iota(rows.begin(), rows.end(), 0);
  for (int s = 0; s < 2; ++s) run->train_step(xs, ys, rows, s);  // warm up
  const int64_t before = g_allocations.load();
  g_trap = std::getenv("TANDEM_TRAP_ALLOCATION") != nullptr;
  for (int s = 2; s < 6; ++s) {
    std::iota(rows.begin(), rows.end(), 32 * (s % 3));
    run->train_step(xs, ys, rows, s);
  }
  g_trap = false;
  return g_allocations.load() - before;
}

TEST(Allocation, WarmTrainingStepAllocatesNothing) {
  EXPECT_EQ(allocations_in_steps(1, "mirrored", "sharded"), 0) << "one device";
  EXPECT_EQ(allocations_in_steps(2, "mirrored", "sharded"), 0) << "mirrored, sharded";
  EXPECT_EQ(allocations_in_steps(2, "mirrored", "allreduce"), 0) << "mirrored, allreduce";
  EXPECT_EQ(allocations_in_steps(2, "host", "sharded"), 0) << "host";
}

TEST(Allocation, WarmConvnetStepAllocatesNothing) {
  EXPECT_EQ(allocations_in_steps(1, "mirrored", "sharded", true), 0) << "one device";
  EXPECT_EQ(allocations_in_steps(2, "mirrored", "sharded", true), 0) << "mirrored, sharded";
  EXPECT_EQ(allocations_in_steps(2, "mirrored", "allreduce", true), 0) << "mirrored, allreduce";
  EXPECT_EQ(allocations_in_steps(2, "host", "sharded", true), 0) << "host";
}

}  // namespace
}  // namespace tandem
