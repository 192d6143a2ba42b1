#include "cli/metrics_json.h"

#include "tandem/datasets.h"

namespace tandem::cli {
namespace {

using nlohmann::json;

template <class T>
json optional_json(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json config_json(const TrainOptions& o, const TrainReport& r) {
  return {
      {"dataset", o.data.dataset},
      {"data_dir", o.data.data_dir.empty() && o.data.dataset == "fashion-mnist"
                       ? std::string(fashion_mnist::kDefaultDir)
                       : o.data.data_dir},
      {"model", o.shape.model.empty() ? json(nullptr) : json(o.shape.model)},
      {"input_shape",
       o.data.dataset == "synthetic" ? json(data_sample_shape(o.data)) : json(nullptr)},
      {"classes", o.data.dataset == "synthetic" ? o.data.classes : kClasses},
      {"layers", o.shape.model.empty() ? json(parse_layer_widths(o.shape.layers)) : json(nullptr)},
      {"activation", o.shape.activation},
      {"optimizer", o.optimizer},
      {"learning_rate", r.learning_rate},
      {"loss", o.loss},
      {"batch_size", o.batch_size},
      {"epochs", o.epochs},
      {"seed", optional_json(o.seed)},
      {"threads", r.threads},
      {"devices", o.devices},
      {"strategy", o.strategy},
      {"reducer", o.reducer},
      {"threads_per_device", o.threads_per_device},
      {"deterministic", o.deterministic},
      {"bucket_mb", o.bucket_mb},
      {"validation_split", o.validation_split},
      {"ranks", r.ranks},
      {"grad_compression", o.grad_compression},
      {"checkpoint_dir", o.checkpoint_dir.empty() ? json(nullptr) : json(o.checkpoint_dir)},
      {"checkpoint_every", o.checkpoint_every.empty() ? json(nullptr) : json(o.checkpoint_every)},
      {"resume", o.resume},
      {"verbose", o.verbose},
      {"save", o.save_path.empty() ? json(nullptr) : json(o.save_path)},
      {"limit_train", optional_json(o.limit_train)},
      {"limit_test", optional_json(o.limit_test)}};
}

// One entry per epoch run, from History's per-key lists.
json epochs_json(const TrainReport& r) {
  json epochs = json::array();
  for (size_t i = 0; i < r.history.epoch.size(); ++i) {
    json entry = {{"epoch", r.history.epoch[i] + 1}};
    for (const auto& [name, values] : r.history.history) {
      if (i < values.size()) entry[name] = values[i];
    }
    entry["seconds"] = i < r.epoch_seconds.size() ? json(r.epoch_seconds[i]) : json(nullptr);
    epochs.push_back(entry);
  }
  return epochs;
}

double per_second(double amount, double seconds) {
  return seconds > 0 ? amount / seconds : 0;
}

json score(const std::map<std::string, double>& scores, const std::string& name) {
  const auto it = scores.find(name);
  return it == scores.end() ? json(nullptr) : json(it->second);
}

}  // namespace

nlohmann::json train_report_json(const TrainOptions& o, const TrainReport& r) {
  const double epochs_run = static_cast<double>(r.history.epoch.size());
  return {{"train_seconds", r.train_seconds},
          {"predict_seconds", r.predict_seconds},
          {"test_loss", score(r.test_scores, "loss")},
          {"test_accuracy", score(r.test_scores, "accuracy")},
          {"train_steps", r.train_steps},
          {"steps_per_second", per_second(static_cast<double>(r.train_steps), r.train_seconds)},
          {"samples_per_second",
           per_second(static_cast<double>(r.train_samples) * epochs_run, r.train_seconds)},
          {"train_samples", r.train_samples},
          {"validation_samples", r.validation_samples},
          {"test_samples", r.test_samples},
          {"parameters", r.parameters},
          {"epochs", epochs_json(r)},
          {"phase_seconds", r.phase_seconds},
          {"config", config_json(o, r)}};
}

}  // namespace tandem::cli
