// Model::evaluate and Model::predict: batches in order, inference mode.
#include <iostream>
#include <numeric>

#include "core/denormals.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/model.h"
#include "train/data_checks.h"
#include "train/evaluation.h"

namespace tandem {

namespace detail {

Logs evaluate_batches(Strategy& strategy, const Compiled& compiled, const Samples& x,
                      const Samples& y, int64_t batch_size, Progress* progress) {
  const int64_t count = x.count();
  std::vector<int64_t> rows(std::min(batch_size, count));
  BatchStats total;
  Logs logs;
  for (int64_t begin = 0, step = 1; begin < count; begin += batch_size, ++step) {
    const int64_t n = std::min(batch_size, count - begin);
    std::iota(rows.begin(), rows.begin() + n, begin);
    const auto batch = strategy.test_step(x, y, {rows.data(), static_cast<size_t>(n)});
    total += batch;
    logs["loss"] = total.loss_sum / total.samples;
    if (compiled.accuracy) logs[compiled.accuracy_name] = total.correct_sum / total.samples;
    if (progress) progress->update(step, logs);
  }
  return logs;
}

}  // namespace detail

std::map<std::string, double> Model::evaluate(const Samples& x, const Samples& y,
                                              const EvaluateOptions& o) {
  ensure_built();
  auto& s = *state_;
  detail::check_batch_size(o.batch_size, "evaluate");
  detail::check_targets(s, x, y, "evaluate");
  const auto start = Clock::now();
  const detail::ComputeDenormals fp(num_threads());
  auto strategy = detail::make_single_device_strategy(s, num_threads());
  strategy->prepare(std::min(o.batch_size, x.count()));
  const int64_t steps = (x.count() + o.batch_size - 1) / o.batch_size;
  detail::Progress progress(o.verbose, steps, std::cout, detail::stdout_is_terminal());
  Logs logs = detail::evaluate_batches(*strategy, *s.compiled, x, y, o.batch_size, &progress);
  progress.finish(logs);
  s.run_times.evaluate_seconds = seconds_since(start);
  return logs;
}

Tensor Model::predict(const Samples& x, const PredictOptions& o) {
  ensure_built();
  auto& s = *state_;
  detail::check_batch_size(o.batch_size, "predict");
  detail::check_inputs(s, x, "predict");
  const auto start = Clock::now();
  const detail::ComputeDenormals fp(num_threads());
  auto strategy = detail::make_single_device_strategy(s, num_threads());
  const int64_t count = x.count();
  strategy->prepare(std::min(o.batch_size, count));
  Shape out_shape = s.graph->output().shape;
  out_shape.insert(out_shape.begin(), count);
  Tensor out(out_shape);
  const int64_t size = s.graph->output().size;
  const int64_t steps = (count + o.batch_size - 1) / o.batch_size;
  detail::Progress progress(o.verbose, steps, std::cout, detail::stdout_is_terminal());
  std::vector<int64_t> rows(std::min(o.batch_size, count));
  for (int64_t begin = 0, step = 1; begin < count; begin += o.batch_size, ++step) {
    const int64_t n = std::min(o.batch_size, count - begin);
    std::iota(rows.begin(), rows.begin() + n, begin);
    strategy->predict_step(x, {rows.data(), static_cast<size_t>(n)}, out.data() + begin * size);
    progress.update(step, {});
  }
  progress.finish({});
  s.run_times.predict_seconds = seconds_since(start);
  return out;
}

}  // namespace tandem
