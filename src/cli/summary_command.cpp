#include "cli/summary_command.h"

#include <iostream>

namespace tandem::cli {

CLI::App* add_summary_command(CLI::App& app, SummaryOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "summary", "Print the layers and parameter counts of a saved model or of a train model");
  CLI::Option* model = cmd->add_option("--model", o.model_path,
                                       "A model saved by `tandem train "
                                       "--save`")
                           ->type_name("PATH");
  add_model_shape_options(*cmd, o.shape);
  model->excludes(cmd->get_option("--layers"))->excludes(cmd->get_option("--activation"));
  return cmd;
}

int run_summary(const SummaryOptions& o) {
  const Model model = o.model_path.empty() ? build_model(o.shape) : Model::load(o.model_path);
  model.summary(std::cout);
  return 0;
}

}  // namespace tandem::cli
