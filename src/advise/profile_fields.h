// A hardware profile's typed fields, read from its JSON: each error names where (the file and
// its section, `where`) and the key, and says what the field must be.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::detail {

// The number under `key`, > 0; ConfigError naming `where` and the key otherwise.
double positive_field(const nlohmann::json& j, const char* key, const std::string& where);

// The number under `key`, >= 0, or `fallback` where it is absent.
double non_negative_field(const nlohmann::json& j, const char* key, const std::string& where,
                          double fallback);

// The object under `key`.
const nlohmann::json& object_field(const nlohmann::json& j, const char* key,
                                   const std::string& where);

// The count under `key`, a whole number in [1, 1e6], or `fallback` where it is absent.
int count_field(const nlohmann::json& j, const char* key, const std::string& where, int fallback);

// The string under `key`, or `fallback` where it is absent.
std::string text_field(const nlohmann::json& j, const char* key, const std::string& where,
                       const std::string& fallback);

// true or false under `key`, or `fallback` where it is absent.
bool flag_field(const nlohmann::json& j, const char* key, const std::string& where, bool fallback);

// A whole number in [1, most], or absent when `required` is false.
void check_whole_number(const nlohmann::json& j, const char* key, const std::string& where,
                        double most, bool required);

// An entry of a list measured at ascending sizes: its `key` ('floats', 'rows'), a whole
// number >= 1 above the previous entry's (`previous`; 0 before the first).
int64_t ascending_size(const nlohmann::json& c, const char* key, int64_t previous,
                       const std::string& where);

// Whole numbers >= `least` in an array of `n` under `key` of a conv_shapes entry.
std::vector<int64_t> whole_numbers(const nlohmann::json& c, const char* key, size_t n,
                                   int64_t least, const std::string& where);

}  // namespace tandem::detail
