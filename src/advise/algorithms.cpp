#include "advise/algorithms.h"

#include "advise/cpu_algorithms.h"
#include "advise/link_algorithms.h"
#include "advise/rank_algorithms.h"
#include "tandem/error.h"

namespace tandem::detail {

const std::vector<AlgorithmModel>& algorithm_models() {
  static const std::vector<AlgorithmModel> models = {
      {Algorithm::single_device, "single device", "make_single_device_strategy"},
      {Algorithm::weight_grad_shard, "weight-gradient sharding",
       "make_mirrored_strategy, make_weight_grad_shard_reducer"},
      {Algorithm::sharded_buckets, "sharded buckets",
       "make_mirrored_strategy, make_sharded_update_reducer"},
      {Algorithm::bucket_allreduce, "bucketed all-reduce",
       "make_mirrored_strategy, make_allreduce_reducer, SharedMemoryCommunicator"},
      {Algorithm::deterministic_shards, "deterministic micro-shards",
       "make_mirrored_strategy (deterministic_gradients), make_sharded_update_reducer, "
       "make_allreduce_reducer"},
      {Algorithm::host_copies, "tandem host", "make_host_strategy"},
      {Algorithm::keras_multi_gpu_model, "Keras multi_gpu_model", "keras.utils.multi_gpu_model"},
      {Algorithm::ring_allreduce, "ring all-reduce over links", "NCCL / DDP ring all-reduce"},
      {Algorithm::hierarchical, "MPI hierarchical",
       "make_mirrored_strategy, make_hierarchical_reducer, MpiGradientComm (bf16, "
       "deterministic)"},
  };
  return models;
}

const char* name_of(Algorithm a) {
  for (const auto& m : algorithm_models()) {
    if (m.algorithm == a) return m.name;
  }
  return "unknown";
}

Algorithm algorithm_for(const HardwareProfile& hw, const Scenario& s) {
  const bool cpu_devices = hw.device.threads > 0;
  if (s.ranks > 1) return Algorithm::hierarchical;
  if (s.strategy == StrategyKind::host) {
    if (s.devices == 1) return Algorithm::single_device;  // multi_gpu_model is not used then
    return cpu_devices ? Algorithm::host_copies : Algorithm::keras_multi_gpu_model;
  }
  if (s.deterministic && cpu_devices) return Algorithm::deterministic_shards;
  if (s.devices == 1) return Algorithm::single_device;
  if (!cpu_devices) return Algorithm::ring_allreduce;
  if (s.reducer == ReducerKind::allreduce) return Algorithm::bucket_allreduce;
  if (s.shared_parameters && s.shard_weight_gradients && s.model.dense_used_once) {
    return Algorithm::weight_grad_shard;
  }
  return Algorithm::sharded_buckets;
}

Prediction simulate(const HardwareProfile& hw, const Scenario& s, Algorithm a) {
  switch (a) {
    case Algorithm::single_device:
      return single_device(hw, s);
    case Algorithm::weight_grad_shard:
      return weight_grad_shard(hw, s);
    case Algorithm::sharded_buckets:
      return sharded_buckets(hw, s);
    case Algorithm::bucket_allreduce:
      return bucket_allreduce(hw, s);
    case Algorithm::deterministic_shards:
      return deterministic_shards(hw, s);
    case Algorithm::host_copies:
      return host_copies(hw, s);
    case Algorithm::keras_multi_gpu_model:
      return keras_multi_gpu_model(hw, s);
    case Algorithm::ring_allreduce:
      return ring_allreduce(hw, s);
    case Algorithm::hierarchical:
      return hierarchical(hw, s);
  }
  throw Error("cost model: no simulation for this algorithm");
}

}  // namespace tandem::detail
