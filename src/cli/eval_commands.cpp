#include "cli/eval_commands.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/atomic_write.h"
#include "cli/nan_guard.h"
#include "core/output_path.h"
#include "tandem/error.h"

namespace tandem::cli {
namespace {

using SteadyClock = std::chrono::steady_clock;

void add_saved_model_options(CLI::App& cmd, SavedModelRunOptions& o) {
  cmd.add_option("--model", o.model_path,
                 "A model saved by `tandem train --save`, a Keras 3 .keras or a Keras 2 .h5 file")
      ->type_name("PATH")
      ->required();
  add_data_options(cmd, o.data);
  cmd.add_option("--limit", o.limit, "Use only the first N test samples")
      ->type_name("N")
      ->check(positive_integer())
      ->group("Data");
  cmd.add_option("--batch-size", o.batch_size, "Samples per batch")
      ->check(positive_integer())
      ->capture_default_str();
}

// The saved model and the test split it runs on, checked to fit each other.
struct LoadedRun {
  Model model;
  LabelledImages test;
};

LoadedRun load_run(const SavedModelRunOptions& o) {
  Model model = Model::load(o.model_path);
  if (const auto bad = non_finite_weight(model)) {
    throw NumericError(o.model_path + ": the model's " + *bad +
                       " holds NaN or infinities; its outputs would be meaningless");
  }
  const DataOptions data_options = data_for_model(o.data, model);
  const Shape images = data_sample_shape(data_options);
  if (shape_size(model.input_shape()) != shape_size(images)) {
    throw ShapeError(o.model_path + ": the model expects inputs of shape " +
                     shape_to_string(model.input_shape()) + " but " + o.data.dataset +
                     " images are " + shape_to_string(images));
  }
  const TrainTestSplit data = load_dataset(data_options);
  return {std::move(model), first_samples(data.test, o.limit)};
}

// The public API does not say which loss a loaded model was compiled with, so targets are
// tried one-hot first (categorical_crossentropy, mse) and as integer labels
// (sparse_categorical_crossentropy) when the model rejects their shape. Both checks run
// before any computation; if both fail, the first error is the one reported.
std::map<std::string, double> evaluate_labels(Model& model, const Samples& x,
                                              const ByteArray& labels, int64_t batch_size) {
  const EvaluateOptions options{.batch_size = batch_size, .verbose = 0};
  const int64_t classes = shape_size(model.output_shape());
  try {
    return model.evaluate(x, Samples(to_categorical(labels, static_cast<int>(classes))), options);
  } catch (const ShapeError& one_hot_error) {
    try {
      return model.evaluate(x, Samples(labels), options);
    } catch (const ShapeError&) {
      throw one_hot_error;
    }
  }
}

std::string predictions_csv(const Tensor& probabilities) {
  const int64_t count = probabilities.dim(0), classes = probabilities.row_size();
  std::string out = "index,class";
  for (int64_t k = 0; k < classes; ++k) out += fmt::format(",p{}", k);
  out += "\n";
  for (int64_t i = 0; i < count; ++i) {
    const float* p = probabilities.data() + i * classes;
    out += fmt::format("{},{}", i, std::max_element(p, p + classes) - p);
    for (int64_t k = 0; k < classes; ++k) out += fmt::format(",{:.6g}", p[k]);
    out += "\n";
  }
  return out;
}

nlohmann::json predictions_json(const Tensor& probabilities, const std::string& model_path) {
  const int64_t count = probabilities.dim(0), classes = probabilities.row_size();
  nlohmann::json predictions = nlohmann::json::array();
  for (int64_t i = 0; i < count; ++i) {
    const float* p = probabilities.data() + i * classes;
    predictions.push_back({{"index", i},
                           {"class", std::max_element(p, p + classes) - p},
                           {"probabilities", std::vector<float>(p, p + classes)}});
  }
  return {{"model", model_path}, {"count", count}, {"predictions", predictions}};
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

CLI::App* add_evaluate_command(CLI::App& app, SavedModelRunOptions& o) {
  CLI::App* cmd = app.add_subcommand("evaluate", "Evaluate a saved model on the test split");
  add_saved_model_options(*cmd, o);
  cmd->add_option("--json", o.output_path, "Also write the scores as JSON to PATH")
      ->type_name("PATH");
  return cmd;
}

CLI::App* add_predict_command(CLI::App& app, SavedModelRunOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "predict", "Predict the test split with a saved model; write class and probabilities");
  add_saved_model_options(*cmd, o);
  cmd->add_option("--output", o.output_path,
                  "PATH.csv (index,class,p0..p9 per sample) or PATH.json")
      ->type_name("PATH")
      ->required();
  return cmd;
}

// The output is neither the model nor the data it reads, and can be created.
void check_output(const SavedModelRunOptions& o) {
  auto inputs = dataset_inputs(o.data);
  inputs.emplace_back("--model", o.model_path);
  check_outputs_distinct({{"--output", o.output_path}}, inputs);
  if (!o.output_path.empty()) check_writable(o.output_path);
}

int run_evaluate(const SavedModelRunOptions& o) {
  check_output(o);
  LoadedRun run = load_run(o);
  const Samples x = image_samples(run.test.x, run.model.input_shape());
  const auto start = SteadyClock::now();
  const auto scores = evaluate_labels(run.model, x, run.test.y, o.batch_size);
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const auto loss = scores.find("loss"), accuracy = scores.find("accuracy");
  fmt::print("test loss {:.4f}", loss->second);
  if (accuracy != scores.end()) fmt::print(", test accuracy {:.4f}", accuracy->second);
  fmt::print("\n");
  if (!o.output_path.empty()) {
    nlohmann::json report = {
        {"model", o.model_path},
        {"dataset", o.data.dataset},
        {"test_samples", x.count()},
        {"evaluate_seconds", seconds},
        {"test_loss", loss->second},
        {"test_accuracy",
         accuracy != scores.end() ? nlohmann::json(accuracy->second) : nlohmann::json(nullptr)}};
    write_text_atomically(o.output_path, report.dump(2) + "\n");
  }
  return 0;
}

int run_predict(const SavedModelRunOptions& o) {
  const bool csv = ends_with(o.output_path, ".csv"), json = ends_with(o.output_path, ".json");
  if (!csv && !json) {
    throw ConfigError("--output '" + o.output_path + "': the name must end in .csv or .json");
  }
  check_output(o);
  LoadedRun run = load_run(o);
  const auto start = SteadyClock::now();
  const Tensor probabilities = run.model.predict(image_samples(run.test.x, run.model.input_shape()),
                                                 {.batch_size = o.batch_size});
  fmt::print("predict: {:.3f} s ({} samples)\n",
             std::chrono::duration<double>(SteadyClock::now() - start).count(),
             probabilities.dim(0));
  write_text_atomically(o.output_path,
                        csv ? predictions_csv(probabilities)
                            : predictions_json(probabilities, o.model_path).dump() + "\n");
  fmt::print("wrote {}\n", o.output_path);
  return 0;
}

}  // namespace tandem::cli
