// Start-up check of a multi-process fit: every rank must run the same job (model,
// optimizer, batch size, data, options), or the ranks would silently train different
// things. Each rank contributes one value per field (a hash for the large ones); a
// mismatch is a ConfigError on every rank naming the ranks, hosts and fields that differ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/world.h"

namespace tandem::detail {

struct JobField {
  std::string name;  // "batch size", "training data (x)"
  uint64_t value = 0;
  bool hashed = false;  // a hash: the message says "differs", not the two values
};

uint64_t hash_text(const std::string& text);

void check_same_job(World& world, const std::vector<JobField>& fields);

}  // namespace tandem::detail
