// What the Keras config translators share: errors that name the file, its part and the
// layer, and the checks of a JSON value that Keras's configs need. Internal to model/keras.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/error.h"

namespace tandem::detail::keras_json {

using nlohmann::json;

// Errors name the file, config.json and the part: "m.keras: config.json: layer 'c' (Conv2D):
// option 'groups' = 2 is not supported by tandem".
struct Where {
  std::string path;
  std::string source;  // "config.json", or a .h5 file's "model_config"
  std::string part;
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(path, source + ": " + (part.empty() ? "" : part + ": ") + what);
  }
  Where at(const std::string& more) const {
    return {path, source, part.empty() ? more : part + ": " + more};
  }
};

// Keras's "off" for an option: null, false, or 0 (Keras 2's decay: 0.0).
inline bool is_off(const json& v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
         (v.is_number() && v.get<double>() == 0);
}

inline const json& member(const json& object, const char* key, const Where& w) {
  if (!object.is_object() || !object.contains(key)) w.fail(std::string("has no '") + key + "'");
  return object.at(key);
}

inline std::string text(const json& object, const char* key, const Where& w) {
  const json& v = member(object, key, w);
  if (!v.is_string()) w.fail(std::string("'") + key + "' is not a string");
  return v.get<std::string>();
}

inline bool contains(const std::vector<const char*>& list, const std::string& key) {
  for (const char* k : list) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace tandem::detail::keras_json
