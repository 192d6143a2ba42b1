#include "parallel/kinds.h"

#include <array>
#include <utility>

#include "tandem/error.h"

namespace tandem::detail {
namespace {

// One table per set: the names, in the enum's order.
template <class Kind, size_t N>
Kind parse(const std::string& name, const std::array<const char*, N>& names, const char* what) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<Kind>(i);
  }
  std::string known;
  for (const char* n : names) known += (known.empty() ? "" : ", ") + std::string(n);
  throw ConfigError("unknown " + std::string(what) + " '" + name + "' (known: " + known + ")");
}

constexpr std::array<const char*, 2> kStrategies = {"mirrored", "host"};
constexpr std::array<const char*, 2> kReducers = {"sharded", "allreduce"};
constexpr std::array<const char*, 2> kCompressions = {"none", "bf16"};
constexpr std::array<const char*, 2> kUnits = {"epoch", "step"};
constexpr std::array<const char*, 2> kAllreduces = {"ring", "tree"};

}  // namespace

StrategyKind parse_strategy(const std::string& n) {
  return parse<StrategyKind>(n, kStrategies, "strategy");
}
ReducerKind parse_reducer(const std::string& n) {
  return parse<ReducerKind>(n, kReducers, "reducer");
}
GradCompression parse_grad_compression(const std::string& n) {
  return parse<GradCompression>(n, kCompressions, "grad_compression");
}
CheckpointUnit parse_checkpoint_unit(const std::string& n) {
  return parse<CheckpointUnit>(n, kUnits, "checkpoint_unit");
}

AllreduceKind parse_allreduce(const std::string& n) {
  return parse<AllreduceKind>(n, kAllreduces, "all-reduce");
}

const char* name_of(StrategyKind k) {
  return kStrategies[static_cast<size_t>(k)];
}
const char* name_of(ReducerKind k) {
  return kReducers[static_cast<size_t>(k)];
}
const char* name_of(GradCompression k) {
  return kCompressions[static_cast<size_t>(k)];
}
const char* name_of(CheckpointUnit k) {
  return kUnits[static_cast<size_t>(k)];
}
const char* name_of(AllreduceKind k) {
  return kAllreduces[static_cast<size_t>(k)];
}

}  // namespace tandem::detail
