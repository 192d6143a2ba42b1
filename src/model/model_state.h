// ModelState: everything behind a Model handle. Internal.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "model/graph.h"
#include "nn/loss.h"
#include "optim/optimizer_kernel.h"
#include "tandem/model.h"

namespace tandem::detail {

struct Compiled {
  Optimizer optimizer;
  std::unique_ptr<OptimizerKernel> kernel;
  Loss loss{LossKind::categorical_crossentropy};
  bool accuracy = false;
  std::string accuracy_name = "accuracy";  // the log key: the metric as the user spelt it
  AccuracyKind accuracy_kind = AccuracyKind::categorical;
  std::vector<std::string> metrics;
};

struct ModelState {
  std::string name;
  Node input, output;
  std::unique_ptr<Graph> graph;
  uint64_t init_seed = 0;

  // The model's weights: one flat buffer in Graph::params() layout.
  AlignedBuffer params;
  // Optimizer accumulators, one flat buffer per slot, and the update count.
  std::vector<AlignedBuffer> optimizer_state;
  int64_t iterations = 0;
  double learning_rate = 0;

  std::optional<Compiled> compiled;
  RunTimes run_times;
  // Fits running on this model (a callback may start another): compile() would free what
  // they use, so it refuses while this is not zero.
  int fits_running = 0;
  // What train_on_batch keeps between calls (its one-device strategy: buffers and oneDNN
  // primitives), owned here and known only to the train layer that made it. compile()
  // drops it, since it points at the optimizer state compile() replaces.
  std::shared_ptr<void> train_on_batch_cache;

  // Rows of the last axis: the classes a loss and accuracy see.
  int64_t classes() const { return graph->output().shape.back(); }
  const Compiled& require_compiled(const char* what) const;
  // Draws every parameter from its initializer (seeded by init_seed and the parameter's index).
  void initialize_params();
  // Allocates (zeroed) accumulators for the compiled optimizer.
  void reset_optimizer_state();
};

}  // namespace tandem::detail
