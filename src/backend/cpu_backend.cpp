// CPU backend: GEMMs through oneDNN matmul (fused bias and activation epilogues),
// convolution and pooling through oneDNN's primitives (cpu_window_ops.h), everything
// elementwise as OpenMP loops. Primitives are cached by shape; after the first step of a
// given batch size, a call allocates nothing (memory objects and argument maps are reused,
// only their data handles change).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <unordered_map>

#include "backend/backend.h"
#include "backend/cpu_batch_norm.h"
#include "backend/cpu_window_ops.h"
#include "core/parallel_for.h"
#include "tandem/error.h"

namespace tandem {
namespace {

using dnnl::memory;

// Below this many elements an elementwise loop runs on one thread: forking costs more.
constexpr int64_t kParallelThreshold = 1 << 15;

struct GemmKey {
  int64_t m, n, k;
  bool trans_a, trans_b, has_bias, accumulate;
  ActivationKind activation;
  int64_t lda, ldb;
  auto tie() const {
    return std::tie(m, n, k, trans_a, trans_b, has_bias, accumulate, activation, lda, ldb);
  }
  bool operator<(const GemmKey& other) const { return tie() < other.tie(); }
};

struct GemmPlan {
  dnnl::matmul primitive;
  memory src, weights, bias, dst;
  std::unordered_map<int, memory> args;
};

// (rows, cols) row-major, or its transpose viewed in place: dims (rows, cols) with strides
// (1, rows) describe a (cols, rows) row-major buffer read as transposed.
// ld: elements between rows of the stored matrix (0: packed).
memory::desc matrix_desc(int64_t rows, int64_t cols, bool transposed, int64_t ld = 0) {
  memory::dims dims = {rows, cols};
  memory::dims strides =
      transposed ? memory::dims{1, ld > 0 ? ld : rows} : memory::dims{ld > 0 ? ld : cols, 1};
  return memory::desc(dims, memory::data_type::f32, strides);
}

dnnl::algorithm eltwise_algorithm(ActivationKind activation) {
  switch (activation) {
    case ActivationKind::relu:
      return dnnl::algorithm::eltwise_relu;
    case ActivationKind::sigmoid:
      return dnnl::algorithm::eltwise_logistic;
    case ActivationKind::tanh:
      return dnnl::algorithm::eltwise_tanh;
    default:
      return dnnl::algorithm::undef;
  }
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads)
      : threads_(threads > 0 ? threads : omp_get_num_procs()),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        windows_(engine_, stream_, threads_),
        batch_norm_(engine_, stream_, threads_) {}

  std::string name() const override { return "cpu"; }
  int threads() const override { return threads_; }

  void gemm(const GemmArgs& g) override {
    if (g.accumulate && (g.bias || g.activation != ActivationKind::linear)) {
      throw BackendError("gemm: accumulate cannot be combined with bias or activation");
    }
    if (g.activation == ActivationKind::softmax) {
      throw BackendError("gemm: softmax is not an epilogue; apply activation_forward");
    }
    if (g.m == 0 || g.n == 0) return;
    omp_set_num_threads(threads_);
    GemmPlan& plan = plan_for({g.m, g.n, g.k, g.trans_a, g.trans_b, g.bias != nullptr, g.accumulate,
                               g.activation, g.lda, g.ldb});
    plan.src.set_data_handle(const_cast<float*>(g.a));
    plan.weights.set_data_handle(const_cast<float*>(g.b));
    plan.dst.set_data_handle(g.c);
    if (g.bias) plan.bias.set_data_handle(const_cast<float*>(g.bias));
    try {
      plan.primitive.execute(stream_, plan.args);
      stream_.wait();
    } catch (const dnnl::error& e) {
      throw BackendError(std::string("oneDNN matmul execute failed: ") + e.what());
    }
  }

