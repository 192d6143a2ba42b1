#include "parallel/grad_reducer.h"

#include <algorithm>
#include <thread>

#include "parallel/shared_memory_communicator.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class AllreduceReducer final : public GradReducer {
 public:
  AllreduceReducer(Communicator& comm, const std::vector<Bucket>& buckets, float* grads,
                   PhaseTimes& times)
      : comm_(comm),
        buckets_(buckets),
        index_(buckets_),
        grads_(grads),
        times_(times),
        layers_left_(buckets.size()),
        requests_(buckets.size()) {}

  void begin_step() override {
    for (size_t b = 0; b < buckets_.size(); ++b) layers_left_[b] = buckets_[b].layers;
    next_to_post_ = 0;
  }

  void grads_ready(int64_t offset, int64_t) override {
    ScopedTimer t(times_, Phase::allreduce);
    const int b = index_.find(offset);
    --layers_left_[b];
    // Post in bucket order (every rank must issue collectives in the same order).
    while (next_to_post_ < buckets_.size() && layers_left_[next_to_post_] == 0) {
      const Bucket& k = buckets_[next_to_post_];
      requests_[next_to_post_] = comm_.allreduce_async(grads_ + k.offset, k.count);
      ++next_to_post_;
    }
    for (size_t i = 0; i < next_to_post_; ++i) comm_.test(requests_[i]);
  }

  void finalize() override {
    ScopedTimer t(times_, Phase::allreduce);
    for (size_t b = next_to_post_; b < buckets_.size(); ++b) {
      requests_[b] = comm_.allreduce_async(grads_ + buckets_[b].offset, buckets_[b].count);
    }
    next_to_post_ = buckets_.size();
    for (size_t b = 0; b < buckets_.size(); ++b) comm_.wait(requests_[b]);
  }

  bool applies_update() const override { return false; }

 private:
  Communicator& comm_;
  const std::vector<Bucket>& buckets_;
  BucketIndex index_;
  float* grads_;
  PhaseTimes& times_;
  std::vector<int> layers_left_;
  std::vector<Communicator::Request> requests_;
  size_t next_to_post_ = 0;
};

// Runs process(i) once for every unit i (bucket or layer) whose counter shows all replicas
// ready for this step (counters count replica arrivals over all steps); true when every
// unit is done.
template <class Process>
bool process_ready_units(std::vector<bool>& done, const std::atomic<int64_t>* ready, int64_t needed,
                         Process&& process) {
  bool all = true;
  for (size_t i = 0; i < done.size(); ++i) {
    if (done[i]) continue;
    if (ready[i].load(std::memory_order_acquire) < needed) {
      all = false;
      continue;
    }
    process(i);
    done[i] = true;
  }
  return all;
}

class ShardedUpdateReducer final : public GradReducer {
 public:
  ShardedUpdateReducer(ShardedUpdateShared& shared, int rank, PhaseTimes& times)
      : s_(shared),
        rank_(rank),
        times_(times),
        index_(s_.buckets),
        layers_left_(s_.buckets.size()),
        done_(s_.buckets.size()),
        sources_(s_.replicas) {}

  void begin_step() override {
    for (size_t b = 0; b < s_.buckets.size(); ++b) {
      layers_left_[b] = s_.buckets[b].layers;
      done_[b] = false;
    }
    ++step_;
  }

  void grads_ready(int64_t offset, int64_t) override {
    const int b = index_.find(offset);
    if (--layers_left_[b] == 0) s_.bucket_ready[b].fetch_add(1, std::memory_order_acq_rel);
    process_ready();
  }

  void finalize() override {
    finish_step(*s_.barrier, times_, "finish step (wait for replicas)",
                [&] { return process_ready(); });
  }

  bool applies_update() const override { return true; }

 private:
  // Processes my shard of every bucket final on all replicas; true when none is left.
  bool process_ready() {
    return process_ready_units(done_, s_.bucket_ready.get(), step_ * s_.replicas,
                               [&](size_t b) { process_shard(s_.buckets[b]); });
  }

