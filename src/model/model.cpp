// Model construction, compile, weights and Sequential. fit/evaluate/predict live in
// fit.cpp and inference.cpp; summary.cpp and serialize.cpp hold the rest.
#include "tandem/model.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <optional>

#include "model/model_state.h"
#include "nn/initializer.h"
#include "optim/moving_averages.h"
#include "tandem/config.h"
#include "tandem/error.h"

namespace tandem {

Model& Callback::model() const {
  if (!model_) throw ConfigError("callback used outside fit(): no model attached");
  return *model_;
}

namespace detail {

const Compiled& ModelState::require_compiled(const char* what) const {
  if (!compiled) {
    throw ConfigError(std::string("model '") + name + "' must be compiled before " + what +
                      "; call compile(optimizer, loss, metrics)");
  }
  return *compiled;
}

void ModelState::initialize_params() {
  // Parameters, their gradients and an optimizer slot or two must fit in memory: a layer of a
  // billion units is an error naming the model, not a bare bad_alloc.
  const int64_t floats = graph->param_buffer_size();
  const double bytes_needed = 3.0 * static_cast<double>(floats) * sizeof(float);
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  if (floats < 0 || (memory > 0 && bytes_needed > memory)) {
    const auto& entries = graph->params();
    const auto largest = std::max_element(entries.begin(), entries.end(), [](auto& a, auto& b) {
      return shape_size(a.spec.shape) < shape_size(b.spec.shape);
    });
    throw ConfigError("model '" + name + "' has " + std::to_string(floats) +
                      " parameters: with their gradients and optimizer state about " +
                      std::to_string(static_cast<int64_t>(bytes_needed / 1e9)) +
                      " GB, more than this machine's " +
                      std::to_string(static_cast<int64_t>(memory / 1e9)) + " GB" +
                      (largest != entries.end()
                           ? " (the largest, of layer '" +
                                 graph->layers()[largest->layer_index].layer->name + "', has " +
                                 std::to_string(shape_size(largest->spec.shape)) + ")"
                           : std::string()));
  }
  params.resize(floats);
  const auto& entries = graph->params();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParamEntry& e = entries[i];
    const uint64_t seed =
        e.spec.initializer.seed ? *e.spec.initializer.seed : Rng::derive(init_seed, i);
    Rng rng(seed);
    const auto& layer = graph->layers()[e.layer_index].layer;
    initialize(e.spec, params.data() + e.offset, rng, "layer '" + layer->name + "'");
  }
}

void ModelState::reset_optimizer_state() {
  const int slots = compiled ? compiled->kernel->state_slots() : 0;
  optimizer_state.clear();
  optimizer_state.resize(slots);
  for (auto& s : optimizer_state) s.resize(graph->param_buffer_size());
  iterations = 0;
}

}  // namespace detail

Model::Model() : state_(std::make_unique<detail::ModelState>()) {}

