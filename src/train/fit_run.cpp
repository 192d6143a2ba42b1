#include "train/fit_run.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>

#include "core/atomic_file.h"
#include "core/output_path.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "train/data_checks.h"
#include "train/job_check.h"

namespace tandem::detail {
namespace {

// What every rank of a job must agree on.
std::vector<JobField> job_fields(const ModelState& s, const Samples& x,
                                 const DataFingerprints& data,
                                 const std::optional<std::pair<Samples, Samples>>& val,
                                 const FitOptions& o) {
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
      {"loss", hash_text(loss_name(s.compiled->loss.kind())), true},
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

StrategyOptions strategy_options(const FitOptions& o, const FitChoices& choices, World* world) {
  StrategyOptions so;
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
  so.gradient_comm = {.bf16 = choices.compression == GradCompression::bf16,
                      .deterministic = o.deterministic};
  return so;
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

FitChoices check_fit_options(const FitOptions& o) {
  check_batch_size(o.batch_size, "fit");
  if (o.epochs < 0) throw ConfigError("fit: epochs must be >= 0, got " + std::to_string(o.epochs));
  if (o.initial_epoch < 0 || o.initial_epoch > o.epochs) {
    throw ConfigError("fit: initial_epoch must be in [0, epochs]");
  }
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0)) {
    throw ConfigError("fit: validation_split must be in [0, 1), got " +
                      std::to_string(o.validation_split));
  }
  if (o.verbose < 0 || o.verbose > 2) throw ConfigError("fit: verbose must be 0, 1 or 2");
  const FitChoices choices{.strategy = parse_strategy(o.strategy),
                           .reducer = parse_reducer(o.reducer),
                           .compression = parse_grad_compression(o.grad_compression),
                           .checkpoint_unit = parse_checkpoint_unit(o.checkpoint_unit)};
  if (choices.compression == GradCompression::bf16 && o.deterministic) {
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

FitRun::FitRun(ModelState& s, const Samples& x, const Samples& y, const FitOptions& o)
    : s_(s), o_(o), choices_(check_fit_options(o)), x_(x), y_(y), validation_(o.validation_data) {
  check_targets(s, x, y, "fit");
  if (validation_) {
    check_targets(s, validation_->first, validation_->second, "fit (validation_data)");
  } else if (o.validation_split > 0) {
    const int64_t split_at = static_cast<int64_t>(x.count() * (1.0 - o.validation_split));
    if (split_at <= 0 || split_at >= x.count()) {
      throw ConfigError("fit: validation_split " + std::to_string(o.validation_split) +
                        " leaves no training or no validation samples");
    }
    validation_.emplace(x.slice(split_at, x.count()), y.slice(split_at, y.count()));
    x_ = x.slice(0, split_at);
    y_ = y.slice(0, split_at);
  }

  start_time_ = Clock::now();
  world_ = o.distributed ? current_world() : nullptr;
  if (world_ != nullptr && world_->size() == 1) world_ = nullptr;
  writer_ = world_ == nullptr || world_->rank() == 0;
  verbose_ = writer_ ? o.verbose : 0;
  terminal_ = stdout_is_terminal();
  // The data's hashes, once, when ranks compare jobs or checkpoints record what they are of.
  const bool needs_identity = world_ != nullptr || !o.checkpoint_dir.empty();
  const DataFingerprints data =
      needs_identity ? DataFingerprints{x_.fingerprint(), y_.fingerprint()} : DataFingerprints{};
  if (world_) check_same_job(*world_, job_fields(s, x_, data, validation_, o));
  progress = {.epoch = o.initial_epoch, .seed = o.seed ? *o.seed : next_seed()};
  if (needs_identity) {
    identity_ = fit_identity(s, o.batch_size, x_.count(), data, o.shuffle,
                             {.strategy = choices_.strategy,
                              .reducer = choices_.reducer,
                              .deterministic = o.deterministic,
                              .seed = o.seed});
  }
  if (writer_ && !o.checkpoint_dir.empty()) {
    checkpoints_.emplace(o.checkpoint_dir, o.keep_checkpoints);
    if (!o.resume && !o.overwrite_checkpoints) checkpoints_->check_empty();
  }
  start_state();

  if (!o.trace_path.empty()) {
    if (writer_) check_output_path(o.trace_path);  // before training, not after
    tracer_.emplace();
    Tracer::name_thread("main");
  }
  strategy_ = make_strategy(s, strategy_options(o, choices_, world_));
  strategy_->prepare(std::min(o.batch_size, x_.count()));  // no buffer beyond the data
  if (tracer_) tracer_->set_origin(Clock::now());
}

void FitRun::start_state() {
  std::string start_bytes, start_from = "rank 0's start state";
  if (o_.resume && checkpoints_) {
    if (auto found = checkpoints_->newest_intact(std::cerr)) {
      start_bytes = std::move(found->bytes);
      start_from = found->path;
      from_checkpoint_ = true;
    } else {
      std::cerr << "tandem: no intact checkpoint in " << o_.checkpoint_dir
                << "; starting from the beginning\n";
    }
  }
  if (world_) {
    if (start_bytes.empty() && writer_) start_bytes = encode_checkpoint(s_, progress, identity_);
    world_->broadcast(start_bytes, 0);
  }
  if (start_bytes.empty()) return;
  // Every rank decodes rank 0's start state (a checkpoint when it resumed).
  decode_checkpoint(start_bytes, start_from, s_, progress, identity_,
                    o_.resume ? o_.resume_overrides : std::vector<std::string>{});
  const auto& overrides = o_.resume_overrides;
  if (o_.resume &&
      std::find(overrides.begin(), overrides.end(), "learning_rate") != overrides.end()) {
    s_.learning_rate = s_.compiled->optimizer.learning_rate;  // this run's, as asked
  }
  if (from_checkpoint_ && verbose_) {
    std::cout << "Resuming from " << start_from << " (epoch " << progress.epoch + 1 << ", step "
              << progress.step << ")\n";
  }
}

Progress FitRun::progress_bar(int epoch) const {
  if (verbose_) std::cout << "Epoch " << epoch + 1 << "/" << o_.epochs << "\n" << std::flush;
  return Progress(verbose_, steps_per_epoch(), std::cout, terminal_);
}

void FitRun::epoch_rows(int epoch, std::vector<int64_t>& rows) const {
  rows.resize(x_.count());
  std::iota(rows.begin(), rows.end(), 0);
  if (o_.shuffle) {
    Rng rng(Rng::derive(progress.seed, kShuffleStream + epoch));
    shuffle_rows(rows, rng);
  }
}

uint64_t FitRun::step_seed() const {
  return Rng::derive(progress.seed, kDropoutStream + progress.global_step);
}

void FitRun::save_checkpoint() {
  if (checkpoints_) {
    checkpoints_->save(encode_checkpoint(s_, progress, identity_), progress.global_step,
                       !saved_once_, from_checkpoint_);
  }
  saved_once_ = true;
}

void FitRun::after_step(int epoch, int64_t step, const BatchStats& total, const History& history) {
  if (o_.checkpoint_every == 0 || choices_.checkpoint_unit != CheckpointUnit::step ||
      progress.global_step % o_.checkpoint_every != 0) {
    return;
  }
  progress.epoch = epoch;
  progress.step = step + 1;
  progress.epoch_totals = total;
  progress.history = history;
  save_checkpoint();
}

void FitRun::after_epoch(int epoch, const History& history) {
  if (o_.checkpoint_every == 0 || choices_.checkpoint_unit != CheckpointUnit::epoch ||
      (epoch + 1) % o_.checkpoint_every != 0) {
    return;
  }
  progress.epoch = epoch + 1;
  progress.step = 0;
  progress.epoch_totals = {};
  progress.history = history;
  save_checkpoint();
}

void FitRun::finish() {
  if (tracer_) {
    // Every rank's events to rank 0, which writes the file.
    const int rank = world_ ? world_->rank() : 0;
    const std::string mine = tracer_->events_json(rank, world_ ? world_->describe() : "tandem");
    const std::vector<std::string> arrays = world_ ? world_->gather(mine, 0) : std::vector{mine};
    if (writer_) write_file_atomically(o_.trace_path, trace_file_json(arrays));
  }
  s_.run_times.fit_seconds = seconds_since(start_time_);
  const PhaseTimes times = strategy_->times();
  s_.run_times.train_steps = times.steps;
  s_.run_times.phase_seconds.clear();
  for (int p = 0; p < static_cast<int>(Phase::count); ++p) {
    s_.run_times.phase_seconds[phase_name(static_cast<Phase>(p))] = times[static_cast<Phase>(p)];
  }
}

}  // namespace tandem::detail