  void process_shard(const Bucket& bucket) {
    const auto start = Clock::now();
    process_shard_chunks(bucket);
    if (detail::tracing()) {
      detail::trace_bucket("bucket shard: sum, update, share", start, bucket.count * 4);
    }
  }

  void process_shard_chunks(const Bucket& bucket) {
    const int n = s_.replicas;
    const auto [shard_begin, shard_end] = aligned_share(bucket.count, n, rank_);
    const int64_t begin = bucket.offset + shard_begin, end = bucket.offset + shard_end;
    float* params = s_.params[rank_];
    float* state[2] = {};
    for (int64_t at = begin; at < end; at += kUpdateChunk) {
      const int64_t len = std::min(end, at + kUpdateChunk) - at;
      // The summed gradient lives only in this L2-sized chunk: no pass writes it to memory.
      {
        ScopedTimer t(times_, Phase::allreduce);
        for (int r = 0; r < n; ++r) sources_[r] = s_.grads[r] + at;
        tree_sum(sources_, sum_.data(), 0, len);
      }
      {
        ScopedTimer t(times_, Phase::optimizer);
        for (size_t k = 0; k < s_.state.size(); ++k) state[k] = s_.state[k] + at;
        s_.kernel->update(params + at, sum_.data(), state, 0, len, s_.iteration, s_.learning_rate,
                          1, at);
      }
      ScopedTimer t(times_, Phase::allreduce);
      for (int r = 0; r < n; ++r) {
        if (s_.params[r] != params) std::copy(params + at, params + at + len, s_.params[r] + at);
      }
    }
  }

  ShardedUpdateShared& s_;
  int rank_;
  PhaseTimes& times_;
  BucketIndex index_;
  std::vector<int> layers_left_;
  std::vector<bool> done_;
  std::vector<float*> sources_;
  std::vector<float> sum_ = std::vector<float>(kUpdateChunk);
  int64_t step_ = 0;
};

class WeightGradShardReducer final : public GradReducer, public WeightGradSink {
 public:
  WeightGradShardReducer(ShardedUpdateShared& shared, int rank, Backend& backend, PhaseTimes& times)
      : s_(shared), rank_(rank), backend_(backend), times_(times), done_(s_.layers.size()) {}

  void begin_step() override {
    std::fill(done_.begin(), done_.end(), false);
    ++step_;
  }

  WeightGradSink* weight_grad_sink() override { return this; }

  void weight_grad_operands(int64_t offset, const float* x, const float* dz,
                            int64_t rows) override {
    for (size_t l = 0; l < s_.layers.size(); ++l) {
      auto& layer = s_.layers[l];
      if (layer.offset != offset) continue;
      layer.x[rank_] = x;
      layer.dz[rank_] = dz;
      layer.rows[rank_] = rows;
      s_.layer_posted[l].fetch_add(1, std::memory_order_acq_rel);
      process_ready();
      return;
    }
    throw Error("weight gradient operands for an unknown layer at offset " +
                std::to_string(offset));
  }

  void grads_ready(int64_t, int64_t) override { process_ready(); }

  void finalize() override {
    finish_step(*s_.barrier, times_, "finish step (wait for replicas)",
                [&] { return process_ready(); });
  }

  bool applies_update() const override { return true; }

 private:
  bool process_ready() {
    return process_ready_units(done_, s_.layer_posted.get(), step_ * s_.replicas,
                               [&](size_t l) { process_layer(s_.layers[l]); });
  }

