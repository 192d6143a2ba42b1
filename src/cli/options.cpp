#include "cli/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "tandem/error.h"
#include "tandem/layers.h"
#include "tandem/zoo.h"

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
  command
      .add_option("--dataset", options.dataset,
                  "Dataset in MNIST's format, or synthetic (random images for throughput runs)")
      ->check(CLI::IsMember({"fashion-mnist", "mnist", "synthetic"}))
      ->capture_default_str()
      ->each([&options](const std::string&) { options.dataset_given = true; })
      ->group("Data");
  command
      .add_option("--input-shape", options.input_shape,
                  "synthetic: per-sample image shape, height,width,channels (default: the "
                  "model's own: 28,28,1 for --layers and mnist-convnet, 32,32,3 for "
                  "minigooglenet and small-resnet)")
      ->type_name("H,W,C")
      ->group("Data");
  command.add_option("--classes", options.classes, "synthetic: number of classes")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str()
      ->group("Data");
  command.add_option("--synthetic-train", options.synthetic_train, "synthetic: training samples")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str()
      ->group("Data");
  command.add_option("--synthetic-test", options.synthetic_test, "synthetic: test samples")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
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

void add_timing_options(CLI::App& command, int& steps, int& repeats) {
  command.add_option("--steps", steps, "Steps per timed repetition")
      ->check(positive_integer())
      ->capture_default_str();
  command.add_option("--repeats", repeats, "Repetitions (interleaved; the median is reported)")
      ->check(positive_integer())
      ->capture_default_str();
}

