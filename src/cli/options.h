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
  std::string dataset = "fashion-mnist";  // fashion-mnist | mnist
  std::string data_dir;                   // empty: Debian's fashion-mnist directory
};

// The files a run reads for `options` (to keep outputs off them): ("the data", path) pairs.
std::vector<std::pair<std::string, std::string>> dataset_inputs(const DataOptions& options);

struct ModelShapeOptions {
  std::string layers = kSeedLayers;  // hidden widths, comma-separated
  std::string activation = "relu";
};

// Validators whose messages name the rule ("--batch-size: must be an integer > 0, got '0'").
CLI::Validator positive_integer();
CLI::Validator positive_number();
CLI::Validator fraction_below_one();  // [0, 1)
CLI::Validator unsigned_64();         // [0, 2^64): seeds; "-1" and "18446744073709551616" fail

void add_data_options(CLI::App& command, DataOptions& options);
void add_model_shape_options(CLI::App& command, ModelShapeOptions& options);

// "4096,2048" -> {4096, 2048}. ConfigError naming the bad entry for an empty list, an
// empty entry, a non-integer or a width <= 0.
std::vector<int64_t> parse_layer_widths(const std::string& text);
// "1,2,4" -> {1, 2, 4} (device counts, each > 0).
std::vector<int> parse_device_counts(const std::string& text);

// Input(784) -> Dense(w, activation) per hidden width -> Dense(10, softmax), uncompiled.
Model build_model(const ModelShapeOptions& options);

// Reads the dataset; ConfigError when mnist has no --data-dir, the library's IoError or
// FormatError (naming the file) when it cannot be read.
TrainTestSplit load_dataset(const DataOptions& options);

// One split cut to its first `limit` samples (all of them when absent or larger).
LabelledImages first_samples(const LabelledImages& split, std::optional<int64_t> limit);

// Images (count, 28, 28) uint8 -> Samples of (count, 784) scaled to [0, 1].
Samples image_samples(const ByteArray& images);
// Labels (count,) -> targets for `loss`: raw labels for sparse_categorical_crossentropy,
// one-hot (count, 10) otherwise.
Samples label_samples(const ByteArray& labels, const std::string& loss);

}  // namespace tandem::cli
