#include "backend/timed_backend.h"

#include <chrono>
#include <utility>

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

class TimedBackend final : public Backend {
 public:
  TimedBackend(std::unique_ptr<Backend> inner, std::shared_ptr<KernelSeconds> tally)
      : inner_(std::move(inner)), tally_(std::move(tally)) {}

  std::string name() const override { return inner_->name(); }
  int threads() const override { return inner_->threads(); }

  void gemm(const GemmArgs& args) override {
    timed(KernelKind::gemm, [&] { inner_->gemm(args); });
  }
  void activation_forward(ActivationKind activation, const float* x, float* y, int64_t rows,
                          int64_t cols) override {
    timed(KernelKind::elementwise,
          [&] { inner_->activation_forward(activation, x, y, rows, cols); });
  }
  void activation_backward(ActivationKind activation, const float* y, const float* dy, float* dx,
                           int64_t rows, int64_t cols) override {
    timed(KernelKind::elementwise,
          [&] { inner_->activation_backward(activation, y, dy, dx, rows, cols); });
  }
  void bias_grad(const float* dy, float* db, int64_t rows, int64_t cols, bool accumulate) override {
    timed(KernelKind::elementwise, [&] { inner_->bias_grad(dy, db, rows, cols, accumulate); });
  }

  void conv2d_forward(const Window2d& w, const float* x, const float* kernel, const float* bias,
                      ActivationKind activation, float* y) override {
    timed(KernelKind::conv, [&] { inner_->conv2d_forward(w, x, kernel, bias, activation, y); });
  }
  void conv2d_backward_data(const Window2d& w, const float* dy, const float* kernel, float* dx,
                            bool accumulate) override {
    timed(KernelKind::conv, [&] { inner_->conv2d_backward_data(w, dy, kernel, dx, accumulate); });
  }
  void conv2d_backward_weights(const Window2d& w, const float* x, const float* dy, float* dkernel,
                               float* dbias, bool accumulate) override {
    timed(KernelKind::conv,
          [&] { inner_->conv2d_backward_weights(w, x, dy, dkernel, dbias, accumulate); });
  }
  void pool2d_forward(PoolKind kind, const Window2d& w, const float* x, float* y,
                      void* workspace) override {
    timed(KernelKind::pool, [&] { inner_->pool2d_forward(kind, w, x, y, workspace); });
  }
  void pool2d_backward(PoolKind kind, const Window2d& w, const float* dy, const void* workspace,
                       float* dx, bool accumulate) override {
    timed(KernelKind::pool,
          [&] { inner_->pool2d_backward(kind, w, dy, workspace, dx, accumulate); });
  }

  void batch_norm_forward(const BatchNormArgs& a, bool training, float* y) override {
    timed(KernelKind::batch_norm, [&] { inner_->batch_norm_forward(a, training, y); });
  }
  void batch_norm_backward(const BatchNormArgs& a, bool training, const float* dy, float* dx,
                           bool accumulate, float* dgamma, float* dbeta,
                           bool accumulate_params) override {
    timed(KernelKind::batch_norm, [&] {
      inner_->batch_norm_backward(a, training, dy, dx, accumulate, dgamma, dbeta,
                                  accumulate_params);
    });
  }
  void batch_norm_sums(const BatchNormArgs& a, const float* dy, double* sums) override {
    timed(KernelKind::batch_norm, [&] { inner_->batch_norm_sums(a, dy, sums); });
  }
  void batch_norm_backward_global(const BatchNormArgs& a, const float* dy, const double* sums,
                                  double count, float* dx, bool accumulate) override {
    timed(KernelKind::batch_norm,
          [&] { inner_->batch_norm_backward_global(a, dy, sums, count, dx, accumulate); });
  }

  // Waiting for queued work is not a kernel (and a no-op on CPU).
  void synchronize() override { inner_->synchronize(); }

 private:
  template <class Call>
  void timed(KernelKind kind, Call&& call) {
    const auto start = Clock::now();
    call();
    const auto i = static_cast<size_t>(kind);
    tally_->seconds[i] += std::chrono::duration<double>(Clock::now() - start).count();
    ++tally_->calls[i];
  }

  std::unique_ptr<Backend> inner_;
  std::shared_ptr<KernelSeconds> tally_;
};

}  // namespace

const char* kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::gemm:
      return "gemm";
    case KernelKind::conv:
      return "conv";
    case KernelKind::pool:
      return "pool";
    case KernelKind::batch_norm:
      return "batch_norm";
    case KernelKind::elementwise:
      return "elementwise";
    case KernelKind::count:
      break;
  }
  return "?";
}

std::unique_ptr<Backend> make_timed_backend(std::unique_ptr<Backend> inner,
                                            std::shared_ptr<KernelSeconds> tally) {
  return std::make_unique<TimedBackend>(std::move(inner), std::move(tally));
}

}  // namespace tandem
