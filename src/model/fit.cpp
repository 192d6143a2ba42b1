// Model::fit: epochs of shuffled batches through a Strategy, with Keras's logs, progress,
// validation and callbacks; across MPI ranks when tandem::mpi::init ran; with checkpoints
// and resume.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <numeric>

#include "core/atomic_file.h"
#include "core/output_path.h"
#include "model/checkpoint.h"
#include "model/data_checks.h"
#include "model/evaluation.h"
#include "model/job_check.h"
#include "model/progress.h"
#include "parallel/kinds.h"
#include "parallel/strategy.h"
#include "profile/trace.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/model.h"

namespace tandem {
namespace {

// The fit's fixed choices, parsed once from FitOptions' names.
struct FitChoices {
  detail::StrategyKind strategy;
  detail::ReducerKind reducer;
  detail::GradCompression compression;
  detail::CheckpointUnit checkpoint_unit;
};

FitChoices check_fit_options(const FitOptions& o) {
  detail::check_batch_size(o.batch_size, "fit");
  if (o.epochs < 0) throw ConfigError("fit: epochs must be >= 0, got " + std::to_string(o.epochs));
  if (o.initial_epoch < 0 || o.initial_epoch > o.epochs) {
    throw ConfigError("fit: initial_epoch must be in [0, epochs]");
  }
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0)) {
    throw ConfigError("fit: validation_split must be in [0, 1), got " +
                      std::to_string(o.validation_split));
  }
  if (o.verbose < 0 || o.verbose > 2) throw ConfigError("fit: verbose must be 0, 1 or 2");
  const FitChoices choices{.strategy = detail::parse_strategy(o.strategy),
                           .reducer = detail::parse_reducer(o.reducer),
                           .compression = detail::parse_grad_compression(o.grad_compression),
                           .checkpoint_unit = detail::parse_checkpoint_unit(o.checkpoint_unit)};
  if (choices.compression == detail::GradCompression::bf16 && o.deterministic) {
    throw ConfigError(
        "fit: bf16 gradient compression rounds gradients, so it cannot be "
        "deterministic; drop one of them");
  }
  if (o.checkpoint_every < 0) {
    throw ConfigError("fit: checkpoint_every must be >= 0, got " +
                      std::to_string(o.checkpoint_every));
  }
  if ((o.checkpoint_every > 0 || o.resume) && o.checkpoint_dir.empty()) {
    throw ConfigError("fit: checkpoints and resume need checkpoint_dir");
  }
  return choices;
}

// Fails before training when the trace could not be written afterwards.
// Every rank's events to rank 0, which writes the file.
void write_trace(const detail::Tracer& tracer, detail::World* world, bool writer,
                 const std::string& path) {
  const int rank = world ? world->rank() : 0;
  const std::string mine = tracer.events_json(rank, world ? world->describe() : "tandem");
  const std::vector<std::string> arrays = world ? world->gather(mine, 0) : std::vector{mine};
  if (writer) write_file_atomically(path, detail::trace_file_json(arrays));
}

// What every rank of a job must agree on.
std::vector<detail::JobField> job_fields(const detail::ModelState& s, const Samples& x,
                                         const detail::DataFingerprints& data,
                                         const std::optional<std::pair<Samples, Samples>>& val,
                                         const FitOptions& o) {
  using detail::hash_text;
  const Optimizer& opt = s.compiled->optimizer;
  // Every figure exactly (17 significant digits), so an epsilon of 1e-7 and 1e-8 differ.
  std::string optimizer = opt.name + (opt.nesterov ? " nesterov" : "");
  for (double v : {opt.learning_rate, opt.momentum, opt.rho, opt.beta_1, opt.beta_2, opt.epsilon}) {
    char text[32];
    std::snprintf(text, sizeof text, " %.17g", v);
    optimizer += text;
  }
  auto u = [](auto v) { return static_cast<uint64_t>(v); };
  return {
      {"model architecture", hash_text(s.graph->to_json().dump()), true},
      {"optimizer", hash_text(optimizer), true},
      {"loss", hash_text(detail::loss_name(s.compiled->loss.kind())), true},
      {"batch size", u(o.batch_size)},
      {"epochs", u(o.epochs)},
      {"initial epoch", u(o.initial_epoch)},
      {"training samples", u(x.count())},
      {"training data (x)", data.x, true},
      {"training targets (y)", data.y, true},
      {"validation samples", u(val ? val->first.count() : 0)},
      {"validation data", val ? val->first.fingerprint() ^ val->second.fingerprint() : 0, true},
      {"shuffle", u(o.shuffle)},
      {"devices per rank", u(o.devices)},
      {"deterministic", u(o.deterministic)},
      {"gradient compression", hash_text(o.grad_compression), true},
      {"bucket bytes", u(o.bucket_bytes)},
      {"checkpoint every", u(o.checkpoint_every)},
      {"checkpoint unit", hash_text(o.checkpoint_unit), true},
      {"resume", u(o.resume)},
      {"strategy", hash_text(o.strategy), true},
      {"reducer", hash_text(o.reducer), true},
      {"shared parameters", u(o.shared_parameters)},
      {"timeline tracing", u(!o.trace_path.empty())},
  };
}

