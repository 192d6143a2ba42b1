#include "advise/profile_fields.h"

#include "tandem/error.h"

namespace tandem::detail {

using json = nlohmann::json;

double positive_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_number()) {
    throw ConfigError(where + ": missing number '" + key + "'");
  }
  const double v = j.at(key).get<double>();
  if (!(v > 0)) {
    throw ConfigError(where + ": '" + key + "' must be > 0, got " + j.at(key).dump());
  }
  return v;
}

double non_negative_field(const json& j, const char* key, const std::string& where,
                          double fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_number() || !(j.at(key).get<double>() >= 0)) {
    throw ConfigError(where + ": '" + key + "' must be a number >= 0, got " + j.at(key).dump());
  }
  return j.at(key).get<double>();
}

const json& object_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_object()) {
    throw ConfigError(where + ": missing object '" + key + "'");
  }
  return j.at(key);
}

int count_field(const json& j, const char* key, const std::string& where, int fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number() || v.get<double>() < 1 || v.get<double>() > 1e6 ||
      v.get<double>() != static_cast<double>(static_cast<int>(v.get<double>()))) {
    throw ConfigError(where + ": '" + key + "' must be a whole number >= 1, got " + v.dump());
  }
  return static_cast<int>(v.get<double>());
}

std::string text_field(const json& j, const char* key, const std::string& where,
                       const std::string& fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_string()) {
    throw ConfigError(where + ": '" + key + "' must be a string, got " + j.at(key).dump());
  }
  return j.at(key).get<std::string>();
}

bool flag_field(const json& j, const char* key, const std::string& where, bool fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_boolean()) {
    throw ConfigError(where + ": '" + key + "' must be true or false, got " + j.at(key).dump());
  }
  return j.at(key).get<bool>();
}

void check_whole_number(const json& j, const char* key, const std::string& where, double most,
                        bool required) {
  if (!j.contains(key)) {
    if (required) throw ConfigError(where + ": missing whole number '" + key + "'");
    return;
  }
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<double>() < 1 || v.get<double>() > most) {
    throw ConfigError(where + ": '" + key + "' must be a whole number in [1, " +
                      std::to_string(static_cast<int64_t>(most)) + "], got " + v.dump());
  }
}

int64_t ascending_size(const json& c, const char* key, int64_t previous, const std::string& where) {
  if (!c.is_object() || !c.contains(key) || !c.at(key).is_number_integer() ||
      c.at(key).get<int64_t>() < 1) {
    throw ConfigError(where + ": each entry needs '" + key + "', a whole number >= 1");
  }
  const int64_t size = c.at(key).get<int64_t>();
  if (previous > 0 && size <= previous) {
    throw ConfigError(where + ": entries must ascend in '" + key + "', got " +
                      std::to_string(size) + " after " + std::to_string(previous));
  }
  return size;
}

std::vector<int64_t> whole_numbers(const json& c, const char* key, size_t n, int64_t least,
                                   const std::string& where) {
  if (!c.contains(key) || !c.at(key).is_array() || c.at(key).size() != n) {
    throw ConfigError(where + ": '" + key + "' must be an array of " + std::to_string(n) +
                      " whole numbers");
  }
  std::vector<int64_t> out;
  for (const json& v : c.at(key)) {
    if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > (1 << 20)) {
      throw ConfigError(where + ": '" + key + "' must hold whole numbers >= " +
                        std::to_string(least) + ", got " + c.at(key).dump());
    }
    out.push_back(v.get<int64_t>());
  }
  return out;
}

}  // namespace tandem::detail
