// The warm training step allocates nothing (STYLE habit 4): after a first step has sized
// every buffer, further steps make no heap allocation in tandem's code, on one device and
// on several, with every strategy and reducer. The steps run on a plain-loop test backend:
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

 private:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend(1);
};

std::unique_ptr<Backend> make_loop_backend(int threads) {
  return std::make_unique<LoopBackend>(threads);
}

int64_t allocations_in_steps(int devices, const std::string& strategy, const std::string& reducer) {
  set_random_seed(1);
  auto in = Input({20});
  auto x = Dropout(0.1)(Dense(64, "relu")(in));
  Model model(in, Dense(5, "softmax")(Dense(32, "tanh")(x)));
  model.compile(Adam(), "categorical_crossentropy", {"accuracy"});
  auto toy = test::make_toy(96, 20, 5, 2);
  const Samples xs(toy.x), ys(toy.y_onehot);  // as fit holds them: built once
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

}  // namespace
}  // namespace tandem