void add_quiet_wait_option(CLI::App& command, double& seconds) {
  command
      .add_option("--quiet-wait", seconds,
                  "Seconds a probe of devices at once waits at most, over all its rounds, for a "
                  "quiet window (the devices' cores near, little of their time stolen by the "
                  "hypervisor) before it times a disturbed round again, polling every 0.25 s; "
                  "once spent, or with 0, it times the round again at once (bench validate: "
                  "also each model's repetitions, over all its batches)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
}

void add_apart_handoff_option(CLI::App& command, double& times) {
  command
      .add_option("--apart-handoff", times,
                  "A probe's devices' cores count as apart (its round, or bench validate's "
                  "repetition, timed again) when a hand-off between them takes over this many "
                  "times the fastest measured")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
}

void add_model_shape_options(CLI::App& command, ModelShapeOptions& options, bool model_option) {
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
  if (!model_option) return;
  command
      .add_option("--model", options.model,
                  "A built-in model (seed-mlp, mnist-convnet, minigooglenet, small-resnet) or "
                  "a model saved by `tandem train --save`, a Keras 3 .keras or a Keras 2 .h5 file, "
                  "instead of --layers")
      ->type_name("NAME|PATH")
      ->excludes(command.get_option("--layers"))
      ->excludes(command.get_option("--activation"))
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

void resolve_input_shape(DataOptions& data, const ModelShapeOptions& shape) {
  if (data.dataset != "synthetic" || !data.input_shape.empty()) return;
  const bool named = zoo::is_name(shape.model);
  if (!shape.model.empty() && !named) return;  // a model file: its own shape, once loaded
  Shape own{28, 28, 1};
  if (named && shape.model != "seed-mlp") own = zoo::by_name(shape.model).input_shape();
  for (size_t i = 0; i < own.size(); ++i) {
    data.input_shape += (i ? "," : "") + std::to_string(own[i]);
  }
}

DataOptions data_for_model(DataOptions data, const Model& model) {
  if (data.dataset != "synthetic" || !data.input_shape.empty()) return data;
  const Shape own = model.input_shape();
  for (size_t i = 0; i < own.size(); ++i) {
    data.input_shape += (i ? "," : "") + std::to_string(own[i]);
  }
  return data;
}

Shape data_sample_shape(const DataOptions& options) {
  if (options.dataset != "synthetic") return {28, 28, 1};
  if (options.input_shape.empty()) return {28, 28, 1};
  const std::vector<int64_t> dims =
      parse_positive_list(options.input_shape, "--input-shape", "32,32,3");
  int64_t size = 1;
  for (int64_t d : dims) {
    if (d > (int64_t{1} << 24) / size) {
      throw ConfigError("--input-shape '" + options.input_shape + "' is too large");
    }
    size *= d;
  }
  return dims;
}

Model build_model(const ModelShapeOptions& options, const DataOptions& data) {
  const int classes = data.dataset == "synthetic" ? data.classes : kClasses;
  if (!options.model.empty()) {
    if (!zoo::is_name(options.model)) return Model::load(options.model);
    // The MLP reads flat images; the convnets read them as they are. With no data named,
    // the model takes its own input shape (what `summary --model minigooglenet` shows).
    if (!data.dataset_given) return zoo::by_name(options.model, {}, classes);
    const Shape shape = data_sample_shape(data);
    try {
      return zoo::by_name(options.model,
                          options.model == "seed-mlp" ? Shape{shape_size(shape)} : shape, classes);
    } catch (const ShapeError& e) {
      throw ShapeError("--model " + options.model + " on " + data.dataset + " images of shape " +
                       shape_to_string(shape) + " (it is made for " +
                       shape_to_string(zoo::by_name(options.model).input_shape()) +
                       "; --dataset synthetic takes --input-shape): " + e.what());
    }
  }
  const std::vector<int64_t> widths = parse_layer_widths(options.layers);
  const Node inputs = Input({shape_size(data_sample_shape(data))});
  Node x = inputs;
  for (int64_t width : widths) x = Dense(width, options.activation)(x);
  const Node outputs = Dense(classes, "softmax")(x);
  return Model(inputs, outputs);
}

std::vector<std::pair<std::string, std::string>> dataset_inputs(const DataOptions& options) {
  const std::string where = options.data_dir.empty() && options.dataset == "fashion-mnist"
                                ? fashion_mnist::kDefaultDir
                                : options.data_dir;
  std::vector<std::pair<std::string, std::string>> inputs;
  if (where.empty() || options.dataset == "synthetic") return inputs;
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

namespace {

// Random images whose label is the index of their brightest of `classes` horizontal
// bands, so a model can learn something; uint8 like the image datasets. Fixed seed.
LabelledImages synthetic_split(const Shape& shape, int classes, int64_t count, uint64_t seed) {
  const int64_t size = shape_size(shape);
  Shape x_shape = shape;
  x_shape.insert(x_shape.begin(), count);
  std::vector<uint8_t> x(static_cast<size_t>(count * size)), y(static_cast<size_t>(count));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; ++i) {
    const auto label = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(classes));
    for (int64_t j = 0; j < size; ++j) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const bool band = j * classes / size == label;
      x[i * size + j] = static_cast<uint8_t>((state >> 57) + (band ? 96 : 0));
    }
    y[i] = static_cast<uint8_t>(label % 256);
    state ^= static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ull;
  }
  return {ByteArray(x_shape, std::move(x)), ByteArray({count}, std::move(y))};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> run_inputs(const DataOptions& data,
                                                            const ModelShapeOptions& model) {
  auto inputs = dataset_inputs(data);
  if (!model.model.empty() && !zoo::is_name(model.model)) {
    inputs.emplace_back("--model", model.model);
  }
  return inputs;
}

TrainTestSplit load_dataset(const DataOptions& options) {
  if (options.dataset == "synthetic") {
    if (options.classes > 256) {
      throw ConfigError("--classes " + std::to_string(options.classes) +
                        ": synthetic labels are uint8, at most 256 classes");
    }
    const Shape shape = data_sample_shape(options);
    if (options.synthetic_train * shape_size(shape) > (int64_t{1} << 32)) {
      throw ConfigError("--synthetic-train " + std::to_string(options.synthetic_train) +
                        " images of " + shape_to_string(shape) + " exceed 4 GiB");
    }
    return {synthetic_split(shape, options.classes, options.synthetic_train, 1),
            synthetic_split(shape, options.classes, options.synthetic_test, 2)};
  }
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
  throw ConfigError("unknown --dataset '" + options.dataset +
                    "' (known: fashion-mnist, mnist, synthetic)");
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

Samples image_samples(const ByteArray& images, const Shape& model_input) {
  Shape per_sample = images.shape();
  per_sample.erase(per_sample.begin());
  if (shape_size(per_sample) != shape_size(model_input)) {
    throw ShapeError("the model expects inputs of shape " + shape_to_string(model_input) +
                     " but the dataset's images are " + shape_to_string(per_sample));
  }
  Shape shape = model_input;
  shape.insert(shape.begin(), -1);
  return scaled(images.reshape(shape), 1.f / 255);
}

Samples label_samples(const ByteArray& labels, const std::string& loss, int classes) {
  if (loss == "sparse_categorical_crossentropy") return Samples(labels);
  return Samples(to_categorical(labels, classes));
}

}  // namespace tandem::cli
