#include "parallel/replica.h"

#include <algorithm>

namespace tandem::detail {

Replica::Replica(ModelState& model, int threads, bool own_params, BackendFactory make_backend)
    : model_(model), backend_(make_backend(threads)), executor_(*model.graph, *backend_) {
  if (own_params) {
    own_params_.resize(model.params.size());
    std::copy(model.params.data(), model.params.data() + model.params.size(), own_params_.data());
    params_ = own_params_.data();
  } else {
    params_ = model.params.data();
  }
  grads_.resize(model.graph->param_buffer_size());
}

void Replica::reserve(int64_t max_rows) {
  max_rows = std::max<int64_t>(max_rows, 1);
  executor_.reserve(max_rows);
  const Graph& g = *model_.graph;
  x_.resize(max_rows * g.input().size);
  const int64_t target =
      model_.compiled ? model_.compiled->loss.target_size(g.output().size, model_.classes()) : 0;
  y_.resize(max_rows * target);
  times_ = PhaseTimes{};
  executor_.times().reset();
}

void Replica::gather(const Samples& x, const Samples* y, std::span<const int64_t> rows) {
  ScopedTimer t(times_, Phase::data);
  const auto n = static_cast<int64_t>(rows.size());
  x.gather(rows.data(), n, x_.data());
  if (y) y->gather(rows.data(), n, y_.data());
}

BatchStats Replica::loss_and_grad(const float* out, int64_t n, float grad_scale) {
  ScopedTimer t(times_, Phase::loss);
  const Compiled& c = model_.require_compiled("training or evaluating");
  const Graph& g = *model_.graph;
  fused_ = c.loss.fuses_with(executor_.output_activation());
  BatchStats s;
  s.samples = n;
  s.loss_sum =
      c.loss.compute(out, y_.data(), n, g.output().size, model_.classes(),
                     grad_scale != 0.f ? executor_.output_grad() : nullptr, grad_scale, fused_);
  if (c.accuracy) {
    s.correct_sum =
        accuracy_sum(c.accuracy_kind, out, y_.data(), n, g.output().size, model_.classes());
  }
  return s;
}

void Replica::backward(GradReadyListener* listener, bool grad_is_preactivation, float sample_weight,
                       WeightGradSink* weight_grads) {
  // The reducer may do its work from inside backward (reductions, updates, weight-gradient
  // shards); it books that time to the phases itself, so backward gets the rest.
  const double booked_before = times_.total();
  const auto start = Clock::now();
  executor_.backward(params_, grads_.data(), grad_is_preactivation, sample_weight, listener,
                     weight_grads);
  times_[Phase::backward] += seconds_since(start) - (times_.total() - booked_before);
  if (detail::tracing()) detail::trace_scope("backward", "phase", start);
}

const float* Replica::forward_train(const Samples& x, std::span<const int64_t> rows, uint64_t seed,
                                    int64_t first_sample) {
  gather(x, nullptr, rows);
  ScopedTimer t(times_, Phase::forward);
  return executor_.forward(x_.data(), static_cast<int64_t>(rows.size()), params_, true, seed,
                           first_sample);
}

BatchStats Replica::compute_gradients(const Samples& x, const Samples& y,
                                      std::span<const int64_t> rows, float grad_scale,
                                      uint64_t seed, int64_t first_sample,
                                      GradReadyListener* listener, WeightGradSink* weight_grads) {
  const auto n = static_cast<int64_t>(rows.size());
  if (n == 0) {
    // Nothing to compute, but the reduction still needs this replica's (zero) share.
    grads_.zero();
    if (executor_.sums_across_replicas()) {
      executor_.forward_without_rows();
      executor_.backward_without_rows(listener);
      return {};
    }
    if (weight_grads) {
      const auto& layers = model_.graph->layers();
      for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        if (it->param_count > 0)
          weight_grads->weight_grad_operands(it->param_offset, nullptr, nullptr, 0);
      }
    }
    if (listener) {
      const auto& layers = model_.graph->layers();
      for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        if (it->param_count > 0) listener->grads_ready(it->param_offset, it->param_count);
      }
    }
    return {};
  }
  gather(x, &y, rows);
  const float* out;
  {
    ScopedTimer t(times_, Phase::forward);
    out = executor_.forward(x_.data(), n, params_, true, seed, first_sample);
  }
  BatchStats stats = loss_and_grad(out, n, grad_scale);
  backward(listener, fused_, grad_scale, weight_grads);
  ++times_.steps;
  return stats;
}

const float* Replica::infer(const Samples& x, const Samples* y, std::span<const int64_t> rows,
                            BatchStats* stats) {
  const auto n = static_cast<int64_t>(rows.size());
  gather(x, y, rows);
  const float* out = executor_.forward(x_.data(), n, params_, false);
  if (y && stats) *stats = loss_and_grad(out, n, 0.f);
  return out;
}

BatchStats split_inference(DeviceGroup& group, std::vector<std::unique_ptr<Replica>>& replicas,
                           const Samples& x, const Samples* y, std::span<const int64_t> rows,
                           float* out, std::vector<BatchStats>& stats) {
  const auto total = static_cast<int64_t>(rows.size());
  const int n = group.size();
  group.run([&](int r) {
    const int64_t b = split_begin(total, n, r), e = split_begin(total, n, r + 1);
    stats[r] = {};
    if (b == e) return;
    const float* result = replicas[r]->infer(x, y, rows.subspan(b, e - b), &stats[r]);
    const int64_t size = replicas[r]->executor().graph().output().size;
    if (out) std::copy(result, result + (e - b) * size, out + b * size);
  });
  BatchStats sum;
  for (const auto& s : stats) sum += s;
  return sum;
}

}  // namespace tandem::detail
