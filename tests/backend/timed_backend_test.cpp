// make_timed_backend: every call reaches the inner backend unchanged (the same bits out),
// and is counted, with its seconds, under its kind of kernel; the inner backend's errors
// and name pass through.
#include "backend/timed_backend.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tandem/error.h"

namespace tandem {
namespace {

std::vector<float> random_vector(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(gen);
  return v;
}

int64_t calls(const KernelSeconds& t, KernelKind k) {
  return t.calls[static_cast<size_t>(k)];
}

TEST(TimedBackend, ForwardsEveryKernelAndTalliesItByKind) {
  auto tally = std::make_shared<KernelSeconds>();
  const std::unique_ptr<Backend> plain = make_cpu_backend(1);
  const std::unique_ptr<Backend> timed = make_timed_backend(make_cpu_backend(1), tally);
  EXPECT_EQ(timed->name(), plain->name());
  EXPECT_EQ(timed->threads(), 1);

  // (16, 32) x (32, 8) + bias, relu; then its gradient pieces.
  const auto a = random_vector(16 * 32, 1), b = random_vector(32 * 8, 2),
             bias = random_vector(8, 3);
  std::vector<float> c_plain(16 * 8), c_timed(16 * 8), g_plain(8), g_timed(8);
  for (auto [backend, c, g] :
       {std::tuple{plain.get(), &c_plain, &g_plain}, std::tuple{timed.get(), &c_timed, &g_timed}}) {
    backend->gemm({.m = 16,
                   .n = 8,
                   .k = 32,
                   .a = a.data(),
                   .b = b.data(),
                   .c = c->data(),
                   .bias = bias.data(),
                   .activation = ActivationKind::relu});
    backend->activation_backward(ActivationKind::relu, c->data(), c->data(), c->data(), 16, 8);
    backend->bias_grad(c->data(), g->data(), 16, 8, false);
  }
  EXPECT_EQ(c_timed, c_plain);
  EXPECT_EQ(g_timed, g_plain);

  // A 3x3 convolution on (2, 9, 9, 4) -> (2, 7, 7, 6), then 2x2 max pooling of its output.
  Window2d w{.batch = 2,
             .in_h = 9,
             .in_w = 9,
             .in_c = 4,
             .out_h = 7,
             .out_w = 7,
             .out_c = 6,
             .kernel_h = 3,
             .kernel_w = 3};
  Window2d pool{.batch = 2,
                .in_h = 7,
                .in_w = 7,
                .in_c = 6,
                .out_h = 3,
                .out_w = 3,
                .out_c = 6,
                .kernel_h = 2,
                .kernel_w = 2,
                .stride_h = 2,
                .stride_w = 2};
  const auto x = random_vector(w.input_size(), 4), k = random_vector(3 * 3 * 4 * 6, 5),
             kb = random_vector(6, 6), dy = random_vector(w.output_size(), 7);
  struct Out {
    std::vector<float> y, dx, dk, db, py, pdx;
    std::vector<uint8_t> ws;
  };
  Out p, t;
  for (auto [backend, o] : {std::pair{plain.get(), &p}, std::pair{timed.get(), &t}}) {
    o->y.resize(w.output_size());
    o->dx.resize(w.input_size());
    o->dk.resize(k.size());
    o->db.resize(6);
    o->py.resize(pool.output_size());
    o->pdx.resize(pool.input_size());
    o->ws.resize(pool.output_size() * kPoolWorkspaceBytesPerOutput);
    backend->conv2d_forward(w, x.data(), k.data(), kb.data(), ActivationKind::linear, o->y.data());
    backend->conv2d_backward_data(w, dy.data(), k.data(), o->dx.data(), false);
    backend->conv2d_backward_weights(w, x.data(), dy.data(), o->dk.data(), o->db.data(), false);
    backend->pool2d_forward(PoolKind::max, pool, o->y.data(), o->py.data(), o->ws.data());
    backend->pool2d_backward(PoolKind::max, pool, o->py.data(), o->ws.data(), o->pdx.data(), false);
  }
  EXPECT_EQ(t.y, p.y);
  EXPECT_EQ(t.dx, p.dx);
  EXPECT_EQ(t.dk, p.dk);
  EXPECT_EQ(t.db, p.db);
  EXPECT_EQ(t.py, p.py);
  EXPECT_EQ(t.pdx, p.pdx);

  // Batch normalization of (32, 6) in training.
  const auto bx = random_vector(32 * 6, 8), gamma = random_vector(6, 9),
             beta = random_vector(6, 10);
  std::vector<float> mean(6), var(6), by(32 * 6), bdx(32 * 6), dgamma(6), dbeta(6);
  const BatchNormArgs bn{.rows = 32,
                         .channels = 6,
                         .x = bx.data(),
                         .gamma = gamma.data(),
                         .beta = beta.data(),
                         .mean = mean.data(),
                         .variance = var.data()};
  timed->batch_norm_forward(bn, true, by.data());
  timed->batch_norm_backward(bn, true, by.data(), bdx.data(), false, dgamma.data(), dbeta.data(),
                             false);

  EXPECT_EQ(calls(*tally, KernelKind::gemm), 1);
  EXPECT_EQ(calls(*tally, KernelKind::elementwise), 2);
  EXPECT_EQ(calls(*tally, KernelKind::conv), 3);
  EXPECT_EQ(calls(*tally, KernelKind::pool), 2);
  EXPECT_EQ(calls(*tally, KernelKind::batch_norm), 2);
  for (KernelKind kind :
       {KernelKind::gemm, KernelKind::conv, KernelKind::pool, KernelKind::batch_norm}) {
    EXPECT_GT((*tally)[kind], 0) << kernel_kind_name(kind);
  }
  tally->reset();
  EXPECT_EQ(calls(*tally, KernelKind::conv), 0);
  EXPECT_EQ((*tally)[KernelKind::conv], 0);
}

// A backend without convolutions: the timed one says so under the inner backend's name.
class GemmOnly final : public Backend {
 public:
  std::string name() const override { return "gemm-only"; }
  int threads() const override { return 1; }
  void gemm(const GemmArgs&) override {}
  void activation_forward(ActivationKind, const float*, float*, int64_t, int64_t) override {}
  void activation_backward(ActivationKind, const float*, const float*, float*, int64_t,
                           int64_t) override {}
  void bias_grad(const float*, float*, int64_t, int64_t, bool) override {}
};

TEST(TimedBackend, TheInnerBackendsErrorsPassThrough) {
  auto tally = std::make_shared<KernelSeconds>();
  const auto timed = make_timed_backend(std::make_unique<GemmOnly>(), tally);
  Window2d w{.batch = 1,
             .in_h = 3,
             .in_w = 3,
             .in_c = 1,
             .out_h = 1,
             .out_w = 1,
             .out_c = 1,
             .kernel_h = 3,
             .kernel_w = 3};
  float x[9] = {}, k[9] = {}, y[1] = {};
  try {
    timed->conv2d_forward(w, x, k, nullptr, ActivationKind::linear, y);
    FAIL() << "no error";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("'gemm-only' has no conv2d_forward"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(calls(*tally, KernelKind::conv), 0);  // a call that failed is not counted
}

}  // namespace
}  // namespace tandem
