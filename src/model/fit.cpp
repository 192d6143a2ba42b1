// Model::fit: epochs of shuffled batches through a Strategy, with Keras's logs, progress,
// validation and callbacks.
#include <iostream>
#include <numeric>

#include "model/data_checks.h"
#include "model/evaluation.h"
#include "model/progress.h"
#include "parallel/strategy.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/model.h"

namespace tandem {
namespace {

void check_fit_options(const FitOptions& o) {
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
  auto& s = *state_;
  check_fit_options(o);
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
  detail::StrategyOptions so;
  so.devices = o.devices;
  so.kind = o.strategy;
  so.threads_per_device =
      o.threads_per_device > 0 || o.devices > 1 ? o.threads_per_device : num_threads();
  so.deterministic = o.deterministic;
  so.bucket_bytes = o.bucket_bytes;
  so.reducer = o.reducer;
  so.shared_parameters = o.shared_parameters;
  auto strategy = detail::make_strategy(s, so);
  strategy->prepare(o.batch_size);
  const uint64_t seed = o.seed ? *o.seed : next_seed();
  const detail::Compiled& compiled = *s.compiled;
  const int64_t count = x.count();
  const int64_t steps_per_epoch = (count + o.batch_size - 1) / o.batch_size;

  stop_training = false;
  for (const auto& cb : o.callbacks) cb->set_model(this);
  for (const auto& cb : o.callbacks) cb->on_train_begin({});

  History history;
  std::vector<int64_t> rows(count);
  int64_t global_step = 0;
  const bool terminal = detail::stdout_is_terminal();
  for (int epoch = o.initial_epoch; epoch < o.epochs && !stop_training; ++epoch) {
    for (const auto& cb : o.callbacks) cb->on_epoch_begin(epoch, {});
    if (o.verbose) std::cout << "Epoch " << epoch + 1 << "/" << o.epochs << "\n" << std::flush;
    std::iota(rows.begin(), rows.end(), 0);
    if (o.shuffle) {
      Rng rng(Rng::derive(seed, kShuffleStream + epoch));
      shuffle_rows(rows, rng);
    }
    detail::Progress progress(o.verbose, steps_per_epoch, std::cout, terminal);
    detail::BatchStats total;
    Logs logs;
    for (int64_t step = 0; step < steps_per_epoch; ++step) {
      const int64_t begin = step * o.batch_size;
      const int64_t n = std::min(o.batch_size, count - begin);
      const auto batch = strategy->train_step(x, y, {rows.data() + begin, static_cast<size_t>(n)},
                                              Rng::derive(seed, kDropoutStream + global_step++));
      total += batch;
      logs["loss"] = total.loss_sum / total.samples;
      if (compiled.accuracy) logs["accuracy"] = total.correct_sum / total.samples;
      progress.update(step + 1, logs);
      for (const auto& cb : o.callbacks) cb->on_train_batch_end(step, logs);
      if (stop_training) break;
    }
    if (validation) {
      const Logs val = detail::evaluate_batches(*strategy, compiled, validation->first,
                                                validation->second, o.batch_size);
      for (const auto& [k, v] : val) logs["val_" + k] = v;
    }
    progress.finish(logs);
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
    for (const auto& cb : o.callbacks) cb->on_epoch_end(epoch, logs);
  }
  for (const auto& cb : o.callbacks) cb->on_train_end({});

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
  if (s.compiled->accuracy) logs["accuracy"] = batch.correct_sum / batch.samples;
  return logs;
}

}  // namespace tandem
