// The algorithms the cost model simulates, one function each, each mirroring the code that
// runs it (named in `mirrors`). A scenario (strategy, reducer, deterministic, ranks, and the
// kind of device) selects one as src/parallel selects the code: a CPU device of a profile
// from `tandem calibrate` (device.threads > 0) runs tandem's in-process algorithms, whose
// reductions take the device's own cores; a device without threads (a GPU profile) moves
// bytes over links, as NCCL rings and Keras's multi_gpu_model did. The simulations live in
// cpu_algorithms.h (CPU devices in one process), link_algorithms.h (devices over links) and
// rank_algorithms.h (MPI ranks), built from the costs in step_costs.h; this file chooses
// among them.
#pragma once

#include <vector>

#include "advise/cost_model.h"

namespace tandem::detail {

enum class Algorithm {
  single_device,          // one replica, its own update
  weight_grad_shard,      // mirrored, sharded reducer, Dense stacks: no gradient summed
  sharded_buckets,        // mirrored, sharded reducer: sum, update and share 1/N of buckets
  bucket_allreduce,       // mirrored, all-reduce reducer: buckets all-reduced, N full updates
  deterministic_shards,   // mirrored, deterministic: fixed micro-shards, then its reducer's buckets
  host_copies,            // tandem's host strategy: whole copies, sum and update on the host
  keras_multi_gpu_model,  // Keras's multi_gpu_model on GPUs (TensorFlow's dataflow overlap)
  ring_allreduce,         // replicas on GPUs: buckets all-reduced in a ring over links
  hierarchical,           // MPI ranks: local sharded sums, one all-reduce per bucket across
};

struct AlgorithmModel {
  Algorithm algorithm;
  const char* name;
  // The code it mirrors: the factories and functions in src/parallel (a test checks that
  // every strategy and reducer factory there is named by one model).
  const char* mirrors;
};

const std::vector<AlgorithmModel>& algorithm_models();
const char* name_of(Algorithm algorithm);

// Which algorithm runs the scenario on the profile's devices (as make_strategy and the
// Mirrored constructor choose).
Algorithm algorithm_for(const HardwareProfile& hardware, const Scenario& scenario);

// One step of the scenario under `algorithm`: step_seconds, phases and busy times.
Prediction simulate(const HardwareProfile& hardware, const Scenario& scenario, Algorithm algorithm);

}  // namespace tandem::detail
