#include "cli/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "tandem/error.h"
#include "tandem/layers.h"

namespace tandem::cli {

namespace {

// The whole of `text` as a T, or nothing.
template <class T>
std::optional<T> parse_number(const std::string& text) {
  T value{};
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || rest != text.data() + text.size()) return {};
  return value;
}

}  // namespace

CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto value = parse_number<int64_t>(text);
        return value && *value > 0 ? "" : "must be an integer > 0, got '" + text + "'";
      },
      "POSITIVE", "positive_integer");
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto value = parse_number<double>(text);
        return value && std::isfinite(*value) && *value > 0
                   ? ""
                   : "must be a finite number > 0, got '" + text + "'";
      },
      "POSITIVE", "positive_number");
}

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return parse_number<uint64_t>(text) &&
                       text.find_first_not_of("0123456789") == std::string::npos
                   ? ""
                   : "must be an integer in [0, 2^64), got '" + text + "'";
      },
      "UINT64", "unsigned_64");
}

CLI::Validator fraction_below_one() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto value = parse_number<double>(text);
        return value && *value >= 0 && *value < 1 ? "" : "must be in [0, 1), got '" + text + "'";
      },
      "IN [0,1)", "fraction_below_one");
}

void add_data_options(CLI::App& command, DataOptions& options) {
  command.add_option("--dataset", options.dataset, "Dataset in MNIST's format")
      ->check(CLI::IsMember({"fashion-mnist", "mnist"}))
      ->capture_default_str()
      ->group("Data");
  command
      .add_option("--data-dir", options.data_dir,
                  std::string("Directory of the four IDX files (.gz or plain), or an mnist.npz "
                              "path; required for mnist [default for fashion-mnist: ") +
                      fashion_mnist::kDefaultDir + "]")
      ->type_name("PATH")
      ->group("Data");
}

void add_model_shape_options(CLI::App& command, ModelShapeOptions& options) {
  command
      .add_option("--layers", options.layers,
                  "Hidden layer widths, comma-separated: Input(784) -> Dense(w) ... -> "
                  "Dense(10, softmax)")
      ->type_name("W,W,...")
      ->capture_default_str()
      ->group("Model");
  command
      .add_option("--activation", options.activation,
                  "Activation of the hidden layers: relu, sigmoid, tanh, linear")
      ->capture_default_str()
      ->group("Model");
}

namespace {

// "a,b,c" of integers > 0 for `option`; messages name the option, the entry and an example.
std::vector<int64_t> parse_positive_list(const std::string& text, const std::string& option,
                                         const std::string& example) {
  const std::string hint =
      " (expected positive integers separated by commas, e.g. " + example + ")";
  if (text.empty()) throw ConfigError(option + " is empty" + hint);
  std::vector<int64_t> values;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    const auto value = parse_number<int64_t>(item);
    if (!value) {
      throw ConfigError(option + " '" + text + "': entry " + std::to_string(values.size() + 1) +
                        " '" + item + "' is not an integer" + hint);
    }
    if (*value <= 0) {
      throw ConfigError(option + " '" + text + "': entry '" + item + "' must be > 0" + hint);
    }
    values.push_back(*value);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return values;
}

}  // namespace

std::vector<int64_t> parse_layer_widths(const std::string& text) {
  return parse_positive_list(text, "--layers", kSeedLayers);
}

std::vector<int> parse_device_counts(const std::string& text) {
  std::vector<int> out;
  for (const int64_t v : parse_positive_list(text, "--devices", "1,2,4")) {
    if (v > 1 << 20) {
      throw ConfigError("--devices '" + text + "': " + std::to_string(v) + " devices is too many");
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

Model build_model(const ModelShapeOptions& options) {
  const std::vector<int64_t> widths = parse_layer_widths(options.layers);
  const Node inputs = Input({kImageSize});
  Node x = inputs;
  for (int64_t width : widths) x = Dense(width, options.activation)(x);
  const Node outputs = Dense(kClasses, "softmax")(x);
  return Model(inputs, outputs);
}

std::vector<std::pair<std::string, std::string>> dataset_inputs(const DataOptions& options) {
  const std::string where = options.data_dir.empty() && options.dataset == "fashion-mnist"
                                ? fashion_mnist::kDefaultDir
                                : options.data_dir;
  std::vector<std::pair<std::string, std::string>> inputs;
  if (where.empty()) return inputs;
  std::error_code error;
  if (!std::filesystem::is_directory(where, error)) return {{"the data file", where}};
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    for (const char* suffix : {"", ".gz"}) {
      inputs.emplace_back("the data file",
                          (std::filesystem::path(where) / (std::string(name) + suffix)).string());
    }
  }
  return inputs;
}

TrainTestSplit load_dataset(const DataOptions& options) {
  if (options.dataset == "mnist") {
    if (options.data_dir.empty()) {
      throw ConfigError(
          "--dataset mnist needs --data-dir: a directory of the four IDX files or a path to "
          "Keras's mnist.npz");
    }
    return mnist::load_data(options.data_dir);
  }
  if (options.dataset == "fashion-mnist") {
    return fashion_mnist::load_data(options.data_dir.empty() ? fashion_mnist::kDefaultDir
                                                             : options.data_dir);
  }
  throw ConfigError("unknown --dataset '" + options.dataset + "' (known: fashion-mnist, mnist)");
}

namespace {

ByteArray first_rows(const ByteArray& values, int64_t count) {
  const int64_t row = values.row_size();
  Shape shape = values.shape();
  shape[0] = count;
  return ByteArray(shape, std::vector<uint8_t>(values.data(), values.data() + count * row));
}

}  // namespace

LabelledImages first_samples(const LabelledImages& split, std::optional<int64_t> limit) {
  if (!limit || *limit >= split.x.dim(0)) return split;
  if (*limit <= 0) throw ConfigError("limit must be > 0, got " + std::to_string(*limit));
  return {first_rows(split.x, *limit), first_rows(split.y, *limit)};
}

Samples image_samples(const ByteArray& images) {
  return scaled(images.reshape({-1, kImageSize}), 1.f / 255);
}

Samples label_samples(const ByteArray& labels, const std::string& loss) {
  if (loss == "sparse_categorical_crossentropy") return Samples(labels);
  return Samples(to_categorical(labels, kClasses));
}

}  // namespace tandem::cli
