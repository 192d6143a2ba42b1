// The hierarchical reducer (several processes, each with one or more local devices): as a
// bucket becomes final on every local replica, each replica sums its 1/L shard of it over
// the local replicas into replica 0's buffer (shared memory, fixed pairwise tree); once
// the whole bucket is summed, replica 0 posts one non-blocking all-reduce of it across
// processes, so communication overlaps the rest of backward. finalize() waits for the last
// bucket, then each local replica applies the update to its 1/L of the shared parameters.
#include <algorithm>

#include "parallel/grad_reducer.h"
#include "parallel/shared_memory_communicator.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

class HierarchicalReducer final : public GradReducer {
 public:
  HierarchicalReducer(HierarchicalShared& shared, int rank, int threads, PhaseTimes& times)
      : s_(shared),
        rank_(rank),
        threads_(threads),
        times_(times),
        index_(s_.buckets),
        layers_left_(s_.buckets.size()),
        summed_(s_.buckets.size()),
        requests_(s_.buckets.size()),
        sources_(s_.replicas) {}

  void begin_step() override {
    for (size_t b = 0; b < s_.buckets.size(); ++b) {
      layers_left_[b] = s_.buckets[b].layers;
      summed_[b] = false;
    }
    next_to_post_ = 0;
    ++step_;
  }

  void grads_ready(int64_t offset, int64_t) override {
    const int b = index_.find(offset);
    if (--layers_left_[b] == 0) s_.bucket_ready[b].fetch_add(1, std::memory_order_acq_rel);
    progress();
  }

  void finalize() override {
    // Replica 0's buffer holds the global sum once every bucket is summed, posted and done.
    finish_step(*s_.barrier, times_, "finish step (wait for all-reduce)", [&] {
      if (!progress()) return false;
      if (rank_ == 0) {
        ScopedTimer t(times_, Phase::allreduce);
        for (size_t b = 0; b < s_.buckets.size(); ++b) s_.world->wait(requests_[b]);
      }
      return true;
    });
    {
      ScopedTimer t(times_, Phase::optimizer);
      const auto [begin, end] = aligned_share(s_.param_count, s_.replicas, rank_);
      if (begin < end) {
        s_.kernel->update(s_.params, s_.grads[0], s_.state.data(), begin, end, s_.iteration,
                          s_.learning_rate, threads_, 0);
      }
    }
    ScopedTimer t(times_, Phase::idle);
    s_.barrier->wait();  // every shard updated before anyone's next forward
  }

  bool applies_update() const override { return true; }
  void flush() override { progress(); }

 private:
  // Sums my shard of every bucket final on all local replicas; replica 0 posts every fully
  // summed bucket in order (all ranks must post in the same order) and drives MPI. True
  // when everything is summed and posted.
  bool progress() {
    bool all = true;
    const int64_t needed = step_ * s_.replicas;
    for (size_t b = 0; b < s_.buckets.size(); ++b) {
      if (summed_[b]) continue;
      if (s_.bucket_ready[b].load(std::memory_order_acquire) < needed) {
        all = false;
        continue;
      }
      if (s_.replicas > 1) {
        ScopedTimer t(times_, Phase::allreduce);
        const Bucket& k = s_.buckets[b];
        const auto [begin, end] = aligned_share(k.count, s_.replicas, rank_);
        for (int r = 0; r < s_.replicas; ++r) sources_[r] = s_.grads[r] + k.offset;
        if (begin < end) tree_sum(sources_, s_.grads[0] + k.offset, begin, end);
      }
      s_.bucket_summed[b].fetch_add(1, std::memory_order_acq_rel);
      summed_[b] = true;
    }
    if (rank_ != 0) return all;
    ScopedTimer t(times_, Phase::allreduce);
    while (next_to_post_ < s_.buckets.size() &&
           s_.bucket_summed[next_to_post_].load(std::memory_order_acquire) >= needed) {
      const Bucket& k = s_.buckets[next_to_post_];
      requests_[next_to_post_] = s_.world->allreduce_async(s_.grads[0] + k.offset, k.count);
      ++next_to_post_;
    }
    for (size_t b = 0; b < next_to_post_; ++b) s_.world->test(requests_[b]);
    return all && next_to_post_ == s_.buckets.size();
  }

  HierarchicalShared& s_;
  int rank_;
  int threads_;
  PhaseTimes& times_;
  BucketIndex index_;
  std::vector<int> layers_left_;
  std::vector<bool> summed_;
  std::vector<Communicator::Request> requests_;
  std::vector<float*> sources_;
  size_t next_to_post_ = 0;
  int64_t step_ = 0;
};

}  // namespace

HierarchicalShared::HierarchicalShared(int n, std::vector<Bucket> b, Communicator* world_,
                                       DeviceBarrier* barrier_)
    : replicas(n),
      grads(n),
      buckets(std::move(b)),
      bucket_ready(new std::atomic<int64_t>[buckets.size()]),
      bucket_summed(new std::atomic<int64_t>[buckets.size()]),
      world(world_),
      barrier(barrier_) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    bucket_ready[i].store(0);
    bucket_summed[i].store(0);
  }
}

std::unique_ptr<GradReducer> make_hierarchical_reducer(HierarchicalShared& shared, int rank,
                                                       int threads, PhaseTimes& times) {
  return std::make_unique<HierarchicalReducer>(shared, rank, threads, times);
}

}  // namespace tandem::detail
