// `tandem summary`: Keras's summary table of a saved model (--model) or of the model that
// `tandem train` would build from the same --layers / --activation.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/options.h"

namespace tandem::cli {

struct SummaryOptions {
  ModelShapeOptions shape;  // --model (a name or a path), else --layers
  DataOptions data;
};

CLI::App* add_summary_command(CLI::App& app, SummaryOptions& options);
int run_summary(const SummaryOptions& options);

}  // namespace tandem::cli
