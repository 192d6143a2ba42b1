#include "cli/summary_command.h"

#include <iostream>

namespace tandem::cli {

CLI::App* add_summary_command(CLI::App& app, SummaryOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "summary", "Print the layers and parameter counts of a saved model or of a train model");
  add_model_shape_options(*cmd, o.shape);
  add_data_options(*cmd, o.data);  // the input shape and classes a built-in model is made for
  return cmd;
}

int run_summary(const SummaryOptions& o) {
  const Model model = build_model(o.shape, o.data);
  model.summary(std::cout);
  return 0;
}

}  // namespace tandem::cli
