// The mirrored strategy: one replica per device, identical parameters everywhere. Each
// replica runs forward and backward on its share of the global batch; as backward
// finishes a bucket on every replica, each replica reduces its 1/N shard of that bucket,
// applies the optimizer to it and writes the new values into every replica
// (ShardedUpdateReducer). Deterministic mode splits the global batch into fixed
// micro-shards whose gradients are summed in a fixed tree, whichever device computed them.
#include <iostream>

#include "parallel/device_group.h"
#include "parallel/grad_reducer.h"
#include "parallel/replica.h"
#include "parallel/replica_sum.h"
#include "parallel/shared_memory_communicator.h"
#include "parallel/strategy.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

void warn_if_oversubscribed(const DevicePlan& plan) {
  if (plan.oversubscribed) {
    std::cerr << "tandem: warning: " << plan.devices << " devices x " << plan.threads_per_device
              << " threads exceed the available cores; results stay correct, but slower\n";
  }
}

// Whether every layer with parameters is a Dense called once (weight-gradient sharding).
bool dense_layers_used_once(const Graph& graph) {
  for (const auto& layer : graph.layers()) {
    if (layer.param_count > 0 && (layer.layer->type() != "Dense" || layer.uses != 1)) return false;
  }
  return true;
}

class Mirrored final : public Strategy {
 public:
  Mirrored(ModelState& model, const StrategyOptions& o)
      : model_(model), options_(o), group_(plan_devices(o.devices, o.threads_per_device)) {
    const int n = group_.size();
    const bool processes = o.world != nullptr && o.world->size() > 1;
    world_ = processes ? o.world : nullptr;
    world_devices_ = n * (processes ? o.world->size() : 1);
    first_device_ = processes ? o.world->rank() * n : 0;
    // Nested pairwise trees (shards on a device, devices, ranks) equal the flat tree over all
    // shards only for powers of two.
    const auto power_of_two = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
    if (o.deterministic &&
        (!power_of_two(o.deterministic_shards) || !power_of_two(world_devices_) ||
         o.deterministic_shards % world_devices_ != 0)) {
      throw ConfigError("deterministic mode: devices (" + std::to_string(world_devices_) +
                        (processes ? " over all ranks" : "") +
                        ") must divide the micro-shards per batch (" +
                        std::to_string(o.deterministic_shards) + "), e.g. 1, 2 or 4");
    }
    if (processes && (o.reducer != ReducerKind::sharded || !o.shared_parameters)) {
      throw ConfigError(
          "with several MPI ranks gradients are reduced hierarchically (local devices share "
          "one parameter buffer; one all-reduce per bucket crosses processes): the reducer "
          "and shared_parameters options apply to one process only");
    }
    const bool allreduce = o.reducer == ReducerKind::allreduce;
    // The all-reduce reducer has every replica update its own copy.
    const bool own_copies = allreduce || !o.shared_parameters;
    warn_if_oversubscribed(group_.plan());
    const Compiled& c = model.require_compiled("fit");
    // Replica 0 trains the model's own buffer; the others share it, or start from a copy of
    // it (the broadcast of initial weights).
    for (int r = 0; r < n; ++r) {
      replicas_.push_back(std::make_unique<Replica>(model, group_.plan().threads_per_device,
                                                    r > 0 && own_copies, o.make_backend));
    }
    if (replicas_[0]->executor().sums_across_replicas()) {
      // Synchronized BatchNormalization: statistics summed over every device.
      if (o.deterministic) {
        throw ConfigError(
            "deterministic mode and BatchNormalization(synchronized=True) do not combine: "
            "deterministic mode computes micro-shards one after another, and synchronized "
            "statistics need every shard's rows before any is normalized");
      }
      if (processes && o.gradient_comm.bf16) {
        throw ConfigError(
            "bfloat16 gradients and BatchNormalization(synchronized=True) across ranks do not "
            "combine: the statistics travel with the gradients and need float32");
      }
    }
    buckets_ =
        make_buckets(*model.graph, o.bucket_bytes, std::min(o.first_bucket_bytes, o.bucket_bytes));
    kernel_ = c.kernel.get();
    if (processes) {
      world_comm_ = o.world->gradient_communicator(o.gradient_comm);
      hierarchy_ =
          std::make_unique<HierarchicalShared>(n, buckets_, world_comm_.get(), &group_.barrier());
      hierarchy_->params = model.params.data();
      hierarchy_->param_count = model.graph->param_buffer_size();
      hierarchy_->kernel = kernel_;
      for (auto& slot : model.optimizer_state) hierarchy_->state.push_back(slot.data());
      for (int r = 0; r < n; ++r) {
        hierarchy_->grads[r] = replicas_[r]->grads();
        reducers_.push_back(make_hierarchical_reducer(
            *hierarchy_, r, group_.plan().threads_per_device, replicas_[r]->times()));
      }
    } else if (allreduce) {
      // Every replica updates its own copy: each needs its own optimizer accumulators
      // (replica 0 keeps the model's, the others start from a copy of them).
      comms_ = make_shared_memory_communicators(n, &group_.barrier());
      private_state_.resize(n);
      state_ptrs_.resize(n);
      for (int r = 0; r < n; ++r) {
        for (auto& slot : model.optimizer_state) {
          if (r == 0) {
            state_ptrs_[r].push_back(slot.data());
            continue;
          }
          private_state_[r].emplace_back(slot.size());
          std::copy(slot.data(), slot.data() + slot.size(), private_state_[r].back().data());
          state_ptrs_[r].push_back(private_state_[r].back().data());
        }
        reducers_.push_back(make_allreduce_reducer(*comms_[r], buckets_, replicas_[r]->grads(),
                                                   replicas_[r]->times()));
      }
    } else {
      shared_ = std::make_unique<ShardedUpdateShared>(n, buckets_, &group_.barrier());
      shared_->kernel = kernel_;
      const bool by_weight_gradients = o.shard_weight_gradients && !own_copies &&
                                       !o.deterministic && dense_layers_used_once(*model.graph);
      if (by_weight_gradients) shared_->plan_weight_grad_sharding(*model.graph);
      for (int r = 0; r < n; ++r) {
        shared_->params[r] = replicas_[r]->params();
        shared_->grads[r] = replicas_[r]->grads();
        reducers_.push_back(by_weight_gradients
                                ? make_weight_grad_shard_reducer(
                                      *shared_, r, replicas_[r]->backend(), replicas_[r]->times())
                                : make_sharded_update_reducer(*shared_, r, replicas_[r]->times()));
      }
      for (auto& slot : model.optimizer_state) shared_->state.push_back(slot.data());
    }
    if (replicas_[0]->executor().sums_across_replicas() && (n > 1 || processes)) {
      std::vector<GradReducer*> flushed;
      for (auto& reducer : reducers_) flushed.push_back(reducer.get());
      sums_ = std::make_unique<ReplicaSumGroup>(n, replicas_[0]->executor().replica_sum_capacity(),
                                                &group_.barrier(), world_comm_.get(), flushed);
      for (int r = 0; r < n; ++r) replicas_[r]->set_replica_sum(&sums_->member(r));
    }
    stats_.resize(n);
  }

