#include "cli/train_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "cli/atomic_write.h"
#include "cli/metrics_json.h"
#include "cli/nan_guard.h"
#include "core/output_path.h"
#include "model/model_state.h"
#include "tandem/callbacks.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/mpi.h"
#include "tandem/optimizers.h"

namespace tandem::cli {
namespace {

using SteadyClock = std::chrono::steady_clock;

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Wall time of each epoch (training and its validation), for the JSON report.
class EpochTimer : public Callback {
 public:
  void on_epoch_begin(int, const Logs&) override { start_ = SteadyClock::now(); }
  void on_epoch_end(int, const Logs&) override { seconds_.push_back(seconds_since(start_)); }
  const std::vector<double>& seconds() const { return seconds_; }

 private:
  SteadyClock::time_point start_;
  std::vector<double> seconds_;
};

// Samples fit trains on per epoch: Keras keeps the first (1 - split) of them.
int64_t trained_samples(int64_t count, double validation_split) {
  return validation_split > 0 ? static_cast<int64_t>(count * (1.0 - validation_split)) : count;
}

// "3", "3epoch(s)", "500step(s)" -> (count, unit).
std::pair<int64_t, std::string> parse_checkpoint_every(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string unit = text.substr(digits);
  const std::string count = text.substr(0, digits);
  if (count.empty() || count.size() > 12 || std::stoll(count) <= 0) {
    throw ConfigError("--checkpoint-every '" + text +
                      "': expected a positive count, then optionally epochs or steps");
  }
  if (unit.empty() || unit == "epoch" || unit == "epochs") return {std::stoll(count), "epoch"};
  if (unit == "step" || unit == "steps") return {std::stoll(count), "step"};
  throw ConfigError("--checkpoint-every '" + text + "': unknown unit '" + unit +
                    "' (epochs or steps)");
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "train", "Train the seed's model (or another MLP) on Fashion-MNIST or MNIST and test it");
  add_data_options(*cmd, o.data);
  cmd->add_option("--limit-train", o.limit_train, "Use only the first N training samples")
      ->type_name("N")
      ->check(positive_integer())
      ->group("Data");
  cmd->add_option("--limit-test", o.limit_test, "Use only the first N test samples")
      ->type_name("N")
      ->check(positive_integer())
      ->group("Data");
  add_model_shape_options(*cmd, o.shape);
  const auto compile_given = [&o](const std::string&) { o.compile_given = true; };
  cmd->add_option("--optimizer", o.optimizer,
                  "sgd, rmsprop or adam (Keras's defaults) [default for a compiled --model "
                  "file: its own, with its state]")
      ->each(compile_given)
      ->capture_default_str()
      ->group("Training");
  cmd->add_option("--lr", o.learning_rate,
                  "Learning rate [default: the optimizer's: sgd 0.01, rmsprop 0.001, adam 0.001]")
      ->each(compile_given)
      ->check(positive_number())
      ->group("Training");
  cmd->add_option("--loss", o.loss,
                  "categorical_crossentropy, sparse_categorical_crossentropy, "
                  "mean_squared_error [default for a compiled --model file: its own]")
      ->each(compile_given)
      ->capture_default_str()
      ->group("Training");
  cmd->add_option("--batch-size", o.batch_size, "Samples per step (also for predict)")
      ->check(positive_integer())
      ->capture_default_str()
      ->group("Training");
  cmd->add_option("--epochs", o.epochs, "Passes over the training data")
      ->check(positive_integer())
      ->capture_default_str()
      ->group("Training");
  cmd->add_option("--validation-split", o.validation_split,
                  "Hold out this last fraction of the training data for validation")
      ->check(fraction_below_one())
      ->capture_default_str()
      ->group("Training");
  cmd->add_option("--seed", o.seed, "Seed for weights, shuffling and dropout (repeatable runs)")
      ->type_name("N")
      ->check(unsigned_64())
      ->group("Run");
  cmd->add_option("--threads", o.threads, "CPU threads [default: every core available]")
      ->type_name("N")
      ->check(positive_integer())
      ->group("Run");
  cmd->add_option("--devices", o.devices,
                  "CPU devices for data-parallel training (each a group of cores)")
      ->check(positive_integer())
      ->capture_default_str()
      ->group("Parallel");
  cmd->add_option("--strategy", o.strategy,
                  "mirrored (a replica per device, gradients reduced during backward) or host "
                  "(keras multi_gpu_model's design, a baseline)")
      ->check(CLI::IsMember({"mirrored", "host"}))
      ->capture_default_str()
      ->group("Parallel");
  cmd->add_option("--reducer", o.reducer,
                  "mirrored on 2 or more devices in one process: sharded (each device reduces "
                  "and updates 1/N of the parameters; of every Dense layer's weight gradient, "
                  "when every layer with parameters is a Dense used once) or allreduce "
                  "(gradient buckets all-reduced, every device applies the whole update); MPI "
                  "ranks reduce hierarchically (sharded only), host and 1 device ignore it")
      ->check(CLI::IsMember({"sharded", "allreduce"}))
      ->capture_default_str()
      ->group("Parallel");
  cmd->add_option("--threads-per-device", o.threads_per_device,
                  "Threads per device [default: the available cores shared out]")
      ->type_name("N")
      ->check(positive_integer())
      ->group("Parallel");
  cmd->add_flag("--deterministic", o.deterministic,
                "Bitwise-identical weights and metrics for 1, 2 and 4 devices and any number of "
                "MPI ranks (fixed micro-shards and sum order; one thread per device, since "
                "oneDNN's results can depend on its thread count: --devices N uses N cores "
                "for the same bits)")
      ->group("Parallel");
  cmd->add_option("--bucket-mb", o.bucket_mb, "Gradient bucket size in MB for the reduction")
      ->check(positive_number())
      ->capture_default_str()
      ->group("Parallel");
  cmd->add_option("--grad-compression", o.grad_compression,
                  "Gradients cross MPI processes as: none (float32) or bf16 (half the bytes)")
      ->check(CLI::IsMember({"none", "bf16"}))
      ->capture_default_str()
      ->group("Parallel");
  cmd->add_option("--comm-timeout", o.comm_timeout,
                  "Seconds an MPI rank waits for the others before ending the job with an error")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str()
      ->group("Parallel");
  cmd->add_option("--checkpoint-dir", o.checkpoint_dir,
                  "Write checkpoints (weights, optimizer, data order, RNG) into DIR")
      ->type_name("DIR")
      ->group("Checkpoints");
  cmd->add_option("--checkpoint-every", o.checkpoint_every,
                  "How often: N or Nepochs (every N epochs), Nsteps (every N steps)")
      ->type_name("N[epochs|steps]")
      ->group("Checkpoints");
  cmd->add_option("--keep-checkpoints", o.keep_checkpoints, "How many of the newest to keep")
      ->check(positive_integer())
      ->capture_default_str()
      ->group("Checkpoints");
  cmd->add_flag("--overwrite-checkpoints", o.overwrite_checkpoints,
                "Let a fresh run replace the checkpoints already in --checkpoint-dir [default: "
                "refuse, naming them]")
      ->group("Checkpoints");
  cmd->add_option("--resume-override", o.resume_overrides,
                  "Fields a --resume may change from the checkpoint's, e.g. learning_rate or "
                  "batch_size [default: any difference is an error listing each]")
      ->delimiter(',')
      ->type_name("FIELD[,FIELD]")
      ->group("Checkpoints");
  cmd->add_flag("--resume", o.resume,
                "Continue from the newest intact checkpoint in --checkpoint-dir (none: start "
                "from the beginning)")
      ->group("Checkpoints");
  cmd->add_flag("--continue-on-nan", o.continue_on_nan,
                "Train on when the loss becomes NaN or infinite, and save the model anyway "
                "[default: stop, save nothing, exit 7]")
      ->group("Run");
  cmd->add_flag("--keep-denormals", o.keep_denormals,
                "Compute with denormal floats (below 2^-126) rather than flushing them to zero "
                "[default: flushed to zero, as TensorFlow does: optimizer state decaying through "
                "them slowed a small model's step up to 2.7x on a Xeon]")
      ->group("Run");
  cmd->add_option("--verbose", o.verbose,
                  "0 silent, 1 progress bar on a terminal (one line per epoch otherwise), "
                  "2 one line per epoch")
      ->check(CLI::Range(0, 2))
      ->capture_default_str()
      ->group("Run");
  cmd->add_option("--save", o.save_path,
                  "Save the trained model (architecture, weights, optimizer state) to PATH: "
                  "Keras 3's format for PATH.keras, tandem's otherwise")
      ->type_name("PATH")
      ->group("Output");
  cmd->add_option("--metrics-json", o.metrics_json_path,
                  "Write times, per-epoch metrics, test scores and the config as JSON to PATH")
      ->type_name("PATH")
      ->group("Output");
  cmd->add_option("--profile", o.trace_path,
                  "Write a timeline of the fit to PATH (Chrome trace JSON: per-layer forward "
                  "and backward, all-reduces, optimizer, idle; a lane per device and rank); "
                  "open it in ui.perfetto.dev or chrome://tracing")
      ->type_name("PATH")
      ->group("Output");
  return cmd;
}

int run_train(const TrainOptions& given) {
  TrainOptions o = given;  // a compiled model file may supply the optimizer and loss
  // Everything that can be wrong with the flags fails here, before the data is read.
  std::pair<int64_t, std::string> checkpoint_every{0, "epoch"};
  if (!o.checkpoint_every.empty()) {
    if (o.checkpoint_dir.empty()) throw ConfigError("--checkpoint-every needs --checkpoint-dir");
    checkpoint_every = parse_checkpoint_every(o.checkpoint_every);
  }
  if (o.resume && o.checkpoint_dir.empty()) throw ConfigError("--resume needs --checkpoint-dir");
  // Threads within what the machine can run (the library checks again; this is before the
  // data is read).
  const int64_t threads = int64_t{o.devices} * std::max(o.threads_per_device, 1);
  if (threads > max_threads()) {
    throw ConfigError("--devices " + std::to_string(o.devices) + " x --threads-per-device " +
                      std::to_string(std::max(o.threads_per_device, 1)) + " is more than " +
                      std::to_string(kOversubscription) + " threads per core (" +
                      std::to_string(available_cores()) + " cores available here)");
  }
  if (!o.resume_overrides.empty() && !o.resume)
    throw ConfigError("--resume-override needs --resume");
  if (o.overwrite_checkpoints && o.resume) {
    throw ConfigError("--overwrite-checkpoints and --resume contradict each other");
  }
  mpi::set_timeout(o.comm_timeout);
  // Several ranks: rank 0 prints and writes files; the others train silently.
  const bool writer = mpi::rank() == 0;
  Optimizer optimizer = optimizer_from_name(o.optimizer);
  if (o.learning_rate) optimizer.learning_rate = *o.learning_rate;
  if (o.threads) set_num_threads(*o.threads);
  if (o.seed) set_random_seed(*o.seed);
  if (o.keep_denormals) set_flush_denormals(false);
  Model model = build_model(o.shape, o.data);
  // A model file compiled in it (a .keras from Keras, or tandem's own) trains on with its own
  // optimizer, the optimizer's state and its loss, unless --optimizer, --lr or --loss says
  // otherwise.
  if (model.state().compiled && !o.compile_given) {
    o.optimizer = model.state().compiled->optimizer.name;
    o.loss = model.loss();
  } else {
    model.compile(optimizer, o.loss, {"accuracy"});
  }
  // Outputs: distinct files, none of them an input, each creatable, all before training.
  check_outputs_distinct({{"--save", o.save_path},
                          {"--metrics-json", o.metrics_json_path},
                          {"--profile", o.trace_path}},
                         run_inputs(o.data, o.shape));
  for (const std::string* path : {&o.save_path, &o.metrics_json_path, &o.trace_path}) {
    if (writer && !path->empty()) check_writable(*path);
  }

  const TrainTestSplit data = load_dataset(data_for_model(o.data, model));
  const LabelledImages train = first_samples(data.train, o.limit_train);
  const LabelledImages test = first_samples(data.test, o.limit_test);
  const Samples x_train = image_samples(train.x, model.input_shape()),
                x_test = image_samples(test.x, model.input_shape());
  const int classes = o.data.dataset == "synthetic" ? o.data.classes : kClasses;
  const Samples y_train = label_samples(train.y, o.loss, classes),
                y_test = label_samples(test.y, o.loss, classes);
  if (x_test.count() == 0) {
    throw ConfigError("the test split of " + o.data.dataset +
                      " is empty: nothing to test the trained model on");
  }
  if (o.verbose && writer) model.summary();

  auto epoch_timer = std::make_shared<EpochTimer>();
  auto nan_guard = std::make_shared<NanGuard>(/*stop=*/!o.continue_on_nan);
  FitOptions fit{.batch_size = o.batch_size,
                 .epochs = o.epochs,
                 .verbose = o.verbose,
                 .seed = o.seed,
                 .validation_split = o.validation_split,
                 .callbacks = {epoch_timer, nan_guard},
                 .devices = o.devices,
                 .strategy = o.strategy,
                 .threads_per_device = o.threads_per_device,
                 .deterministic = o.deterministic,
                 .bucket_bytes = static_cast<int64_t>(o.bucket_mb * (1 << 20)),
                 .reducer = o.reducer,
                 .grad_compression = o.grad_compression,
                 .checkpoint_dir = o.checkpoint_dir,
                 .checkpoint_every = checkpoint_every.first,
                 .checkpoint_unit = checkpoint_every.second,
                 .keep_checkpoints = o.keep_checkpoints,
                 .resume = o.resume,
                 .resume_overrides = o.resume_overrides,
                 .overwrite_checkpoints = o.overwrite_checkpoints,
                 .trace_path = o.trace_path};
  auto start = SteadyClock::now();
  const History history = model.fit(x_train, y_train, fit);
  if (nan_guard->first_bad() && !o.continue_on_nan) {
    throw NumericError("the loss became NaN or infinite at " + *nan_guard->first_bad() +
                       "; training stopped and nothing was saved (try a lower --lr, or "
                       "--continue-on-nan to train on and save anyway)");
  }
  TrainReport report{.history = history, .epoch_seconds = epoch_timer->seconds()};
  report.train_seconds = seconds_since(start);
  report.phase_seconds = model.run_times().phase_seconds;
  report.train_steps = model.run_times().train_steps;
  report.ranks = mpi::size();
  if (!writer) {
    // The trained weights are rank 0's too; evaluation and files are rank 0's business.
    return 0;
  }
  if (mpi::size() > 1) {
    fmt::print("fit: {:.3f} s ({} ranks x {} device{})\n", report.train_seconds, mpi::size(),
               o.devices, o.devices > 1 ? "s" : "");
  } else if (o.devices == 1) {
    fmt::print("fit: {:.3f} s (1 device, {} threads)\n", report.train_seconds,
               o.threads_per_device > 0 ? o.threads_per_device : num_threads());
  } else {
    fmt::print("fit: {:.3f} s ({} devices, {})\n", report.train_seconds, o.devices, o.strategy);
  }

  // The trained model is saved before anything else can fail.
  if (!o.save_path.empty()) {
    if (const auto bad = non_finite_weight(model)) {
      fmt::print(stderr, "tandem: warning: saving a model whose {} holds NaN or infinities\n",
                 *bad);
    }
    model.save(o.save_path);
    if (o.verbose) fmt::print("saved model to {}\n", o.save_path);
  }
  start = SteadyClock::now();
  model.predict(x_test, {.batch_size = o.batch_size});
  report.predict_seconds = seconds_since(start);
  fmt::print("predict: {:.3f} s\n", report.predict_seconds);

  report.test_scores = model.evaluate(x_test, y_test, {.batch_size = o.batch_size, .verbose = 0});
  if (report.test_scores.count("accuracy")) {
    fmt::print("test loss {:.4f}, test accuracy {:.4f}\n", report.test_scores["loss"],
               report.test_scores["accuracy"]);
  } else {
    fmt::print("test loss {:.4f}\n", report.test_scores["loss"]);
  }

  report.train_samples = trained_samples(x_train.count(), o.validation_split);
  report.validation_samples = x_train.count() - report.train_samples;
  report.test_samples = x_test.count();
  report.parameters = model.count_params();
  report.learning_rate = model.learning_rate();  // what was used (a resume keeps the checkpoint's)
  report.threads = num_threads();

  if (!o.trace_path.empty() && o.verbose) fmt::print("wrote the timeline to {}\n", o.trace_path);
  if (!o.metrics_json_path.empty()) {
    write_text_atomically(o.metrics_json_path, train_report_json(o, report).dump(2) + "\n");
    if (o.verbose) fmt::print("wrote metrics to {}\n", o.metrics_json_path);
  }
  return 0;
}

}  // namespace tandem::cli
