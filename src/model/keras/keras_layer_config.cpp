#include "model/keras/keras_layer_config.h"

namespace tandem::detail {
namespace {

using namespace keras_json;

// ---- initializers: Keras's {"class_name": "GlorotUniform", "config": {...}} or a name ----

struct InitializerName {
  const char* keras;
  const char* tandem;
};
constexpr InitializerName kInitializers[] = {
    {"GlorotUniform", "glorot_uniform"},
    {"GlorotNormal", "glorot_normal"},
    {"HeNormal", "he_normal"},
    {"HeUniform", "he_uniform"},
    {"RandomNormal", "random_normal"},
    {"RandomUniform", "random_uniform"},
    {"Zeros", "zeros"},
    {"Ones", "ones"},
};

// Keras's defaults for the configs of the initializers tandem has: other values of these
// keys change the draw, which tandem does not do.
json initializer_defaults(const std::string& keras) {
  if (keras == "RandomNormal") return {{"mean", 0.0}, {"stddev", 0.05}};
  if (keras == "RandomUniform") return {{"minval", -0.05}, {"maxval", 0.05}};
  return json::object();
}

std::string initializer_from_keras(const json& v, const Where& w) {
  if (v.is_string()) {
    const std::string name = v.get<std::string>();
    for (const auto& i : kInitializers) {
      if (name == i.tandem || name == i.keras) return i.tandem;
    }
    w.fail("initializer '" + name + "' is not supported by tandem");
  }
  const std::string cls = text(v, "class_name", w);
  const InitializerName* found = nullptr;
  for (const auto& i : kInitializers) {
    if (cls == i.keras) found = &i;
  }
  if (!found) w.fail("initializer " + cls + " is not supported by tandem");
  const json config = v.value("config", json::object());
  const json defaults = initializer_defaults(cls);
  for (const auto& [key, value] : config.items()) {
    if (key == "seed") continue;  // the weights come from the file, not from a draw
    if (defaults.contains(key)) {
      if (!value.is_number() || value.get<double>() != defaults.at(key).get<double>()) {
        w.fail("initializer " + cls + ": " + key + " = " + value.dump() +
               " is not supported by tandem (only " + defaults.at(key).dump() + ")");
      }
    } else if (!is_off(value)) {
      w.fail("initializer " + cls + ": option '" + key + "' = " + value.dump() +
             " is not supported by tandem");
    }
  }
  return found->tandem;
}

json keras_initializer(const std::string& tandem) {
  for (const auto& i : kInitializers) {
    if (tandem == i.tandem) {
      json config = initializer_defaults(i.keras);
      if (tandem != "zeros" && tandem != "ones") config["seed"] = nullptr;
      return {{"module", "keras.initializers"},
              {"class_name", i.keras},
              {"config", config},
              {"registered_name", nullptr}};
    }
  }
  throw Error("keras_config: initializer '" + tandem + "' has no Keras class");
}

// ---- layers ----

const json kFloat32Policy = {{"module", "keras"},
                             {"class_name", "DTypePolicy"},
                             {"config", {{"name", "float32"}}},
                             {"registered_name", nullptr}};

// The keys each layer type reads from a tandem config, the ones Keras holds that tandem
// reads only as a fixed value, and the ones tandem ignores (they change nothing it does).
struct LayerKeys {
  const char* type;
  std::vector<const char*> tandem;
  std::vector<std::pair<const char*, json>> fixed;  // Keras's value tandem implements
  std::vector<const char*> ignored;
};

const std::vector<LayerKeys>& layer_keys() {
  static const std::vector<LayerKeys> keys = {
      {"InputLayer",
       {},
       {{"sparse", false}, {"ragged", false}, {"optional", false}},
       {"batch_shape", "batch_input_shape"}},  // read below
      {"Dense",
       {"units", "activation", "use_bias", "kernel_initializer", "bias_initializer"},
       {},
       {}},
      {"Conv2D",
       {"filters", "kernel_size", "strides", "padding", "dilation_rate", "activation", "use_bias",
        "kernel_initializer", "bias_initializer"},
       {{"data_format", "channels_last"}, {"groups", 1}},
       {}},
      {"MaxPooling2D", {"pool_size", "strides", "padding"}, {{"data_format", "channels_last"}}, {}},
      {"AveragePooling2D",
       {"pool_size", "strides", "padding"},
       {{"data_format", "channels_last"}},
       {}},
      {"GlobalAveragePooling2D", {}, {{"data_format", "channels_last"}, {"keepdims", false}}, {}},
      {"ZeroPadding2D", {"padding"}, {{"data_format", "channels_last"}}, {}},
      {"Flatten", {}, {{"data_format", "channels_last"}}, {}},
      {"Reshape", {"target_shape"}, {}, {}},
      {"Dropout", {"rate"}, {}, {"seed"}},  // tandem's masks come from the fit's seed
      {"Activation", {"activation"}, {}, {}},
      {"Add", {}, {}, {}},
      {"Concatenate", {"axis"}, {}, {}},
      {"BatchNormalization",
       {"axis", "momentum", "epsilon", "center", "scale", "synchronized", "beta_initializer",
        "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer"},
       {},
       {"renorm_momentum"}},  // used only with renorm, which must be off
  };
  return keys;
}

const LayerKeys* keys_of(const std::string& type) {
  for (const LayerKeys& k : layer_keys()) {
    if (type == k.type) return &k;
  }
  return nullptr;
}

bool is_initializer_key(const std::string& key) {
  return key.size() > 12 && key.compare(key.size() - 12, 12, "_initializer") == 0;
}

// A float32 dtype, as a policy object or a name ("mixed_float16" and others are not).
void check_dtype(const json& dtype, const Where& w) {
  if (dtype.is_null()) return;
  std::string name;
  if (dtype.is_string()) {
    name = dtype.get<std::string>();
  } else if (dtype.is_object() && dtype.value("config", json::object()).is_object()) {
    name = dtype.value("config", json::object()).value("name", "");
  }
  if (name != "float32") {
    w.fail("dtype " + dtype.dump() + " is not supported by tandem (float32 only)");
  }
}

// A Keras layer config as tandem's: its keys, translated and checked.

// tandem's layer config as Keras's: every key Keras writes, tandem's values where it has them.

}  // namespace

json layer_config_from_keras(const std::string& type, const json& keras,
                             const keras_json::Where& w) {
  const LayerKeys* keys = keys_of(type);
  if (!keys) {
    std::string known;
    for (const LayerKeys& k : layer_keys())
      known += (known.empty() ? "" : ", ") + std::string(k.type);
    w.fail("class " + type + " is not supported by tandem (it has " + known + ")");
  }
  if (!keras.is_object()) w.fail("'config' is not an object");
  json out = json::object();
  for (const auto& [key, value] : keras.items()) {
    if (key == "name") {
      if (!value.is_string()) w.fail("'name' is not a string");
      out["name"] = value;
    } else if (key == "dtype") {
      check_dtype(value, w);
    } else if (key == "trainable") {
      if (value != json(true))
        w.fail("trainable = false (frozen layers) is not supported by tandem");
    } else if (contains(keys->tandem, key)) {
      if (is_initializer_key(key)) {
        out[key] = initializer_from_keras(value, w.at(key));
      } else if (key == "activation" && !value.is_string()) {
        w.fail("activation " + value.dump() + " is not supported by tandem (a name only)");
      } else {
        out[key] = value;
      }
    } else if (contains(keys->ignored, key)) {
      continue;
    } else {
      bool fixed = false;
      for (const auto& [k, v] : keys->fixed) {
        if (key == k) {
          if (value != v && !value.is_null()) {
            w.fail("option '" + key + "' = " + value.dump() + " is not supported by tandem (only " +
                   v.dump() + ")");
          }
          fixed = true;
        }
      }
      if (!fixed && !is_off(value)) {
        w.fail("option '" + key + "' = " + value.dump() + " is not supported by tandem");
      }
    }
  }
  if (type == "InputLayer") {
    const json shape = keras.contains("batch_shape")         ? keras.at("batch_shape")
                       : keras.contains("batch_input_shape") ? keras.at("batch_input_shape")
                                                             : json();
    if (!shape.is_array() || shape.empty()) w.fail("has no batch_shape");
    json per_sample = json::array();
    for (size_t i = 1; i < shape.size(); ++i) {
      if (!shape[i].is_number_integer()) {
        w.fail("batch_shape " + shape.dump() +
               ": every axis but the batch must have a size (tandem needs fixed shapes)");
      }
      per_sample.push_back(shape[i]);
    }
    out["shape"] = per_sample;
  }
  if (type == "BatchNormalization" && keras.contains("renorm") && !is_off(keras.at("renorm"))) {
    w.fail("option 'renorm' is not supported by tandem");
  }
  return out;
}

json shape_with_batch(const Shape& shape) {
  json s = json::array({nullptr});
  for (int64_t d : shape) s.push_back(d);
  return s;
}

json keras_layer_config(const LayerImpl& layer, const Shape& input_shape) {
  const std::string type = layer.type();
  const json c = layer.config();
  json out = {{"name", layer.name}};
  if (type == "InputLayer") {
    return {{"batch_shape", shape_with_batch(input_shape)},
            {"dtype", "float32"},
            {"sparse", false},
            {"ragged", false},
            {"name", layer.name},
            {"optional", false}};
  }
  out["trainable"] = true;
  out["dtype"] = kFloat32Policy;
  const LayerKeys* keys = keys_of(type);
  if (!keys) throw Error("keras_config: layer type " + type + " has no Keras class");
  for (const char* key : keys->tandem) {
    if (!c.contains(key)) continue;
    out[key] =
        is_initializer_key(key) ? keras_initializer(c.at(key).get<std::string>()) : c.at(key);
  }
  for (const auto& [key, value] : keys->fixed) out[key] = value;
  if (type == "Dense" || type == "Conv2D") {
    for (const char* key :
         {"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"}) {
      out[key] = nullptr;
    }
  }
  if (type == "Conv2D") out["activity_regularizer"] = nullptr;
  if (type == "Dropout") out["seed"] = nullptr, out["noise_shape"] = nullptr;
  if (type == "BatchNormalization") {
    for (const char* key :
         {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) {
      out[key] = nullptr;
    }
    out["renorm"] = false;
    out["renorm_clipping"] = nullptr;
    out["renorm_momentum"] = 0.99;
  }
  return out;
}

}  // namespace tandem::detail
