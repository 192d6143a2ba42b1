// What `tandem bench validate` measures: its models, batches and configurations (one
// device, then N devices under each strategy and reducer, or R ranks under mpirun) and the
// 1-device rows each model's rate curve is measured again at, from its options, checked
// against the profile and the ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "advise/hardware_profile.h"
#include "cli/validate_command.h"
#include "parallel/kinds.h"
#include "parallel/world.h"

namespace tandem::cli {

// The configurations measured for each model and batch: one device, then N devices under
// each strategy and reducer, or (under mpirun) R ranks of one device each.
struct ValidationKind {
  std::string name;
  int devices;  // 1, or the --devices count
  detail::StrategyKind strategy;
  detail::ReducerKind reducer;
  bool deterministic;
  int ranks = 1;
  bool bf16 = false;
  double bucket_mb = 0;  // 0: the default bucket size
};

struct ValidationPlan {
  std::vector<std::vector<int64_t>> models;  // widths: Input(784), the hidden ones, Dense(10)
  std::vector<int64_t> batches;
  std::vector<ValidationKind> kinds;  // kinds[0]: one device, each model and batch's speedup base
  int n = 1;                          // devices of the multi-device configurations (1 under mpirun)
  int ranks = 1;
  bool reporter = true;                   // measures the 1-device runs and reports: rank 0
  std::vector<int64_t> calibration_rows;  // none: the profile's curves as they are

  // As the table names it: "1 device", "2 devices mirrored (sharded)", "2 ranks bf16".
  std::string config_name(const ValidationKind& kind) const;
};

// The plan of a run on `world` (null: one process); ConfigError naming the option that
// cannot be measured with this profile.
ValidationPlan plan_validation(const ValidateOptions& options,
                               const detail::HardwareProfile& hardware, detail::World* world);

}  // namespace tandem::cli
