// Model: a graph of layers with Keras's compile / fit / evaluate / predict / summary /
// save / load. Sequential builds the same graph from a list of layers.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/array.h"
#include "tandem/callbacks.h"
#include "tandem/layers.h"
#include "tandem/optimizers.h"
#include "tandem/samples.h"

namespace tandem {

struct History {
  std::vector<int> epoch;                              // 0-based, like Keras
  std::map<std::string, std::vector<double>> history;  // "loss", "accuracy", "val_loss", ...
};

struct FitOptions {
  int64_t batch_size = 32;
  int epochs = 1;
  // 0 silent, 1 progress bar on a terminal (one line per epoch otherwise), 2 one line per epoch.
  int verbose = 1;
  bool shuffle = true;
  std::optional<uint64_t> seed;   // shuffling and dropout; default: the global seed
  double validation_split = 0.0;  // the last fraction of x, y, taken before shuffling
  std::optional<std::pair<Samples, Samples>> validation_data;
  CallbackList callbacks;
  int initial_epoch = 0;
  // Data parallelism on CPU devices (groups of cores, one thread each by default):
  int devices = 1;
  std::string strategy = "mirrored";  // mirrored | host (multi_gpu_model's design)
  int threads_per_device = 0;         // <= 0: the available cores shared out
  // Weights bitwise identical for 1, 2 and 4 devices and any number of MPI ranks (fixed
  // micro-shards, fixed sum order, one thread per device: oneDNN's results can depend on its
  // thread count; threads_per_device > 1 is a ConfigError).
  bool deterministic = false;
  int64_t bucket_bytes = 4 << 20;  // gradient bucket size for the all-reduce
  // mirrored: "sharded" (each device reduces and updates 1/N of the parameters) or
  // "allreduce" (buckets all-reduced, every device applies the whole update).
  std::string reducer = "sharded";
  // mirrored + sharded: devices read one parameter buffer (they share memory) rather than a
  // copy each; false gives every device its own copy.
  bool shared_parameters = true;
  // Several processes: after tandem::mpi::init() in a job of more than one rank, fit trains
  // across all of them (each rank runs `devices` local devices and takes its share of every
  // global batch). Every rank must call fit with the same model, data and options; rank 0's
  // initial weights and seed are used. Only rank 0 prints progress.
  bool distributed = true;
  std::string grad_compression = "none";  // "bf16": gradients cross processes as bfloat16
  // Checkpoints (rank 0 writes them): every checkpoint_every epochs or steps, into
  // checkpoint_dir/ckpt-<global step>.tandem, atomically; the newest keep_checkpoints stay.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;           // 0: no checkpoints
  std::string checkpoint_unit = "epoch";  // epoch | step
  int keep_checkpoints = 3;
  // Continue from the newest intact checkpoint in checkpoint_dir (a corrupt or truncated
  // one is reported and skipped); none there: start from the beginning. The checkpoint must
  // be of this run: the same model, data, batch size, shuffling, optimizer and every one of
  // its hyperparameters, strategy, reducer, deterministic mode and (when given) seed; any
  // difference is a ConfigError listing each, unless named in resume_overrides (e.g.
  // {"learning_rate"}: this run's value is used from the checkpoint on).
  bool resume = false;
  std::vector<std::string> resume_overrides;
  // A fresh run (no resume) into a checkpoint_dir that holds checkpoints is a ConfigError
  // naming them, so another run's checkpoints are never deleted by accident; true replaces them.
  bool overwrite_checkpoints = false;
  // Write a timeline of the fit (Chrome trace events: per-layer forward and backward, each
  // bucket's all-reduce, optimizer, data, idle; a lane per device, a process per rank) to
  // this path; open it in https://ui.perfetto.dev or chrome://tracing. Rank 0 writes it.
  std::string trace_path;
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 1;
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
};

struct LoadOptions {
  // false: the architecture and weights only, as Keras's load_model(compile=False). The
  // file's optimizer, loss, metrics and optimizer state are not read (a model compiled in
  // Keras with a loss tandem lacks still loads); compile() before fit.
  bool compile = true;
};

// Timing of the last fit / evaluate / predict, for reports and benchmarks.
struct RunTimes {
  double fit_seconds = 0, predict_seconds = 0, evaluate_seconds = 0;
  int64_t train_steps = 0;
  std::map<std::string, double> phase_seconds;  // data, forward, loss, backward, optimizer...
};

namespace detail {
struct ModelState;
}

class Model {
 public:
  Model(const Node& inputs, const Node& outputs, const std::string& name = "model");
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  virtual ~Model();

