// The one-device strategy: a single replica that trains the model's own parameter buffer
// in place. Allocations happen in prepare(); train_step allocates nothing.
#include <memory>

#include "backend/backend.h"
#include "core/aligned_buffer.h"
#include "model/executor.h"
#include "parallel/strategy.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class SingleDevice final : public Strategy {
 public:
  SingleDevice(ModelState& model, int threads)
      : model_(model),
        compiled_(model.compiled ? &*model.compiled : nullptr),
        backend_(make_cpu_backend(threads)),
        executor_(*model.graph, *backend_) {}

  void prepare(int64_t max_batch) override {
    executor_.reserve(max_batch);
    const Graph& g = *model_.graph;
    x_.resize(max_batch * g.input().size);
    if (compiled_) {
      y_.resize(max_batch * compiled_->loss.target_size(g.output().size, model_.classes()));
    }
    grads_.resize(g.param_buffer_size());
    state_ptrs_.clear();
    for (auto& s : model_.optimizer_state) state_ptrs_.push_back(s.data());
    times_ = PhaseTimes{};
    executor_.times().reset();
  }

  BatchStats train_step(const Samples& x, const Samples& y, std::span<const int64_t> rows,
                        uint64_t step_seed) override {
    const int64_t n = static_cast<int64_t>(rows.size());
    gather(x, y, rows);
    rng_.reseed(step_seed);
    const float* out;
    {
      ScopedTimer t(times_[Phase::forward]);
      out = executor_.forward(x_.data(), n, model_.params.data(), true, rng_);
    }
    BatchStats stats = loss_and_grad(out, n, 1.f / static_cast<float>(n));
    {
      ScopedTimer t(times_[Phase::backward]);
      executor_.backward(model_.params.data(), grads_.data(), fused_);
    }
    {
      ScopedTimer t(times_[Phase::optimizer]);
      ++model_.iterations;
      compiled_->kernel->update(model_.params.data(), grads_.data(), state_ptrs_.data(), 0,
                                grads_.size(), model_.iterations, model_.learning_rate,
                                backend_->threads());
    }
    ++times_.steps;
    return stats;
  }

  BatchStats test_step(const Samples& x, const Samples& y, std::span<const int64_t> rows) override {
    const int64_t n = static_cast<int64_t>(rows.size());
    gather(x, y, rows);
    const float* out = executor_.forward(x_.data(), n, model_.params.data(), false, rng_);
    return metrics(out, n, nullptr, 0.f);
  }

  void predict_step(const Samples& x, std::span<const int64_t> rows, float* out) override {
    const int64_t n = static_cast<int64_t>(rows.size());
    x.gather(rows.data(), n, x_.data());
    const float* result = executor_.forward(x_.data(), n, model_.params.data(), false, rng_);
    const int64_t size = model_.graph->output().size;
    std::copy(result, result + n * size, out);
  }

  PhaseTimes times() const override {
    PhaseTimes t = times_;
    t.layer_forward = executor_times().layer_forward;
    t.layer_backward = executor_times().layer_backward;
    return t;
  }

 private:
  const PhaseTimes& executor_times() const { return const_cast<Executor&>(executor_).times(); }

  void gather(const Samples& x, const Samples& y, std::span<const int64_t> rows) {
    ScopedTimer t(times_[Phase::data]);
    x.gather(rows.data(), static_cast<int64_t>(rows.size()), x_.data());
    y.gather(rows.data(), static_cast<int64_t>(rows.size()), y_.data());
  }

  BatchStats loss_and_grad(const float* out, int64_t n, float grad_scale) {
    ScopedTimer t(times_[Phase::loss]);
    return metrics(out, n, executor_.output_grad(), grad_scale);
  }

  BatchStats metrics(const float* out, int64_t n, float* grad, float grad_scale) {
    const Graph& g = *model_.graph;
    const Compiled& c = model_.require_compiled("training or evaluating");
    fused_ = c.loss.fuses_with(executor_.output_activation());
    BatchStats s;
    s.samples = n;
    s.loss_sum = c.loss.compute(out, y_.data(), n, g.output().size, model_.classes(), grad,
                                grad_scale, fused_);
    if (c.accuracy) {
      s.correct_sum =
          accuracy_sum(c.accuracy_kind, out, y_.data(), n, g.output().size, model_.classes());
    }
    return s;
  }

  ModelState& model_;
  const Compiled* compiled_;  // null until compile(): predict only
  std::unique_ptr<Backend> backend_;
  Executor executor_;
  AlignedBuffer x_, y_, grads_;
  std::vector<float*> state_ptrs_;
  Rng rng_;
  bool fused_ = false;
  PhaseTimes times_;
};

}  // namespace

std::unique_ptr<Strategy> make_single_device_strategy(ModelState& model, int threads) {
  return std::make_unique<SingleDevice>(model, threads);
}

}  // namespace tandem::detail
