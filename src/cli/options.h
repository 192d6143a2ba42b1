// Options shared by the subcommands: which dataset to read, how much of it, and the
// seed's model shape (hidden widths and activation). Each subcommand owns its values;
// these helpers register the flags and turn the values into data and models.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/datasets.h"
#include "tandem/model.h"

namespace tandem::cli {

// The seed's hidden layers: Dense(4096) -> Dense(2048) -> Dense(512) -> Dense(64).
inline constexpr const char* kSeedLayers = "4096,2048,512,64";
inline constexpr int64_t kImageSize = 784;  // 28 x 28 pixels, flattened
inline constexpr int kClasses = 10;

struct DataOptions {
  std::string dataset = "fashion-mnist";  // fashion-mnist | mnist | synthetic
  std::string data_dir;                   // empty: Debian's fashion-mnist directory
  // synthetic: random uint8 images of this per-sample shape ("32,32,3"), labels in
  // [0, classes), for throughput runs without a data set.
  // Empty: the model's own (28,28,1 for --layers; a built-in model's default).
  std::string input_shape;
  bool dataset_given = false;  // --dataset was on the command line
  int classes = kClasses;
  int64_t synthetic_train = 6400, synthetic_test = 640;
};

// The files a run reads for `options` (to keep outputs off them): ("the data", path) pairs.
std::vector<std::pair<std::string, std::string>> dataset_inputs(const DataOptions& options);
struct ModelShapeOptions;
// dataset_inputs and, when --model names a file, ("--model", path).
std::vector<std::pair<std::string, std::string>> run_inputs(const DataOptions& data,
                                                            const ModelShapeOptions& model);

struct ModelShapeOptions {
  std::string layers = kSeedLayers;  // hidden widths, comma-separated
  std::string activation = "relu";
  // A built-in model's name (tandem/zoo.h) or a saved model's path; empty: the MLP above.
  std::string model;
};

// Validators whose messages name the rule ("--batch-size: must be an integer > 0, got '0'").
CLI::Validator positive_integer();
CLI::Validator positive_number();
CLI::Validator fraction_below_one();  // [0, 1)
CLI::Validator unsigned_64();         // [0, 2^64): seeds; "-1" and "18446744073709551616" fail

void add_data_options(CLI::App& command, DataOptions& options);
// model_option: also --model (a built-in name or a saved model instead of --layers).
void add_model_shape_options(CLI::App& command, ModelShapeOptions& options,
                             bool model_option = true);

// The benchmarks' --steps (per timed repetition) and --repeats (interleaved; medians used).
void add_timing_options(CLI::App& command, int& steps, int& repeats);

// --quiet-wait SECONDS (calibrate, bench validate): how long a probe of devices at once waits
// at most, over all its rounds, for the devices' cores to be near again and little of their
// time stolen before it times a round again (0 to 3600; detail::set_quiet_wait).
void add_quiet_wait_option(CLI::App& command, double& seconds);

// --apart-handoff TIMES (calibrate, bench validate): a window's devices' cores count as apart
// over this many times the fastest hand-off (1 to 1e6; detail::set_apart_handoff).
void add_apart_handoff_option(CLI::App& command, double& times);

// "4096,2048" -> {4096, 2048}. ConfigError naming the bad entry for an empty list, an
// empty entry, a non-integer or a width <= 0.
std::vector<int64_t> parse_layer_widths(const std::string& text);
// "1,2,4" -> {1, 2, 4} (device counts, each > 0).
std::vector<int> parse_device_counts(const std::string& text);

// --model (a built-in name, built for the data's per-sample shape and classes, or a saved
// model's path), else Input(784) -> Dense(w, activation) per hidden width ->
// Dense(classes, softmax); uncompiled.
Model build_model(const ModelShapeOptions& options, const DataOptions& data);
// The per-sample shape the dataset's images have: (28, 28, 1) for the MNIST formats, the
// parsed --input-shape for synthetic.
Shape data_sample_shape(const DataOptions& options);
struct ModelShapeOptions;
// synthetic data without --input-shape: the built-in model's own input shape (28,28,1 for
// --layers and seed-mlp); a model file's is left to data_for_model.
void resolve_input_shape(DataOptions& data, const ModelShapeOptions& shape);
// Synthetic data without --input-shape, for a model loaded from a file: the model's own shape.
DataOptions data_for_model(DataOptions data, const Model& model);

// Reads the dataset; ConfigError when mnist has no --data-dir, the library's IoError or
// FormatError (naming the file) when it cannot be read.
TrainTestSplit load_dataset(const DataOptions& options);

// One split cut to its first `limit` samples (all of them when absent or larger).
LabelledImages first_samples(const LabelledImages& split, std::optional<int64_t> limit);

// Images (count, ...) uint8 -> Samples of (count, model input shape) scaled to [0, 1];
// ShapeError naming both shapes when their sizes differ.
Samples image_samples(const ByteArray& images, const Shape& model_input);
// Labels (count,) -> targets for `loss`: raw labels for sparse_categorical_crossentropy,
// one-hot (count, classes) otherwise.
Samples label_samples(const ByteArray& labels, const std::string& loss, int classes = kClasses);

}  // namespace tandem::cli
