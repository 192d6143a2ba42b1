// Model::fit: epochs of shuffled batches through a Strategy, with Keras's logs, progress,
// validation and callbacks; across MPI ranks when tandem::mpi::init ran; with checkpoints
// and resume. What happens before the first step and after the last is FitRun's
// (fit_run.h); this file is the loop.
#include <algorithm>
#include <numeric>

#include "core/denormals.h"
#include "tandem/config.h"
#include "tandem/model.h"
#include "train/data_checks.h"
#include "train/evaluation.h"
#include "train/fit_run.h"

namespace tandem {
namespace {

// compile() refuses while a fit runs on the model (it would free the optimizer state in use).
class FitGuard {
 public:
  explicit FitGuard(int& running) : running_(running) { ++running_; }
  ~FitGuard() { --running_; }
  FitGuard(const FitGuard&) = delete;
  FitGuard& operator=(const FitGuard&) = delete;

 private:
  int& running_;
};

// Runs hook(callback) on every callback, in the floating-point mode of fit's caller rather
// than the one tandem computes in (core/denormals.h): a callback is the caller's code.
template <class Hook>
void each_callback(const FitOptions& o, uint32_t caller, Hook&& hook) {
  if (o.callbacks.empty()) return;
  const detail::ScopedThreadDenormals mode(caller);
  for (const auto& cb : o.callbacks) hook(*cb);
}

void set_average_logs(const detail::Compiled& compiled, const detail::BatchStats& total,
                      Logs& logs) {
  logs["loss"] = total.loss_sum / total.samples;
  if (compiled.accuracy) logs[compiled.accuracy_name] = total.correct_sum / total.samples;
}

// One epoch's steps (a resumed epoch continues from the checkpoint's step, with its sums so
// far); returns the epoch's running logs. Stops early when a callback sets stop_training.
Logs train_epoch(Model& model, detail::FitRun& run, int epoch, const detail::FitProgress& start,
                 const History& history, detail::Progress& bar, std::vector<int64_t>& rows,
                 uint32_t caller) {
  const FitOptions& o = run.options();
  run.epoch_rows(epoch, rows);
  const bool resumed = epoch == start.epoch;
  detail::BatchStats total = resumed ? start.epoch_totals : detail::BatchStats{};
  Logs logs;
  if (total.samples > 0) set_average_logs(run.compiled(), total, logs);
  const int64_t count = run.x().count();
  for (int64_t step = resumed ? start.step : 0; step < run.steps_per_epoch(); ++step) {
    const int64_t begin = step * o.batch_size;
    const int64_t n = std::min(o.batch_size, count - begin);
    each_callback(o, caller, [&](Callback& cb) { cb.on_train_batch_begin(step, {}); });
    const auto step_start = Clock::now();
    total += run.strategy().train_step(
        run.x(), run.y(), {rows.data() + begin, static_cast<size_t>(n)}, run.step_seed());
    ++run.progress.global_step;
    if (run.tracing()) detail::Tracer::record("train step", "step", step_start);
    set_average_logs(run.compiled(), total, logs);
    bar.update(step + 1, logs);
    each_callback(o, caller, [&](Callback& cb) { cb.on_train_batch_end(step, logs); });
    run.after_step(epoch, step, total, history);
    if (model.stop_training) break;
  }
  return logs;
}

// val_loss (and val_accuracy) over the validation data, into `logs`.
void add_validation_logs(detail::FitRun& run, Logs& logs) {
  double seconds = 0;
  ScopedTimer timer(seconds, "validation", "step");
  const auto& [x, y] = *run.validation();
  const Logs val =
      detail::evaluate_batches(run.strategy(), run.compiled(), x, y, run.options().batch_size);
  for (const auto& [k, v] : val) logs["val_" + k] = v;
}

}  // namespace

History Model::fit(const Samples& x, const Samples& y, const FitOptions& o) {
  ensure_built();
  const FitGuard guard(state_->fits_running);
  const detail::ComputeDenormals fp(num_threads());  // before the devices start
  const uint32_t caller = fp.caller_bits();
  detail::FitRun run(*state_, x, y, o);
  stop_training = false;
  for (const auto& cb : o.callbacks) cb->set_model(this);
  each_callback(o, caller, [&](Callback& cb) { cb.on_train_begin({}); });
  const detail::FitProgress start = run.progress;
  History history = start.history;
  std::vector<int64_t> rows;
  for (int epoch = start.epoch; epoch < o.epochs && !stop_training; ++epoch) {
    each_callback(o, caller, [&](Callback& cb) { cb.on_epoch_begin(epoch, {}); });
    detail::Progress bar = run.progress_bar(epoch);
    Logs logs = train_epoch(*this, run, epoch, start, history, bar, rows, caller);
    if (run.validation()) add_validation_logs(run, logs);
    bar.finish(logs);
    history.epoch.push_back(epoch);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
    each_callback(o, caller, [&](Callback& cb) { cb.on_epoch_end(epoch, logs); });
    // An epoch cut short by stop_training is not a finished epoch to resume after.
    if (!stop_training) run.after_epoch(epoch, history);
  }
  each_callback(o, caller, [&](Callback& cb) { cb.on_train_end({}); });
  run.finish();
  return history;
}

// train_on_batch's one-device strategy, kept in ModelState::train_on_batch_cache between
// calls: a loop of train_on_batch would otherwise rebuild the step's buffers and oneDNN
// primitives every call (measured 1.4x fit's step at 1 thread before). Rebuilt for a larger
// batch or another thread count; compile() drops it.
namespace {
struct TrainOnBatchCache {
  std::unique_ptr<detail::Strategy> strategy;
  int threads = 0;
  int64_t max_batch = 0;
  std::vector<int64_t> rows;  // 0, 1, ..., max_batch - 1
};
}  // namespace

std::map<std::string, double> Model::train_on_batch(const Samples& x, const Samples& y) {
  ensure_built();
  auto& s = *state_;
  detail::check_targets(s, x, y, "train_on_batch");
  s.require_compiled("train_on_batch");
  const int threads = num_threads();
  const detail::ComputeDenormals fp(threads);
  auto cache = std::static_pointer_cast<TrainOnBatchCache>(s.train_on_batch_cache);
  if (!cache || cache->threads != threads || cache->max_batch < x.count()) {
    s.train_on_batch_cache.reset();  // the old strategy's buffers go before the new ones come
    cache = std::make_shared<TrainOnBatchCache>();
    cache->strategy = detail::make_single_device_strategy(s, threads);
    cache->strategy->prepare(x.count());
    cache->threads = threads;
    cache->max_batch = x.count();
    cache->rows.resize(x.count());
    std::iota(cache->rows.begin(), cache->rows.end(), 0);
    s.train_on_batch_cache = cache;
  }
  const std::span<const int64_t> rows(cache->rows.data(), static_cast<size_t>(x.count()));
  const auto batch = cache->strategy->train_step(x, y, rows, next_seed());
  std::map<std::string, double> logs = {{"loss", batch.loss_sum / batch.samples}};
  if (s.compiled->accuracy) logs[s.compiled->accuracy_name] = batch.correct_sum / batch.samples;
  return logs;
}

}  // namespace tandem