  void prepare(int64_t max_batch) override {
    const int n = group_.size();
    const int shards = options_.deterministic ? options_.deterministic_shards : world_devices_;
    const int64_t per_part = (max_batch + shards - 1) / shards;
    steps_ = 0;
    for (auto& r : replicas_) r->reserve(per_part);
    if (options_.deterministic) {
      const int local = shards / world_devices_;
      shard_grads_.resize(n);
      for (auto& buffers : shard_grads_) {
        buffers.resize(local);
        for (auto& b : buffers) b.resize(model_.graph->param_buffer_size());
      }
      shard_sources_.assign(n, std::vector<float*>(local));
      for (int r = 0; r < n; ++r) {
        for (int j = 0; j < local; ++j) shard_sources_[r][j] = shard_grads_[r][j].data();
      }
    }
  }

  BatchStats train_step(const Samples& x, const Samples& y, std::span<const int64_t> rows,
                        uint64_t step_seed) override {
    const auto total = static_cast<int64_t>(rows.size());
    ++model_.iterations;
    if (shared_) {
      shared_->iteration = model_.iterations;
      shared_->learning_rate = model_.learning_rate;
    }
    if (hierarchy_) {
      hierarchy_->iteration = model_.iterations;
      hierarchy_->learning_rate = model_.learning_rate;
    }
    const float scale = 1.f / static_cast<float>(total);
    auto task = [&](int r) {
      Replica& replica = *replicas_[r];
      GradReducer& reducer = *reducers_[r];
      reducer.begin_step();
      if (!options_.deterministic) {
        const int d = first_device_ + r;  // this device among all ranks' devices
        const int64_t b = split_begin(total, world_devices_, d),
                      e = split_begin(total, world_devices_, d + 1);
        stats_[r] = replica.compute_gradients(x, y, rows.subspan(b, e - b), scale, step_seed, b,
                                              &reducer, reducer.weight_grad_sink());
      } else {
        stats_[r] = deterministic_gradients(r, x, y, rows, scale, step_seed);
        const auto& layers = model_.graph->layers();
        for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
          if (it->param_count > 0) reducer.grads_ready(it->param_offset, it->param_count);
        }
      }
      reducer.finalize();
      if (!reducer.applies_update()) {
        ScopedTimer t(replica.times(), Phase::optimizer);
        kernel_->update(replica.params(), replica.grads(), state_ptrs_[r].data(), 0,
                        model_.graph->param_buffer_size(), model_.iterations, model_.learning_rate,
                        group_.plan().threads_per_device, 0);
      }
    };
    group_.run(task);
    ++steps_;
    BatchStats total_stats;
    for (const auto& s : stats_) total_stats += s;
    return world_ ? sum_over_ranks(total_stats) : total_stats;
  }

  // Several ranks: each evaluates its share of the rows; the sums are added up.
  BatchStats test_step(const Samples& x, const Samples& y, std::span<const int64_t> rows) override {
    if (!world_) return split_inference(group_, replicas_, x, &y, rows, nullptr, stats_);
    const auto total = static_cast<int64_t>(rows.size());
    const int p = world_->size(), me = world_->rank();
    const int64_t b = split_begin(total, p, me), e = split_begin(total, p, me + 1);
    return sum_over_ranks(
        split_inference(group_, replicas_, x, &y, rows.subspan(b, e - b), nullptr, stats_));
  }

  void predict_step(const Samples& x, std::span<const int64_t> rows, float* out) override {
    split_inference(group_, replicas_, x, nullptr, rows, out, stats_);
  }

  PhaseTimes times() const override {
    PhaseTimes t;
    for (const auto& r : replicas_) {
      t += r->times();
      PhaseTimes layers;
      layers.layer_forward = r->executor().times().layer_forward;
      layers.layer_backward = r->executor().times().layer_backward;
      t += layers;
    }
    const double n = static_cast<double>(replicas_.size());
    for (double& s : t.seconds) s /= n;
    for (double& s : t.layer_forward) s /= n;
    for (double& s : t.layer_backward) s /= n;
    t.steps = steps_;
    return t;
  }

 private:
  BatchStats sum_over_ranks(const BatchStats& mine) {
    double sums[3] = {mine.loss_sum, mine.correct_sum, static_cast<double>(mine.samples)};
    world_->sum(sums, 3);
    return {.loss_sum = sums[0], .correct_sum = sums[1], .samples = static_cast<int64_t>(sums[2])};
  }

  // Micro-shards [r*k, (r+1)*k) of the global batch, each computed alone, summed locally in
  // the same tree the single-device run uses; the reducer continues the tree across devices.
  BatchStats deterministic_gradients(int r, const Samples& x, const Samples& y,
                                     std::span<const int64_t> rows, float scale, uint64_t seed) {
    const auto total = static_cast<int64_t>(rows.size());
    const int shards = options_.deterministic_shards, local = shards / world_devices_;
    Replica& replica = *replicas_[r];
    BatchStats sum;
    for (int j = 0; j < local; ++j) {
      const int shard = (first_device_ + r) * local + j;
      const int64_t b = split_begin(total, shards, shard),
                    e = split_begin(total, shards, shard + 1);
      sum += replica.compute_gradients(x, y, rows.subspan(b, e - b), scale, seed, b, nullptr);
      ScopedTimer t(replica.times(), Phase::allreduce);  // the copy aside is the sum's part
      std::copy(replica.grads(), replica.grads() + model_.graph->param_buffer_size(),
                shard_sources_[r][j]);
    }
    ScopedTimer t(replica.times(), Phase::allreduce);
    tree_sum(shard_sources_[r], replica.grads(), 0, model_.graph->param_buffer_size());
    return sum;
  }

  ModelState& model_;
  StrategyOptions options_;
  DeviceGroup group_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<ReplicaSumGroup> sums_;  // synchronized BatchNormalization
  std::vector<Bucket> buckets_;
  const OptimizerKernel* kernel_ = nullptr;
  std::unique_ptr<ShardedUpdateShared> shared_;                   // reducer "sharded"
  std::vector<std::unique_ptr<SharedMemoryCommunicator>> comms_;  // reducer "allreduce"
  std::vector<std::vector<AlignedBuffer>> private_state_;
  std::vector<std::vector<float*>> state_ptrs_;
  World* world_ = nullptr;  // several processes
  int world_devices_ = 1;   // devices over all ranks
  int first_device_ = 0;    // this rank's first device among them
  std::unique_ptr<Communicator> world_comm_;
  std::unique_ptr<HierarchicalShared> hierarchy_;
  std::vector<std::unique_ptr<GradReducer>> reducers_;
  std::vector<BatchStats> stats_;
  int64_t steps_ = 0;
  std::vector<std::vector<AlignedBuffer>> shard_grads_;  // deterministic: per replica, per shard
  std::vector<std::vector<float*>> shard_sources_;
};

}  // namespace

std::unique_ptr<Strategy> make_mirrored_strategy(ModelState& model, const StrategyOptions& o) {
  return std::make_unique<Mirrored>(model, o);
}

}  // namespace tandem::detail
