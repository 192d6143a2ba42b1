#include "model/executor.h"

#include <algorithm>

#include "tandem/error.h"

namespace tandem::detail {

Executor::Executor(const Graph& graph, Backend& backend) : graph_(graph), backend_(backend) {
  const size_t n = graph.nodes().size();
  activations_.resize(n);
  grads_.resize(n);
  scratch_.resize(n);
  input_ptrs_.resize(n);
  grad_targets_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    input_ptrs_[i].resize(graph.nodes()[i].inputs.size());
    grad_targets_[i].resize(graph.nodes()[i].inputs.size());
  }
  for (size_t i = 1; i < n; ++i) {
    const GraphNode& node = graph.nodes()[i];
    for (const bool backward : {false, true}) {
      sum_size_ = std::max(sum_size_, node.layer->replica_sum_size(node.input_shapes, backward));
    }
  }
  sum_zeros_.resize(sum_size_);
  layer_uses_left_.resize(graph.layers().size());
  times_.layer_forward.assign(n, 0.0);
  times_.layer_backward.assign(n, 0.0);
}

void Executor::reserve(int64_t max_batch) {
  if (max_batch <= max_batch_) return;
  max_batch_ = max_batch;
  const auto& nodes = graph_.nodes();
  for (size_t i = 1; i < nodes.size(); ++i) {
    activations_[i].resize(max_batch * nodes[i].size);
    grads_[i].resize(max_batch * nodes[i].size);
    scratch_[i].resize(nodes[i].layer->scratch_floats(nodes[i].input_shapes, max_batch));
  }
}

ForwardArgs Executor::forward_args(int i, const float* params) {
  const GraphNode& node = graph_.nodes()[i];
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const int in = node.inputs[k];
    input_ptrs_[i][k] = in == 0 ? input_ : activations_[in].data();
  }
  return ForwardArgs{backend_,
                     batch_,
                     input_ptrs_[i],
                     node.input_sizes,
                     node.input_shapes,
                     activations_[i].data(),
                     node.size,
                     node.shape,
                     params + graph_.layers()[node.layer_index].param_offset,
                     scratch_[i].data(),
                     training_,
                     Rng::derive(seed_, static_cast<uint64_t>(i)),
                     first_sample_,
                     replica_sum_};
}

const float* Executor::forward(const float* x, int64_t batch, const float* params, bool training,
                               uint64_t seed, int64_t first_sample) {
  if (batch <= 0 || batch > max_batch_) {
    throw ConfigError("Executor: batch of " + std::to_string(batch) + " outside [1, " +
                      std::to_string(max_batch_) + "]; reserve() first");
  }
  batch_ = batch;
  training_ = training;
  seed_ = seed;
  first_sample_ = first_sample;
  input_ = x;
  const int n = static_cast<int>(graph_.nodes().size());
  for (int i = 1; i < n; ++i) {
    ScopedTimer timer(times_.layer_forward[i], graph_.nodes()[i].layer->name.c_str(), "forward");
    graph_.nodes()[i].layer->forward(forward_args(i, params));
  }
  return n == 1 ? input_ : activations_[n - 1].data();
}

void Executor::backward(const float* params, float* grads, bool grad_is_preactivation,
                        float sample_weight, GradReadyListener* listener,
                        WeightGradSink* weight_grads) {
  const auto& nodes = graph_.nodes();
  const auto& layers = graph_.layers();
  const int n = static_cast<int>(nodes.size());
  for (size_t l = 0; l < layers.size(); ++l) layer_uses_left_[l] = layers[l].uses;
  // written[i]: node i's gradient buffer already holds a contribution this pass.
  // Kept in the grad target flags: the first consumer (in reverse order) overwrites.
  std::vector<bool>& written = written_;
  written.assign(n, false);
  written[n - 1] = true;
  for (int i = n - 1; i >= 1; --i) {
    const GraphNode& node = nodes[i];
    if (!written[i]) continue;  // output does not depend on this node (dead branch)
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int in = node.inputs[k];
      GradTarget& t = grad_targets_[i][k];
      t.data = in == 0 ? nullptr : grads_[in].data();
      t.accumulate = in != 0 && written[in];
      if (in != 0) written[in] = true;
    }
    const LayerEntry& layer = layers[node.layer_index];
    const bool accumulate_params = layer_uses_left_[node.layer_index] < layer.uses;
    ForwardArgs fwd = forward_args(i, params);
    {
      ScopedTimer timer(times_.layer_backward[i], node.layer->name.c_str(), "backward");
      node.layer->backward(BackwardArgs{fwd, grads_[i].data(), grad_is_preactivation && i == n - 1,
                                        grad_targets_[i], grads + layer.param_offset,
                                        accumulate_params, weight_grads, layer.param_offset,
                                        sample_weight});
    }
    if (--layer_uses_left_[node.layer_index] == 0 && layer.param_count > 0 && listener) {
      listener->grads_ready(layer.param_offset, layer.param_count);
    }
  }
}

void Executor::sum_zeros(const GraphNode& node, bool backward) {
  const int64_t size = node.layer->replica_sum_size(node.input_shapes, backward);
  if (size == 0 || replica_sum_ == nullptr) return;
  std::fill(sum_zeros_.begin(), sum_zeros_.begin() + size, 0.0);
  replica_sum_->sum(sum_zeros_.data(), size);
}

void Executor::forward_without_rows() {
  const auto& nodes = graph_.nodes();
  for (size_t i = 1; i < nodes.size(); ++i) sum_zeros(nodes[i], false);
}

void Executor::backward_without_rows(GradReadyListener* listener) {
  const auto& nodes = graph_.nodes();
  const auto& layers = graph_.layers();
  const int n = static_cast<int>(nodes.size());
  // backward()'s walk, computing nothing.
  for (size_t l = 0; l < layers.size(); ++l) layer_uses_left_[l] = layers[l].uses;
  written_.assign(n, false);
  written_[n - 1] = true;
  for (int i = n - 1; i >= 1; --i) {
    const GraphNode& node = nodes[i];
    if (!written_[i]) continue;
    for (const int in : node.inputs) {
      if (in != 0) written_[in] = true;
    }
    sum_zeros(node, true);
    const LayerEntry& layer = layers[node.layer_index];
    if (--layer_uses_left_[node.layer_index] == 0 && layer.param_count > 0 && listener) {
      listener->grads_ready(layer.param_offset, layer.param_count);
    }
  }
}

}  // namespace tandem::detail
