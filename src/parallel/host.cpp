// The `host` strategy: keras.utils.multi_gpu_model's design, kept as a measurable baseline.
// One copy of the weights lives on the host. Every step each device receives a full copy
// of the weights, runs forward on its slice of the batch and sends its outputs back; the
// host computes the loss on the gathered outputs and sends each device its slice of the
// output gradient; each device runs backward and sends its gradients back; the host sums
// them and runs the update. Same results as one device, with all that traffic in the way.
#include <iostream>

#include "core/parallel_for.h"
#include "parallel/buckets.h"
#include "parallel/device_group.h"
#include "parallel/replica.h"
#include "parallel/replica_sum.h"
#include "parallel/shared_memory_communicator.h"
#include "parallel/strategy.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class Host final : public Strategy {
 public:
  Host(ModelState& model, const StrategyOptions& o)
      : model_(model), group_(plan_devices(o.devices, o.threads_per_device)) {
    if (o.deterministic) {
      throw ConfigError("deterministic mode is available with the mirrored strategy only");
    }
    if (group_.plan().oversubscribed) {
      std::cerr << "tandem: warning: " << group_.size() << " devices exceed the available "
                << "cores; results stay correct, but slower\n";
    }
    for (int r = 0; r < group_.size(); ++r) {
      replicas_.push_back(
          std::make_unique<Replica>(model, group_.plan().threads_per_device, true, o.make_backend));
      grad_sources_.push_back(replicas_.back()->grads());
    }
    if (group_.size() > 1 && replicas_[0]->executor().sums_across_replicas()) {
      sums_ = std::make_unique<ReplicaSumGroup>(
          group_.size(), replicas_[0]->executor().replica_sum_capacity(), &group_.barrier());
      for (int r = 0; r < group_.size(); ++r) replicas_[r]->set_replica_sum(&sums_->member(r));
    }
    outputs_.resize(group_.size());
  }

  void prepare(int64_t max_batch) override {
    const int n = group_.size();
    for (auto& r : replicas_) r->reserve((max_batch + n - 1) / n);
    // The host's own buffers: gathered outputs, targets, output gradient, summed gradient.
    const Graph& g = *model_.graph;
    host_out_.resize(max_batch * g.output().size);
    host_out_grad_.resize(max_batch * g.output().size);
    host_y_.resize(max_batch * model_.require_compiled("fit").loss.target_size(g.output().size,
                                                                               model_.classes()));
    host_grads_.resize(g.param_buffer_size());
    state_ptrs_.clear();
    for (auto& s : model_.optimizer_state) state_ptrs_.push_back(s.data());
    host_times_ = PhaseTimes{};
  }

  BatchStats train_step(const Samples& x, const Samples& y, std::span<const int64_t> rows,
                        uint64_t step_seed) override {
    const Compiled& c = model_.require_compiled("fit");
    const Graph& g = *model_.graph;
    const auto total = static_cast<int64_t>(rows.size());
    const int n = group_.size();
    const int64_t out_size = g.output().size;
    const int64_t params = g.param_buffer_size();
    // 1. Weights host -> devices; forward; outputs devices -> host.
    group_.run([&](int r) {
      Replica& replica = *replicas_[r];
      {
        ScopedTimer t(replica.times(), Phase::allreduce);
        std::copy(model_.params.data(), model_.params.data() + params, replica.params());
      }
      const int64_t b = split_begin(total, n, r), e = split_begin(total, n, r + 1);
      if (b == e) {
        replica.executor().forward_without_rows();
        return;
      }
      const float* out = replica.forward_train(x, rows.subspan(b, e - b), step_seed, b);
      ScopedTimer t(replica.times(), Phase::allreduce);
      std::copy(out, out + (e - b) * out_size, host_out_.data() + b * out_size);
    });
    // 2. Loss and its gradient on the host.
    BatchStats stats;
    bool fused;
    {
      ScopedTimer t(host_times_, Phase::loss);
      y.gather(rows.data(), total, host_y_.data());
      fused = c.loss.fuses_with(g.output().layer->output_activation());
      stats.samples = total;
      stats.loss_sum =
          c.loss.compute(host_out_.data(), host_y_.data(), total, out_size, model_.classes(),
                         host_out_grad_.data(), 1.f / static_cast<float>(total), fused);
      if (c.accuracy) {
        stats.correct_sum = accuracy_sum(c.accuracy_kind, host_out_.data(), host_y_.data(), total,
                                         out_size, model_.classes());
      }
    }
    // 3. Output gradient host -> devices; backward; gradients stay for the host to fetch.
    group_.run([&](int r) {
      Replica& replica = *replicas_[r];
      const int64_t b = split_begin(total, n, r), e = split_begin(total, n, r + 1);
      if (b == e) {
        std::fill(replica.grads(), replica.grads() + params, 0.f);
        replica.executor().backward_without_rows(nullptr);
        return;
      }
      {
        ScopedTimer t(replica.times(), Phase::allreduce);
        std::copy(host_out_grad_.data() + b * out_size, host_out_grad_.data() + e * out_size,
                  replica.output_grad());
      }
      replica.backward(nullptr, fused, 1.f / static_cast<float>(total));
      ++replica.times().steps;
    });
    // 4. Gradients devices -> host, summed there, and the update of the host's weights, on
    // every core the devices have (as TensorFlow's CPU ops used all of the host's): each
    // device's threads sum and update a share of the parameters. (An OpenMP team started
    // from this thread instead left its worker spinning into the next step's forward, as
    // libgomp does for milliseconds after a parallel region: small models ran 2x slower.)
    ++model_.iterations;
    group_.run([&](int r) {
      Replica& replica = *replicas_[r];
      const auto [begin, end] = aligned_share(params, n, r);
      if (begin == end) return;
      {
        ScopedTimer t(replica.times(), Phase::allreduce);
        tree_sum(grad_sources_, host_grads_.data(), begin, end);
      }
      ScopedTimer t(replica.times(), Phase::optimizer);
      c.kernel->update(model_.params.data(), host_grads_.data(), state_ptrs_.data(), begin, end,
                       model_.iterations, model_.learning_rate, group_.plan().threads_per_device,
                       0);
    });
    ++host_times_.steps;
    return stats;
  }

  BatchStats test_step(const Samples& x, const Samples& y, std::span<const int64_t> rows) override {
    return infer(x, &y, rows, nullptr);
  }

  void predict_step(const Samples& x, std::span<const int64_t> rows, float* out) override {
    infer(x, nullptr, rows, out);
  }

  PhaseTimes times() const override {
    // The host's own phases plus the mean of the devices'.
    PhaseTimes devices;
    for (const auto& r : replicas_) devices += r->times();
    PhaseTimes t = host_times_;
    for (size_t p = 0; p < t.seconds.size(); ++p) {
      t.seconds[p] += devices.seconds[p] / static_cast<double>(replicas_.size());
    }
    return t;
  }

 private:
  BatchStats infer(const Samples& x, const Samples* y, std::span<const int64_t> rows, float* out) {
    // Weights host -> devices, then each device infers on its slice.
    const int64_t params = model_.graph->param_buffer_size();
    group_.run([&](int r) {
      std::copy(model_.params.data(), model_.params.data() + params, replicas_[r]->params());
    });
    return split_inference(group_, replicas_, x, y, rows, out, outputs_);
  }

  ModelState& model_;
  DeviceGroup group_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<ReplicaSumGroup> sums_;  // synchronized BatchNormalization
  std::vector<float*> grad_sources_;
  std::vector<BatchStats> outputs_;
  AlignedBuffer host_out_, host_out_grad_, host_y_, host_grads_;
  std::vector<float*> state_ptrs_;
  PhaseTimes host_times_;
};

}  // namespace

std::unique_ptr<Strategy> make_host_strategy(ModelState& model, const StrategyOptions& o) {
  return std::make_unique<Host>(model, o);
}

}  // namespace tandem::detail
