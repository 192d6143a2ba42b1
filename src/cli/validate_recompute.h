// `tandem bench validate --recompute RUN.json ...`: committed runs' measurements against this
// build's predictions, nothing measured.
#pragma once

#include <vector>

#include "advise/validation.h"
#include "cli/validate_command.h"

namespace tandem::cli {

// The runs in options.recompute, each from its own profile or --hardware: one run's table
// (and --json: the run with these predictions), or several runs' under the majority rule;
// the exit code (1 on a miss).
int recompute_validation_runs(const ValidateOptions& options);

// Prints the misses and returns the exit code: 0 when every row is within its tolerances.
int report_misses(const std::vector<detail::ValidationRow>& rows,
                  const detail::Tolerances& tolerances);

}  // namespace tandem::cli