  void activation_forward(ActivationKind activation, const float* x, float* y, int64_t rows,
                          int64_t cols) override {
    const int64_t n = rows * cols;
    const bool parallel = n >= kParallelThreshold;
    switch (activation) {
      case ActivationKind::linear:
        if (x != y) std::copy(x, x + n, y);
        return;
      case ActivationKind::relu:
        simd_for(n, threads_, kParallelThreshold, [=](int64_t i) {
          const float v = x[i];  // loaded before the select, so the loop vectorizes
          y[i] = v > 0.f ? v : 0.f;
        });
        return;
      case ActivationKind::sigmoid:
#pragma omp parallel for num_threads(threads_) if (parallel)
        for (int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
        return;
      case ActivationKind::tanh:
#pragma omp parallel for num_threads(threads_) if (parallel)
        for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
        return;
      case ActivationKind::softmax:
#pragma omp parallel for num_threads(threads_) if (parallel)
        for (int64_t r = 0; r < rows; ++r) softmax_row(x + r * cols, y + r * cols, cols);
        return;
    }
  }

  void activation_backward(ActivationKind activation, const float* y, const float* dy, float* dx,
                           int64_t rows, int64_t cols) override {
    const int64_t n = rows * cols;
    const bool parallel = n >= kParallelThreshold;
    switch (activation) {
      case ActivationKind::linear:
        if (dx != dy) std::copy(dy, dy + n, dx);
        return;
      case ActivationKind::relu:
        simd_for(n, threads_, kParallelThreshold, [=](int64_t i) {
          // dy loaded unconditionally: a conditional load is control flow, which keeps the
          // compiler from vectorizing (and mispredicts on a random sign pattern).
          const float g = dy[i];
          dx[i] = y[i] > 0.f ? g : 0.f;
        });
        return;
      case ActivationKind::sigmoid:
        simd_for(n, threads_, kParallelThreshold,
                 [=](int64_t i) { dx[i] = dy[i] * y[i] * (1.f - y[i]); });
        return;
      case ActivationKind::tanh:
        simd_for(n, threads_, kParallelThreshold,
                 [=](int64_t i) { dx[i] = dy[i] * (1.f - y[i] * y[i]); });
        return;
      case ActivationKind::softmax:
        // dx = y * (dy - sum(dy * y)) per row.
#pragma omp parallel for num_threads(threads_) if (parallel)
        for (int64_t r = 0; r < rows; ++r) {
          const float* yr = y + r * cols;
          const float* dyr = dy + r * cols;
          float* dxr = dx + r * cols;
          float dot = 0.f;
          for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * yr[c];
          for (int64_t c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - dot);
        }
        return;
    }
  }

  void conv2d_forward(const Window2d& w, const float* x, const float* kernel, const float* bias,
                      ActivationKind activation, float* y) override {
    windows_.conv2d_forward(w, x, kernel, bias, activation, y);
  }
  void conv2d_backward_data(const Window2d& w, const float* dy, const float* kernel, float* dx,
                            bool accumulate) override {
    windows_.conv2d_backward_data(w, dy, kernel, dx, accumulate);
  }
  void conv2d_backward_weights(const Window2d& w, const float* x, const float* dy, float* dkernel,
                               float* dbias, bool accumulate) override {
    windows_.conv2d_backward_weights(w, x, dy, dkernel, dbias, accumulate);
  }
  void pool2d_forward(PoolKind kind, const Window2d& w, const float* x, float* y,
                      void* workspace) override {
    windows_.pool2d_forward(kind, w, x, y, workspace);
  }
  void pool2d_backward(PoolKind kind, const Window2d& w, const float* dy, const void* workspace,
                       float* dx, bool accumulate) override {
    windows_.pool2d_backward(kind, w, dy, workspace, dx, accumulate);
  }

  void batch_norm_forward(const BatchNormArgs& a, bool training, float* y) override {
    batch_norm_.forward(a, training, y);
  }
  void batch_norm_backward(const BatchNormArgs& a, bool training, const float* dy, float* dx,
                           bool accumulate, float* dgamma, float* dbeta,
                           bool accumulate_params) override {
    batch_norm_.backward(a, training, dy, dx, accumulate, dgamma, dbeta, accumulate_params);
  }

  void bias_grad(const float* dy, float* db, int64_t rows, int64_t cols, bool accumulate) override {
    // Columns split across threads; each thread walks all rows of its column block so
    // every db element has a single writer and a fixed summation order (deterministic).
    const bool parallel = rows * cols >= kParallelThreshold;
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads_) if (parallel)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kBlock, c1 = std::min(cols, c0 + kBlock);
      float acc[kBlock];
      for (int64_t c = c0; c < c1; ++c) acc[c - c0] = accumulate ? db[c] : 0.f;
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = dy + r * cols;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) acc[c - c0] += row[c];
      }
      for (int64_t c = c0; c < c1; ++c) db[c] = acc[c - c0];
    }
  }

 private:
  static void softmax_row(const float* x, float* y, int64_t cols) {
    float max = x[0];
    for (int64_t c = 1; c < cols; ++c) max = std::max(max, x[c]);
    float sum = 0.f;
    for (int64_t c = 0; c < cols; ++c) {
      y[c] = std::exp(x[c] - max);
      sum += y[c];
    }
    const float inv = 1.f / sum;
    for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
  }

  GemmPlan& plan_for(const GemmKey& key) {
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    try {
      const auto src_md = matrix_desc(key.m, key.k, key.trans_a, key.lda);
      const auto weights_md = matrix_desc(key.k, key.n, key.trans_b, key.ldb);
      const auto dst_md = matrix_desc(key.m, key.n, false);
      const auto bias_md = key.has_bias ? matrix_desc(1, key.n, false) : memory::desc();
      dnnl::post_ops ops;
      if (key.accumulate) ops.append_sum(1.f);
      if (key.activation != ActivationKind::linear) {
        ops.append_eltwise(1.f, eltwise_algorithm(key.activation), 0.f, 0.f);
      }
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      const dnnl::matmul::desc desc(src_md, weights_md, bias_md, dst_md);
      const dnnl::matmul::primitive_desc pd(desc, attr, engine_);
      GemmPlan plan;
      plan.primitive = dnnl::matmul(pd);
      plan.src = memory(src_md, engine_, DNNL_MEMORY_NONE);
      plan.weights = memory(weights_md, engine_, DNNL_MEMORY_NONE);
      plan.dst = memory(dst_md, engine_, DNNL_MEMORY_NONE);
      plan.args = {
          {DNNL_ARG_SRC, plan.src}, {DNNL_ARG_WEIGHTS, plan.weights}, {DNNL_ARG_DST, plan.dst}};
      if (key.has_bias) {
        plan.bias = memory(bias_md, engine_, DNNL_MEMORY_NONE);
        plan.args.emplace(DNNL_ARG_BIAS, plan.bias);
      }
      return plans_.emplace(key, std::move(plan)).first->second;
    } catch (const dnnl::error& e) {
      throw BackendError("oneDNN matmul (" + std::to_string(key.m) + "x" + std::to_string(key.k) +
                         " * " + std::to_string(key.k) + "x" + std::to_string(key.n) +
                         ") could not be created: " + e.what());
    }
  }

  int threads_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<GemmKey, GemmPlan> plans_;
  detail::CpuWindowOps windows_;
  detail::CpuBatchNorm batch_norm_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace tandem
