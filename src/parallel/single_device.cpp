// The one-device strategy: a single replica that trains the model's own parameter buffer
// in place. Allocations happen in prepare(); train_step allocates nothing.
#include <memory>

#include "parallel/replica.h"
#include "parallel/strategy.h"

namespace tandem::detail {
namespace {

class SingleDevice final : public Strategy {
 public:
  SingleDevice(ModelState& model, int threads, BackendFactory make_backend)
      : model_(model), replica_(model, threads, false, make_backend) {}

  void prepare(int64_t max_batch) override {
    replica_.reserve(max_batch);
    state_ptrs_.clear();
    for (auto& s : model_.optimizer_state) state_ptrs_.push_back(s.data());
  }

  BatchStats train_step(const Samples& x, const Samples& y, std::span<const int64_t> rows,
                        uint64_t step_seed) override {
    const Compiled& c = model_.require_compiled("fit");
    const auto n = static_cast<int64_t>(rows.size());
    BatchStats stats =
        replica_.compute_gradients(x, y, rows, 1.f / static_cast<float>(n), step_seed, 0, nullptr);
    ScopedTimer t(replica_.times(), Phase::optimizer);
    ++model_.iterations;
    c.kernel->update(replica_.params(), replica_.grads(), state_ptrs_.data(), 0,
                     model_.graph->param_buffer_size(), model_.iterations, model_.learning_rate,
                     replica_.backend().threads(), 0);
    return stats;
  }

  BatchStats test_step(const Samples& x, const Samples& y, std::span<const int64_t> rows) override {
    BatchStats stats;
    replica_.infer(x, &y, rows, &stats);
    return stats;
  }

  void predict_step(const Samples& x, std::span<const int64_t> rows, float* out) override {
    const float* result = replica_.infer(x, nullptr, rows, nullptr);
    const int64_t size = model_.graph->output().size;
    std::copy(result, result + static_cast<int64_t>(rows.size()) * size, out);
  }

  PhaseTimes times() const override {
    PhaseTimes t = const_cast<Replica&>(replica_).times();
    const PhaseTimes& layers = const_cast<Replica&>(replica_).executor().times();
    t.layer_forward = layers.layer_forward;
    t.layer_backward = layers.layer_backward;
    return t;
  }

 private:
  ModelState& model_;
  Replica replica_;
  std::vector<float*> state_ptrs_;
};

}  // namespace

std::unique_ptr<Strategy> make_single_device_strategy(ModelState& model, int threads,
                                                      BackendFactory make_backend) {
  return std::make_unique<SingleDevice>(model, threads, make_backend);
}

}  // namespace tandem::detail
