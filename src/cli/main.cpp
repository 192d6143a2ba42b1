// tandem: the command-line tool. Parses the subcommand, runs it, and is the one place that
// turns errors into messages and exit codes:
//   0 ok, 1 other error, 2 bad option or configuration, 3 file not readable / writable or
//   malformed, 4 shapes that do not fit, 5 failure inside a backend library, 6 another MPI
//   rank died or stopped answering; CLI11's own codes (>= 100) for command lines it cannot
//   parse.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "cli/advise_command.h"
#include "cli/bench_command.h"
#include "cli/calibrate_command.h"
#include "cli/eval_commands.h"
#include "cli/kernels_command.h"
#include "cli/summary_command.h"
#include "cli/train_command.h"
#include "cli/typo_hint.h"
#include "cli/validate_command.h"
#include "core/denormals.h"
#include "tandem/error.h"
#include "tandem/mpi.h"

namespace {

enum ExitCode {
  kOk = 0,
  kOther = 1,
  kConfig = 2,
  kIo = 3,
  kShape = 4,
  kBackend = 5,
  kComm = 6,
  kNumeric = 7
};

// In a job of several MPI ranks every message names the rank and host, and an error ends
// the whole job (the other ranks would otherwise wait for this one).
int report(const char* message, int code) {
  std::fflush(stdout);  // keep what was printed before the error in order
  if (tandem::mpi::size() > 1) {
    const std::string who = tandem::mpi::describe();
    const bool named = std::string_view(message).starts_with(who);  // CommErrors name it
    std::fprintf(stderr, "tandem: error: %s%s%s\n", named ? "" : who.c_str(), named ? "" : ": ",
                 message);
    tandem::mpi::abort(code);
  }
  std::fprintf(stderr, "tandem: error: %s\n", message);
  return code;
}

int run(int argc, char** argv) {
  CLI::App app("tandem: Keras-shaped neural-network training on oneDNN", "tandem");
  app.require_subcommand(0, 1);  // none: help and exit code 2, below

  tandem::cli::TrainOptions train_options;
  tandem::cli::SavedModelRunOptions evaluate_options, predict_options;
  tandem::cli::SummaryOptions summary_options;
  tandem::cli::AdviseOptions advise_options;
  tandem::cli::BenchOptions bench_options;
  tandem::cli::CalibrateOptions calibrate_options;
  tandem::cli::ValidateOptions validate_options;
  tandem::cli::KernelsOptions kernels_options;
  const CLI::App* train = tandem::cli::add_train_command(app, train_options);
  const CLI::App* evaluate = tandem::cli::add_evaluate_command(app, evaluate_options);
  const CLI::App* predict = tandem::cli::add_predict_command(app, predict_options);
  const CLI::App* summary = tandem::cli::add_summary_command(app, summary_options);
  const CLI::App* advise = tandem::cli::add_advise_command(app, advise_options);
  CLI::App* bench = tandem::cli::add_bench_command(app, bench_options);
  const CLI::App* validate =
      tandem::cli::add_validate_command(*bench->get_parent(), validate_options);
  const CLI::App* kernels = tandem::cli::add_kernels_command(*bench->get_parent(), kernels_options);
  const CLI::App* calibrate = tandem::cli::add_calibrate_command(app, calibrate_options);
  // After the subcommands, so that only the top level has it.
  app.set_help_all_flag("--help-all", "Print help for every subcommand and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all
    // The same form and exit code as tandem's own errors, with the nearest name for a typo.
    return report((e.what() + tandem::cli::typo_hint(app, argc, argv)).c_str(), kConfig);
  }
  tandem::cli::resolve_input_shape(train_options.data, train_options.shape);
  tandem::cli::resolve_input_shape(summary_options.data, summary_options.shape);
  if (train->parsed()) return tandem::cli::run_train(train_options);
  if (evaluate->parsed()) return tandem::cli::run_evaluate(evaluate_options);
  if (predict->parsed()) return tandem::cli::run_predict(predict_options);
  if (summary->parsed()) return tandem::cli::run_summary(summary_options);
  if (advise->parsed()) return tandem::cli::run_advise(advise_options);
  if (bench->parsed()) return tandem::cli::run_bench(bench_options);
  if (validate->parsed()) return tandem::cli::run_validate(validate_options);
  if (kernels->parsed()) return tandem::cli::run_kernels(kernels_options);
  if (calibrate->parsed()) return tandem::cli::run_calibrate(calibrate_options);
  std::fputs(app.help().c_str(), stderr);
  return report(
      "no subcommand given: train, evaluate, predict, summary, advise, bench or calibrate",
      kConfig);
}

}  // namespace

int main(int argc, char** argv) {
  // The tool's own thread (and every thread it starts) computes as fit does: probes and
  // benches measure what training runs (core/denormals.h).
  tandem::detail::set_thread_denormals(tandem::detail::compute_denormals());
  try {
    // Started by mpirun (or another MPI launcher): one rank of a multi-process job.
    if (tandem::mpi::launched()) tandem::mpi::init(argc, argv);
    const int code = run(argc, argv);
    // A rank that stops early (a bad flag) must not leave the others waiting for it.
    if (code != 0 && tandem::mpi::size() > 1) tandem::mpi::abort(code);
    tandem::mpi::finalize();
    return code;
  } catch (const tandem::CommError& e) {
    return report(e.what(), kComm);
  } catch (const tandem::ConfigError& e) {
    return report(e.what(), kConfig);
  } catch (const tandem::IoError& e) {
    return report(e.what(), kIo);
  } catch (const tandem::FormatError& e) {
    return report(e.what(), kIo);
  } catch (const tandem::ShapeError& e) {
    return report(e.what(), kShape);
  } catch (const tandem::NumericError& e) {
    return report(e.what(), kNumeric);
  } catch (const tandem::BackendError& e) {
    return report(e.what(), kBackend);
  } catch (const std::bad_alloc&) {
    // Readers and the model's set-up name what they allocate; this is anything else.
    return report(
        "out of memory (an allocation failed outside the checked paths); try a smaller "
        "--batch-size, fewer --devices or a smaller model",
        kOther);
  } catch (const std::exception& e) {
    return report(e.what(), kOther);
  }
}