  void process_layer(const ShardedUpdateShared::Operands& layer) {
    const int n = s_.replicas;
    const int64_t per = (layer.in + n - 1) / n;
    const int64_t i0 = std::min(layer.in, per * rank_), i1 = std::min(layer.in, i0 + per);
    float* grads = s_.grads[rank_];
    float* kernel_grad = grads + layer.offset;  // (in, units)
    float* bias_grad = kernel_grad + layer.in * layer.units;
    {
      ScopedTimer t(times_, Phase::backward);
      bool first = true;
      for (int q = 0; q < n; ++q) {
        if (layer.rows[q] == 0) continue;
        if (i0 < i1) {
          // rows [i0, i1) of x_q^T (in, rows_q) . dz_q (rows_q, units)
          backend_.gemm({.m = i1 - i0,
                         .n = layer.units,
                         .k = layer.rows[q],
                         .a = layer.x[q] + i0,
                         .trans_a = true,
                         .b = layer.dz[q],
                         .c = kernel_grad + i0 * layer.units,
                         .accumulate = !first,
                         .lda = layer.in});
        }
        if (layer.bias && rank_ == 0) {
          backend_.bias_grad(layer.dz[q], bias_grad, layer.rows[q], layer.units, !first);
        }
        first = false;
      }
    }
    ScopedTimer t(times_, Phase::optimizer);
    const int threads = backend_.threads();
    if (i0 < i1) {
      s_.kernel->update(s_.params[rank_], grads, s_.state.data(), layer.offset + i0 * layer.units,
                        layer.offset + i1 * layer.units, s_.iteration, s_.learning_rate, threads,
                        0);
    }
    if (layer.bias && rank_ == 0) {
      const int64_t b = layer.offset + layer.in * layer.units;
      s_.kernel->update(s_.params[rank_], grads, s_.state.data(), b, b + layer.units, s_.iteration,
                        s_.learning_rate, threads, 0);
    }
  }

  ShardedUpdateShared& s_;
  int rank_;
  Backend& backend_;
  PhaseTimes& times_;
  std::vector<bool> done_;
  int64_t step_ = 0;
};

}  // namespace

ShardedUpdateShared::ShardedUpdateShared(int n, std::vector<Bucket> b, DeviceBarrier* barrier_)
    : replicas(n),
      params(n),
      grads(n),
      buckets(std::move(b)),
      bucket_ready(new std::atomic<int64_t>[buckets.size()]),
      barrier(barrier_) {
  for (size_t i = 0; i < buckets.size(); ++i) bucket_ready[i].store(0);
}

std::unique_ptr<GradReducer> make_allreduce_reducer(Communicator& comm,
                                                    const std::vector<Bucket>& buckets,
                                                    float* grads, PhaseTimes& times) {
  return std::make_unique<AllreduceReducer>(comm, buckets, grads, times);
}

std::unique_ptr<GradReducer> make_sharded_update_reducer(ShardedUpdateShared& shared, int rank,
                                                         PhaseTimes& times) {
  return std::make_unique<ShardedUpdateReducer>(shared, rank, times);
}

std::unique_ptr<GradReducer> make_weight_grad_shard_reducer(ShardedUpdateShared& shared, int rank,
                                                            Backend& backend, PhaseTimes& times) {
  return std::make_unique<WeightGradShardReducer>(shared, rank, backend, times);
}

void ShardedUpdateShared::plan_weight_grad_sharding(const Graph& graph) {
  layers.clear();
  const auto& entries = graph.layers();
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->param_count == 0) continue;
    const ParamSpec& kernel = graph.params()[it->params.front()].spec;
    if (it->layer->type() != "Dense" || kernel.shape.size() != 2 || it->uses != 1) {
      throw Error("weight-gradient sharding needs Dense layers each used once; layer '" +
                  it->layer->name + "' is not");
    }
    Operands o;
    o.offset = it->param_offset;
    o.in = kernel.shape[0];
    o.units = kernel.shape[1];
    o.bias = it->params.size() > 1;
    o.x.assign(replicas, nullptr);
    o.dz.assign(replicas, nullptr);
    o.rows.assign(replicas, 0);
    layers.push_back(std::move(o));
  }
  layer_posted.reset(new std::atomic<int64_t>[layers.size()]);
  for (size_t i = 0; i < layers.size(); ++i) layer_posted[i].store(0);
}

}  // namespace tandem::detail