Model::Model(const Node& inputs, const Node& outputs, const std::string& name) : Model() {
  build(inputs, outputs, name);
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

void Model::build(const Node& inputs, const Node& outputs, const std::string& name,
                  std::optional<uint64_t> init_seed) {
  auto& s = *state_;
  s.name = name;
  s.input = inputs;
  s.output = outputs;
  s.graph = std::make_unique<detail::Graph>(inputs, outputs);
  s.init_seed = init_seed ? *init_seed : next_seed();
  s.initialize_params();
}

void Model::compile(const Optimizer& optimizer, const std::string& loss,
                    const std::vector<std::string>& metrics) {
  ensure_built();
  auto& s = *state_;
  if (s.fits_running > 0) {
    throw ConfigError("compile: model '" + s.name +
                      "' is being trained (fit is running); compile before or after fit");
  }
  detail::Compiled c;
  c.optimizer = optimizer;
  std::vector<detail::MovingAverageRange> moving;
  for (const detail::ParamEntry& e : s.graph->params()) {
    if (e.spec.trainable) continue;
    const detail::LayerEntry& layer = s.graph->layers()[e.layer_index];
    if (layer.uses > 1) {
      // Its statistics from each call would be summed into one moving average.
      throw ConfigError("compile: layer " + layer.layer->type() + " '" + layer.layer->name +
                        "' is called " + std::to_string(layer.uses) +
                        " times; a layer with moving statistics may be called only once");
    }
    moving.push_back({e.offset, e.offset + e.size, e.spec.momentum});
  }
  c.kernel = detail::with_moving_averages(detail::make_optimizer_kernel(optimizer), moving);
  c.loss = detail::Loss(detail::parse_loss(loss));
  // Keras's accuracies: "accuracy" and "acc" pick the one that fits the shapes, as Keras 3
  // does; the others are what they name. The logs use the name as the user wrote it
  // ("acc" -> "acc", "val_acc").
  static const std::map<std::string, std::optional<detail::AccuracyKind>> kAccuracy = {
      {"accuracy", std::nullopt},
      {"acc", std::nullopt},
      {"categorical_accuracy", detail::AccuracyKind::categorical},
      {"sparse_categorical_accuracy", detail::AccuracyKind::sparse_categorical},
      {"binary_accuracy", detail::AccuracyKind::binary}};
  c.accuracy_kind = detail::accuracy_for(c.loss.kind(), s.classes());
  for (const std::string& m : metrics) {
    // Keras matches "accuracy" and "acc" in any case ("Accuracy"); the others exactly.
    std::string lower = m;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto known = kAccuracy.find(lower == "accuracy" || lower == "acc" ? lower : m);
    if (known == kAccuracy.end()) {
      throw ConfigError("unknown metric '" + m +
                        "' (known: accuracy, acc, categorical_accuracy, "
                        "sparse_categorical_accuracy, binary_accuracy)");
    }
    if (c.accuracy) throw ConfigError("metric '" + m + "': accuracy is already a metric");
    c.accuracy = true;
    c.accuracy_name = m;
    if (known->second) c.accuracy_kind = *known->second;
  }
  // Sparse labels (class indices) or one value per output: the accuracy must read the same.
  const bool sparse_labels = c.loss.kind() == detail::LossKind::sparse_categorical_crossentropy;
  const bool sparse_metric = c.accuracy_kind == detail::AccuracyKind::sparse_categorical;
  if (c.accuracy && sparse_labels != sparse_metric && s.classes() > 1) {
    throw ConfigError("metric '" + c.accuracy_name + "' " +
                      (sparse_metric ? "reads class indices as labels, but loss " + loss +
                                           " takes one label value per output"
                                     : "compares each output with its own label, but loss " + loss +
                                           " takes class indices") +
                      ": use metrics=['accuracy'], which picks the accuracy that fits");
  }
  c.metrics = metrics;
  s.train_on_batch_cache.reset();  // it points at the kernel and state replaced here
  s.compiled = std::move(c);
  s.learning_rate = optimizer.learning_rate;
  s.reset_optimizer_state();
}

void Model::compile(const std::string& optimizer, const std::string& loss,
                    const std::vector<std::string>& metrics) {
  compile(optimizer_from_name(optimizer), loss, metrics);
}

int64_t Model::count_params() const {
  ensure_built();
  return state_->graph->param_count();
}

const std::string& Model::name() const {
  ensure_built();
  return state_->name;
}

Shape Model::input_shape() const {
  ensure_built();
  return state_->graph->input().shape;
}

Shape Model::output_shape() const {
  ensure_built();
  return state_->graph->output().shape;
}

std::vector<Tensor> Model::get_weights() const {
  ensure_built();
  std::vector<Tensor> out;
  for (const auto& e : state_->graph->params()) {
    const float* p = state_->params.data() + e.offset;
    out.emplace_back(e.spec.shape, std::vector<float>(p, p + e.size));
  }
  return out;
}

void Model::set_weights(const std::vector<Tensor>& weights) {
  ensure_built();
  const auto& entries = state_->graph->params();
  if (weights.size() != entries.size()) {
    throw ShapeError("set_weights: model '" + state_->name + "' has " +
                     std::to_string(entries.size()) + " weight arrays, got " +
                     std::to_string(weights.size()));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (weights[i].shape() != e.spec.shape) {
      throw ShapeError("set_weights: layer '" + state_->graph->layers()[e.layer_index].layer->name +
                       "' " + e.spec.name + " has shape " + shape_to_string(e.spec.shape) +
                       ", got " + shape_to_string(weights[i].shape()));
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    std::copy(weights[i].data(), weights[i].data() + entries[i].size,
              state_->params.data() + entries[i].offset);
  }
}

std::string Model::loss() const {
  return state_->compiled ? detail::loss_name(state_->compiled->loss.kind()) : "";
}

std::optional<Optimizer> Model::optimizer() const {
  if (!state_->compiled) return std::nullopt;
  return state_->compiled->optimizer;
}

std::vector<std::string> Model::metrics() const {
  return state_->compiled ? state_->compiled->metrics : std::vector<std::string>{};
}

double Model::learning_rate() const {
  return state_->learning_rate;
}

void Model::set_learning_rate(double learning_rate) {
  if (!(learning_rate >= 0)) {
    throw ConfigError("set_learning_rate: must be >= 0, got " + std::to_string(learning_rate));
  }
  state_->learning_rate = learning_rate;
}

const RunTimes& Model::run_times() const {
  return state_->run_times;
}

void Model::summary() const {
  summary(std::cout);
}

Sequential::Sequential(const std::string& name) : seq_name_(name), init_seed_(next_seed()) {}

Sequential::Sequential(const Shape& input_shape, const std::vector<Layer>& layers,
                       const std::string& name)
    : input_(Input(input_shape)), pending_(layers), seq_name_(name), init_seed_(next_seed()) {}

void Sequential::add(const Layer& layer) {
  if (state().graph) throw ConfigError("Sequential: cannot add layers after the model is built");
  pending_.push_back(layer);
}

void Sequential::add(const Node& input) {
  if (input_ || !pending_.empty()) {
    throw ConfigError("Sequential: Input(...) must be the first and only input added");
  }
  input_ = input;
}

void Sequential::ensure_built() const {
  if (state().graph) return;
  if (!input_) {
    throw ConfigError("Sequential '" + seq_name_ +
                      "': no input shape; add(Input({...})) first or pass input_shape");
  }
  Node x = *input_;
  for (const Layer& layer : pending_) x = layer(x);
  // Building fills the lazily-made state; the model's observable value does not change.
  const_cast<Sequential*>(this)->build(*input_, x, seq_name_, init_seed_);
}

}  // namespace tandem
