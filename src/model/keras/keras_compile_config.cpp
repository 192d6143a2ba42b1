#include "model/keras/keras_compile_config.h"

#include <set>

#include "model/graph.h"

namespace tandem::detail {
namespace {

using namespace keras_json;

// ---- compile config ----

struct OptimizerKeys {
  const char* keras;
  const char* tandem;
  std::vector<const char*> numbers;
};

const OptimizerKeys kOptimizers[] = {
    {"SGD", "sgd", {"momentum"}},
    {"RMSprop", "rmsprop", {"rho", "epsilon"}},
    {"Adam", "adam", {"beta_1", "beta_2", "epsilon"}},
};

// Keys of Keras's optimizer configs that change nothing tandem does: the name,
// ema_momentum and ema_overwrite_frequency (used only with use_ema), and Keras 2's
// jit_compile and is_legacy_optimizer.
bool ignored_optimizer_key(const std::string& key) {
  for (const char* k :
       {"name", "ema_momentum", "ema_overwrite_frequency", "jit_compile", "is_legacy_optimizer"}) {
    if (key == k) return true;
  }
  return false;
}

Optimizer optimizer_from_keras(const json& v, const Where& w) {
  std::string cls;
  json config = json::object();
  if (v.is_string()) {
    cls = v.get<std::string>();
  } else {
    cls = text(v, "class_name", w);
    config = v.value("config", json::object());
  }
  const OptimizerKeys* keys = nullptr;
  for (const auto& k : kOptimizers) {
    if (cls == k.keras || cls == k.tandem) keys = &k;
  }
  if (!keys) w.fail("optimizer " + cls + " is not supported by tandem (it has SGD, RMSprop, Adam)");
  Optimizer o = optimizer_from_name(keys->tandem);
  const Where ow = w.at("optimizer " + std::string(keys->keras));
  for (const auto& [key, value] : config.items()) {
    if (key == "learning_rate") {
      if (!value.is_number()) {
        ow.fail("learning_rate " + value.dump() +
                ": learning-rate schedules are not supported by tandem (a number only)");
      }
      o.learning_rate = value.get<double>();
    } else if (contains(keys->numbers, key)) {
      if (!value.is_number()) ow.fail(key + " is not a number");
      const double x = value.get<double>();
      if (key == "momentum" && o.name == "sgd") o.momentum = x;
      if (key == "rho") o.rho = x;
      if (key == "epsilon") o.epsilon = x;
      if (key == "beta_1") o.beta_1 = x;
      if (key == "beta_2") o.beta_2 = x;
    } else if (key == "nesterov" && o.name == "sgd") {
      if (!value.is_boolean()) ow.fail("nesterov is not a boolean");
      o.nesterov = value.get<bool>();
    } else if (key == "momentum" && o.name == "rmsprop") {
      if (!value.is_number() || value.get<double>() != 0) {
        ow.fail("momentum = " + value.dump() + " is not supported by tandem's RMSprop (only 0)");
      }
    } else if (ignored_optimizer_key(key)) {
      continue;
    } else if (!is_off(value)) {
      ow.fail("option '" + key + "' = " + value.dump() + " is not supported by tandem");
    }
  }
  return o;
}

json keras_optimizer(const Optimizer& o) {
  json config = {{"name", o.name},
                 {"learning_rate", o.learning_rate},
                 {"weight_decay", nullptr},
                 {"clipnorm", nullptr},
                 {"global_clipnorm", nullptr},
                 {"clipvalue", nullptr},
                 {"use_ema", false},
                 {"ema_momentum", 0.99},
                 {"ema_overwrite_frequency", nullptr},
                 {"loss_scale_factor", nullptr},
                 {"gradient_accumulation_steps", nullptr}};
  const char* cls = "SGD";
  if (o.name == "sgd") {
    config["momentum"] = o.momentum;
    config["nesterov"] = o.nesterov;
  } else if (o.name == "rmsprop") {
    cls = "RMSprop";
    config["rho"] = o.rho;
    config["momentum"] = 0.0;
    config["epsilon"] = o.epsilon;
    config["centered"] = false;
  } else {
    cls = "Adam";
    config["beta_1"] = o.beta_1;
    config["beta_2"] = o.beta_2;
    config["epsilon"] = o.epsilon;
    config["amsgrad"] = false;
  }
  return {{"module", "keras.optimizers"},
          {"class_name", cls},
          {"config", config},
          {"registered_name", nullptr}};
}

// Keras's loss classes whose names tandem knows in snake case.
std::string loss_from_keras(const json& v, const Where& w) {
  if (v.is_string()) return v.get<std::string>();
  const std::string cls = text(v, "class_name", w);
  const json config = v.value("config", json::object());
  for (const auto& [key, value] : config.items()) {
    const bool fine = key == "name" || (key == "reduction" && value == "sum_over_batch_size") ||
                      (key == "axis" && value == -1) ||
                      (key == "label_smoothing" && value.is_number() && value.get<double>() == 0) ||
                      is_off(value);
    if (!fine) {
      w.fail("loss " + cls + ": option '" + key + "' = " + value.dump() +
             " is not supported by tandem");
    }
  }
  return snake_case(cls);
}

const char* const kKnownMetrics =
    "accuracy, acc, categorical_accuracy, sparse_categorical_accuracy, binary_accuracy, and "
    "the classes CategoricalAccuracy, SparseCategoricalAccuracy, BinaryAccuracy";

std::optional<AccuracyKind> accuracy_function(const std::string& name) {
  if (name == "categorical_accuracy") return AccuracyKind::categorical;
  if (name == "sparse_categorical_accuracy") return AccuracyKind::sparse_categorical;
  if (name == "binary_accuracy") return AccuracyKind::binary;
  return std::nullopt;
}

// A metric by name ("accuracy"); a metric function ({"class_name": "function", "config":
// "binary_accuracy"}); one of Keras's accuracy classes as compile() serializes a metric
// object ({"class_name": "SparseCategoricalAccuracy", "config": {"name": ...}}); or Keras 2's
// wrapped function ({"class_name": "MeanMetricWrapper", "config": {"name": "accuracy", "fn":
// "categorical_accuracy"}}), whose accuracy goes to `c`.
std::string metric_from_keras(const json& m, const Where& w, KerasCompile& c) {
  if (m.is_string()) return m.get<std::string>();
  if (!m.is_object()) w.fail("metric " + m.dump() + " is not a name or a metric object");
  const std::string cls = text(m, "class_name", w);
  const json inner = m.value("config", json());
  if (cls == "function" && inner.is_string() && accuracy_function(inner.get<std::string>())) {
    return inner.get<std::string>();
  }
  if (cls == "MeanMetricWrapper" && inner.is_object()) {
    const std::string fn =
        inner.value("fn", json()).is_string() ? inner["fn"].get<std::string>() : std::string();
    const auto kind = accuracy_function(fn);
    if (!kind) {
      w.fail("metric function '" + fn + "' is not supported by tandem (known: " + kKnownMetrics +
             ")");
    }
    c.accuracy_kind = kind;
    return inner.value("name", json()).is_string() ? inner["name"].get<std::string>() : fn;
  }
  static const std::set<std::string> kClasses = {"CategoricalAccuracy", "SparseCategoricalAccuracy",
                                                 "BinaryAccuracy"};
  if (!kClasses.contains(cls)) {
    w.fail("metric " + cls + " is not supported by tandem (known: " + kKnownMetrics + ")");
  }
  const std::string name = snake_case(cls);
  const json config = m.value("config", json::object());
  for (const auto& [key, value] : config.items()) {
    const bool fine = (key == "name" && value == name) ||
                      (key == "threshold" && value.is_number() && value.get<double>() == 0.5) ||
                      (key == "dtype" && (value.is_null() || value == "float32")) || is_off(value);
    if (!fine) {
      w.fail("metric " + cls + ": option '" + key + "' = " + value.dump() +
             " is not supported by tandem");
    }
  }
  return name;
}

}  // namespace

std::optional<KerasCompile> compile_from_keras(const json& cc, const keras_json::Where& w) {
  if (cc.is_null()) return std::nullopt;
  const Where cw = w.at("compile_config");
  KerasCompile c;
  c.optimizer = optimizer_from_keras(member(cc, "optimizer", cw), cw);
  c.loss = loss_from_keras(member(cc, "loss", cw), cw.at("loss"));
  const json metrics = cc.value("metrics", json());
  if (metrics.is_array()) {
    for (const json& m : metrics) c.metrics.push_back(metric_from_keras(m, cw.at("metrics"), c));
  } else if (!metrics.is_null()) {
    cw.fail("metrics " + metrics.dump() + " is not a list of names");
  }
  for (const char* key : {"loss_weights", "weighted_metrics"}) {
    if (cc.contains(key) && !cc.at(key).is_null()) {
      cw.fail(std::string("'") + key + "' is not supported by tandem");
    }
  }
  return c;
}

json keras_compile_config(const KerasCompile& compile) {
  return {{"optimizer", keras_optimizer(compile.optimizer)},
          {"loss", compile.loss},
          {"loss_weights", nullptr},
          {"metrics", compile.metrics.empty() ? json() : json(compile.metrics)},
          {"weighted_metrics", nullptr},
          {"run_eagerly", false},
          {"steps_per_execution", 1},
          {"jit_compile", false}};
}

}  // namespace tandem::detail
