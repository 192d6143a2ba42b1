// GradReducer: decides which gradients are reduced when. Backward tells it (through
// GradReadyListener) as each layer's gradients become final; it starts reducing every
// bucket as soon as the bucket is complete, and finalize() finishes the rest before the
// update. With one replica it does nothing.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "model/executor.h"
#include "optim/optimizer_kernel.h"
#include "parallel/buckets.h"
#include "parallel/communicator.h"
#include "parallel/device_group.h"
#include "profile/phase_timer.h"

namespace tandem::detail {

class GradReducer : public GradReadyListener {
 public:
  // Called by each replica before its backward.
  virtual void begin_step() = 0;
  // Returns once every bucket is reduced (and, for reducers that own the update, applied).
  virtual void finalize() = 0;
  // Whether finalize() also applied the optimizer update to this replica's parameters.
  virtual bool applies_update() const = 0;
  // Non-null when Dense layers should hand over their weight-gradient operands.
  virtual WeightGradSink* weight_grad_sink() { return nullptr; }
  // Reducers that send buckets across processes: posts every bucket final on all local
  // replicas, so a collective posted next (a synchronized statistic) follows the same
  // buckets on every rank. Each local replica calls it at the same point of its step.
  virtual void flush() {}
};

// The end of a step for reducers that share work between replicas: calls process_ready()
// (which does whatever became ready and says whether all is done) until it returns true,
// then meets the other replicas at the barrier. Idle is the waiting only: work done
// meanwhile books its own phase. On the timeline the whole end of step is one `idle` event
// named trace_name, with the work inside it nested.
template <class ProcessReady>
void finish_step(DeviceBarrier& barrier, PhaseTimes& times, const char* trace_name,
                 ProcessReady&& process_ready) {
  const double booked_before = times.total();
  const auto start = Clock::now();
  for (int spins = 0; !process_ready(); ++spins) {
    if (barrier.aborted()) throw AbortedError{};
    if (spins > 64) std::this_thread::yield();
  }
  barrier.wait();
  times[Phase::idle] += seconds_since(start) - (times.total() - booked_before);
  if (tracing()) trace_scope(trace_name, "idle", start);
}

// All-reduces each complete bucket through a Communicator (asynchronously), then leaves
// the update to the caller: every replica applies the same update to its own copy.
std::unique_ptr<GradReducer> make_allreduce_reducer(Communicator& comm,
                                                    const std::vector<Bucket>& buckets,
                                                    float* grads, PhaseTimes& times);

// Replicas in one process: state shared by the replicas' ShardedUpdate reducers.
struct ShardedUpdateShared {
  int replicas = 1;
  std::vector<float*> params;  // per replica
  std::vector<float*> grads;   // per replica
  std::vector<float*> state;   // optimizer slots, one shared copy (shards are disjoint)
  const OptimizerKernel* kernel = nullptr;
  int64_t iteration = 0;  // set before each step
  double learning_rate = 0;
  std::vector<Bucket> buckets;
  std::unique_ptr<std::atomic<int64_t>[]> bucket_ready;  // replicas done, over all steps
  DeviceBarrier* barrier = nullptr;

  // Weight-gradient sharding: per layer with parameters (backward order), each replica's
  // operands for the current step.
  struct Operands {
    int64_t offset = 0, in = 0, units = 0;
    bool bias = false;
    std::vector<const float*> x, dz;  // per replica
    std::vector<int64_t> rows;        // per replica
  };
  std::vector<Operands> layers;
  std::unique_ptr<std::atomic<int64_t>[]> layer_posted;  // replicas posted, over all steps
  // Fills `layers` from the graph (every layer with parameters is a Dense: kernel, bias?).
  void plan_weight_grad_sharding(const Graph& graph);

  ShardedUpdateShared(int replicas, std::vector<Bucket> buckets, DeviceBarrier* barrier);
};

// For replica `rank` of the shared group: as soon as a bucket is final on every replica,
// this replica sums its 1/N shard of it across all replicas (pairwise tree, fixed order),
// applies the optimizer to that shard, and writes the new parameters into every replica.
// One pass over memory instead of all-reduce + N full updates. finalize() ends with a
// barrier, so every replica sees all new parameters before the next forward.
std::unique_ptr<GradReducer> make_sharded_update_reducer(ShardedUpdateShared& shared, int rank,
                                                         PhaseTimes& times);

// For replicas in one process sharing one parameter buffer: nothing is all-reduced. Each
// Dense layer hands over its operands (x, dz); once every replica has, replica `rank`
// computes rows [i0, i1) of the layer's kernel gradient over the whole global batch
// (sum over replicas of x_q[:, i0:i1]^T . dz_q, in replica order) and applies the optimizer
// to them (replica 0 also does the bias). Requires shared.plan_weight_grad_sharding().
std::unique_ptr<GradReducer> make_weight_grad_shard_reducer(ShardedUpdateShared& shared, int rank,
                                                            Backend& backend, PhaseTimes& times);

// Several processes, each with `replicas` local devices sharing one parameter buffer.
struct HierarchicalShared {
  int replicas = 1;
  std::vector<float*> grads;  // per local replica; replica 0's receives the sums
  float* params = nullptr;    // shared by the local replicas
  int64_t param_count = 0;
  std::vector<float*> state;  // optimizer slots
  const OptimizerKernel* kernel = nullptr;
  int64_t iteration = 0;  // set before each step
  double learning_rate = 0;
  std::vector<Bucket> buckets;
  // Local replicas done with each bucket, and done summing their shard of it (over all
  // steps).
  std::unique_ptr<std::atomic<int64_t>[]> bucket_ready, bucket_summed;
  Communicator* world = nullptr;  // across processes; used by replica 0's thread only
  DeviceBarrier* barrier = nullptr;

  HierarchicalShared(int replicas, std::vector<Bucket> buckets, Communicator* world,
                     DeviceBarrier* barrier);
};

// For local replica `rank`: sums its 1/L shard of each complete bucket over the local
// replicas; replica 0 then all-reduces the bucket across processes (non-blocking, in
// bucket order); finalize() waits for the last one, and each local replica updates its
// 1/L of the parameters (threads: the device's threads).
std::unique_ptr<GradReducer> make_hierarchical_reducer(HierarchicalShared& shared, int rank,
                                                       int threads, PhaseTimes& times);

}  // namespace tandem::detail