  // optimizer: an Optimizer or a name ("rmsprop"); loss: categorical_crossentropy,
  // sparse_categorical_crossentropy, binary_crossentropy, mean_squared_error (mse);
  // metrics: {"accuracy"} or {}.
  void compile(const Optimizer& optimizer, const std::string& loss,
               const std::vector<std::string>& metrics = {});
  void compile(const std::string& optimizer, const std::string& loss,
               const std::vector<std::string>& metrics = {});

  History fit(const Samples& x, const Samples& y, const FitOptions& options = {});
  // {"loss": ..., "accuracy": ...}
  std::map<std::string, double> evaluate(const Samples& x, const Samples& y,
                                         const EvaluateOptions& options = {});
  Tensor predict(const Samples& x, const PredictOptions& options = {});
  // One update on exactly this batch; returns its loss (and accuracy) before the update,
  // like Keras's train_on_batch.
  std::map<std::string, double> train_on_batch(const Samples& x, const Samples& y);

  void summary(std::ostream& out) const;
  void summary() const;
  std::string summary_string() const;
  int64_t count_params() const;
  const std::string& name() const;
  Shape input_shape() const;   // per sample
  Shape output_shape() const;  // per sample

  // Keras order: per layer in the order Keras's Functional.layers has for the same graph
  // (by decreasing depth), each layer's weights as Keras lists them (kernel, then bias).
  std::vector<Tensor> get_weights() const;
  // Shapes must match get_weights(); a mismatch is a ShapeError naming the layer.
  void set_weights(const std::vector<Tensor>& weights);

  // Whole model (architecture, weights, optimizer and its state), written atomically: for
  // a path ending in .keras, Keras 3's format (Keras reads it, and tandem reads Keras's);
  // otherwise tandem's own, versioned and checksummed. save_weights / load_weights take
  // Keras's .weights.h5 the same way (load_weights also a .keras file's weights).
  void save(const std::string& path) const;
  static Model load(const std::string& path, const LoadOptions& options = {});
  void save_weights(const std::string& path) const;
  // Into this architecture; a file from another architecture is a ShapeError.
  void load_weights(const std::string& path);

  // The compiled loss's name ("categorical_crossentropy", ...); empty before compile().
  std::string loss() const;
  // The compiled optimizer as compile() was given it (its learning rate as compiled;
  // learning_rate() is the one training uses now), and the metrics; none before compile().
  std::optional<Optimizer> optimizer() const;
  std::vector<std::string> metrics() const;
  double learning_rate() const;
  void set_learning_rate(double learning_rate);
  bool stop_training = false;

  const RunTimes& run_times() const;
  detail::ModelState& state() const { return *state_; }

 protected:
  Model();  // for Sequential: the graph is built on first use
  // init_seed: where weight initialisation draws from (default: the global seed stream).
  void build(const Node& inputs, const Node& outputs, const std::string& name,
             std::optional<uint64_t> init_seed = {});
  virtual void ensure_built() const {}

 private:
  std::unique_ptr<detail::ModelState> state_;
};

// Layers in order; the first call to add() may be Input(shape), or give input_shape.
class Sequential : public Model {
 public:
  explicit Sequential(const std::string& name = "sequential");
  Sequential(const Shape& input_shape, const std::vector<Layer>& layers = {},
             const std::string& name = "sequential");
  void add(const Layer& layer);
  void add(const Node& input);  // Input(shape)

 protected:
  void ensure_built() const override;

 private:
  std::optional<Node> input_;
  std::vector<Layer> pending_;
  std::string seq_name_;
  uint64_t init_seed_;  // drawn at construction, as Keras draws when layers are created
};

}  // namespace tandem