// Fisher-Yates with our own generator: the same order on every platform and device count.
void shuffle_rows(std::vector<int64_t>& rows, Rng& rng) {
  for (int64_t i = static_cast<int64_t>(rows.size()) - 1; i > 0; --i) {
    std::swap(rows[i], rows[rng.below(static_cast<uint64_t>(i) + 1)]);
  }
}

// Streams: one for shuffling, one for dropout; epochs and steps index into them.
constexpr uint64_t kShuffleStream = 1ull << 40;
constexpr uint64_t kDropoutStream = 2ull << 40;

}  // namespace

History Model::fit(const Samples& x_all, const Samples& y_all, const FitOptions& o) {
  ensure_built();
  // compile() refuses while this fit runs (it would free the optimizer state in use).
  struct Running {
    int& count;
    explicit Running(int& c) : count(c) { ++count; }
    ~Running() { --count; }
  } running(state_->fits_running);
  auto& s = *state_;
  const FitChoices choices = check_fit_options(o);
  detail::check_targets(s, x_all, y_all, "fit");
  Samples x = x_all, y = y_all;
  std::optional<std::pair<Samples, Samples>> validation = o.validation_data;
  if (validation) {
    detail::check_targets(s, validation->first, validation->second, "fit (validation_data)");
  } else if (o.validation_split > 0) {
    // Keras takes the last fraction, before any shuffling.
    const int64_t split_at = static_cast<int64_t>(x_all.count() * (1.0 - o.validation_split));
    if (split_at <= 0 || split_at >= x_all.count()) {
      throw ConfigError("fit: validation_split " + std::to_string(o.validation_split) +
                        " leaves no training or no validation samples");
    }
    validation.emplace(x_all.slice(split_at, x_all.count()), y_all.slice(split_at, y_all.count()));
    x = x_all.slice(0, split_at);
    y = y_all.slice(0, split_at);
  }

  const Clock::time_point fit_start = Clock::now();
  detail::World* world = o.distributed ? detail::current_world() : nullptr;
  if (world != nullptr && world->size() == 1) world = nullptr;
  const bool writer = world == nullptr || world->rank() == 0;  // prints, writes files
  const int verbose = writer ? o.verbose : 0;
  const detail::Compiled& compiled = *s.compiled;
  // The data's hashes, once, when ranks compare jobs or checkpoints record what they are of.
  const bool needs_identity = world != nullptr || !o.checkpoint_dir.empty();
  const detail::DataFingerprints data =
      needs_identity ? detail::DataFingerprints{x.fingerprint(), y.fingerprint()}
                     : detail::DataFingerprints{};
  if (world) check_same_job(*world, job_fields(s, x, data, validation, o));

  // Where the fit starts: from scratch, or a checkpoint; with several ranks, rank 0's state
  // (weights, optimizer state, seed) is every rank's.
  detail::FitProgress progress{.epoch = o.initial_epoch, .seed = o.seed ? *o.seed : next_seed()};
  const nlohmann::json identity =
      needs_identity ? detail::fit_identity(s, o.batch_size, x.count(), data, o.shuffle,
                                            {.strategy = o.strategy,
                                             .reducer = o.reducer,
                                             .deterministic = o.deterministic,
                                             .seed = o.seed})
                     : nlohmann::json();
  std::optional<detail::CheckpointDir> checkpoints;
  if (writer && !o.checkpoint_dir.empty()) {
    checkpoints.emplace(o.checkpoint_dir, o.keep_checkpoints);
    if (!o.resume && !o.overwrite_checkpoints) checkpoints->check_empty();
  }
  std::string start_bytes, start_from = "rank 0's start state";
  bool from_checkpoint = false;  // on rank 0: resumed from a file
  if (o.resume && checkpoints) {
    if (auto found = checkpoints->newest_intact(std::cerr)) {
      start_bytes = std::move(found->bytes);
      start_from = found->path;
      from_checkpoint = true;
    } else {
      std::cerr << "tandem: no intact checkpoint in " << o.checkpoint_dir
                << "; starting from the beginning\n";
    }
  }
  if (world) {
    if (start_bytes.empty() && writer)
      start_bytes = detail::encode_checkpoint(s, progress, identity);
    world->broadcast(start_bytes, 0);
  }
  if (!start_bytes.empty()) {
    // Every rank decodes rank 0's start state (a checkpoint when it resumed).
    detail::decode_checkpoint(start_bytes, start_from, s, progress, identity,
                              o.resume ? o.resume_overrides : std::vector<std::string>{});
    const auto& overrides = o.resume_overrides;
    if (o.resume &&
        std::find(overrides.begin(), overrides.end(), "learning_rate") != overrides.end()) {
      s.learning_rate = compiled.optimizer.learning_rate;  // this run's, as asked
    }
    if (from_checkpoint && verbose) {
      std::cout << "Resuming from " << start_from << " (epoch " << progress.epoch + 1 << ", step "
                << progress.step << ")\n";
    }
  }
  start_bytes.clear();
  start_bytes.shrink_to_fit();

  detail::StrategyOptions so;
  so.devices = o.devices;
  so.kind = choices.strategy;
  so.threads_per_device =
      o.threads_per_device > 0 || o.devices > 1 || world ? o.threads_per_device : num_threads();
  if (o.deterministic) {
    // oneDNN may pick other kernels, and so other summation orders, for other thread counts
    // (seen on a Xeon): one thread per device makes every device's arithmetic the same on
    // any machine. N devices use N cores and give the same bits as one.
    if (o.threads_per_device > 1) {
      throw ConfigError(
          "deterministic mode runs one thread per device (results would depend "
          "on the thread count); got threads_per_device " +
          std::to_string(o.threads_per_device) + ": use devices to use more cores");
    }
    so.threads_per_device = 1;
  }
  so.deterministic = o.deterministic;
  so.bucket_bytes = o.bucket_bytes;
  so.reducer = choices.reducer;
  so.shared_parameters = o.shared_parameters;
  so.world = world;
  so.gradient_comm = {.bf16 = choices.compression == detail::GradCompression::bf16,
                      .deterministic = o.deterministic};
  std::optional<detail::Tracer> tracer;
  if (!o.trace_path.empty()) {
    if (writer) check_output_path(o.trace_path);  // before training, not after
    tracer.emplace();
    detail::Tracer::name_thread("main");
  }
  auto strategy = detail::make_strategy(s, so);
  strategy->prepare(std::min(o.batch_size, x.count()));  // no buffer beyond the data
  if (tracer) tracer->set_origin(Clock::now());
  const uint64_t seed = progress.seed;
  const int64_t count = x.count();
  const int64_t steps_per_epoch = (count + o.batch_size - 1) / o.batch_size;
  bool saved_once = false;
  const auto save_checkpoint = [&] {
    if (checkpoints) {
      checkpoints->save(detail::encode_checkpoint(s, progress, identity), progress.global_step,
                        !saved_once, from_checkpoint);
    }
    saved_once = true;
  };

  stop_training = false;
  for (const auto& cb : o.callbacks) cb->set_model(this);
  for (const auto& cb : o.callbacks) cb->on_train_begin({});

  History history = progress.history;
  double validation_seconds = 0;
  const detail::FitProgress start = progress;
  std::vector<int64_t> rows(count);
  const bool terminal = detail::stdout_is_terminal();
  for (int epoch = progress.epoch; epoch < o.epochs && !stop_training; ++epoch) {
    for (const auto& cb : o.callbacks) cb->on_epoch_begin(epoch, {});
    if (verbose) std::cout << "Epoch " << epoch + 1 << "/" << o.epochs << "\n" << std::flush;
    std::iota(rows.begin(), rows.end(), 0);
    if (o.shuffle) {
      Rng rng(Rng::derive(seed, kShuffleStream + epoch));
      shuffle_rows(rows, rng);
    }
    detail::Progress bar(verbose, steps_per_epoch, std::cout, terminal);
    // A resumed epoch continues from the checkpoint's step, with its sums so far.
    const bool resumed = epoch == start.epoch;
    detail::BatchStats total = resumed ? start.epoch_totals : detail::BatchStats{};
    Logs logs;
    if (total.samples > 0) {
      logs["loss"] = total.loss_sum / total.samples;
      if (compiled.accuracy) logs[compiled.accuracy_name] = total.correct_sum / total.samples;
    }
    for (int64_t step = resumed ? start.step : 0; step < steps_per_epoch; ++step) {
      const int64_t begin = step * o.batch_size;
      const int64_t n = std::min(o.batch_size, count - begin);
      for (const auto& cb : o.callbacks) cb->on_train_batch_begin(step, {});
      const auto step_start = Clock::now();
      const auto batch =
          strategy->train_step(x, y, {rows.data() + begin, static_cast<size_t>(n)},
                               Rng::derive(seed, kDropoutStream + progress.global_step));
      ++progress.global_step;
      if (tracer) detail::Tracer::record("train step", "step", step_start);
      total += batch;
      logs["loss"] = total.loss_sum / total.samples;
      if (compiled.accuracy) logs[compiled.accuracy_name] = total.correct_sum / total.samples;
      bar.update(step + 1, logs);
      for (const auto& cb : o.callbacks) cb->on_train_batch_end(step, logs);
      if (o.checkpoint_every > 0 && choices.checkpoint_unit == detail::CheckpointUnit::step &&
          progress.global_step % o.checkpoint_every == 0) {
        progress.epoch = epoch;
        progress.step = step + 1;
        progress.epoch_totals = total;
        progress.history = history;
        save_checkpoint();
      }
      if (stop_training) break;
    }
    if (validation) {
      ScopedTimer validation_timer(validation_seconds, "validation", "step");
      const Logs val = detail::evaluate_batches(*strategy, compiled, validation->first,
                                                validation->second, o.batch_size);
      for (const auto& [k, v] : val) logs["val_" + k] = v;
    }
    bar.finish(logs);
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
    for (const auto& cb : o.callbacks) cb->on_epoch_end(epoch, logs);
    // An epoch cut short by stop_training is not a finished epoch to resume after.
    if (o.checkpoint_every > 0 && choices.checkpoint_unit == detail::CheckpointUnit::epoch &&
        !stop_training && (epoch + 1) % o.checkpoint_every == 0) {
      progress.epoch = epoch + 1;
      progress.step = 0;
      progress.epoch_totals = {};
      progress.history = history;
      save_checkpoint();
    }
  }
  for (const auto& cb : o.callbacks) cb->on_train_end({});

  if (tracer) write_trace(*tracer, world, writer, o.trace_path);
  s.run_times.fit_seconds = seconds_since(fit_start);
  const PhaseTimes times = strategy->times();
  s.run_times.train_steps = times.steps;
  s.run_times.phase_seconds.clear();
  for (int p = 0; p < static_cast<int>(Phase::count); ++p) {
    s.run_times.phase_seconds[phase_name(static_cast<Phase>(p))] = times[static_cast<Phase>(p)];
  }
  return history;
}

std::map<std::string, double> Model::train_on_batch(const Samples& x, const Samples& y) {
  ensure_built();
  auto& s = *state_;
  detail::check_targets(s, x, y, "train_on_batch");
  auto strategy = detail::make_single_device_strategy(s, num_threads());
  strategy->prepare(x.count());
  std::vector<int64_t> rows(x.count());
  std::iota(rows.begin(), rows.end(), 0);
  const auto batch = strategy->train_step(x, y, rows, next_seed());
  std::map<std::string, double> logs = {{"loss", batch.loss_sum / batch.samples}};
  if (s.compiled->accuracy) logs[s.compiled->accuracy_name] = batch.correct_sum / batch.samples;
  return logs;
}

}  // namespace tandem
