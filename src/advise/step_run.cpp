#include "advise/step_run.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "model/model_state.h"
#include "profile/phase_timer.h"
#include "tandem/config.h"
#include "tandem/error.h"
#include "tandem/layers.h"
#include "tandem/optimizers.h"

namespace tandem::detail {

Model dense_stack(const std::vector<int64_t>& widths) {
  set_random_seed(1);
  auto x = Input({widths.front()});
  auto y = x;
  for (size_t i = 1; i < widths.size(); ++i) {
    y = Dense(widths[i], i + 1 == widths.size() ? "softmax" : "relu")(y);
  }
  return Model(x, y, "timed");
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

StepRun::StepRun(Model model, int64_t rows, const StrategyOptions& options,
                 const std::string& optimizer)
    : rows_(rows), model_(std::move(model)) {
  model_.compile(optimizer, "categorical_crossentropy");
  run_ = make_strategy(model_.state(), options);
  run_->prepare(rows_);
  Shape in = model_.input_shape(), out = model_.output_shape();
  in.insert(in.begin(), rows_);
  out.insert(out.begin(), rows_);
  x_ = Tensor(in);
  y_ = Tensor(out);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (auto& v : x_.values()) v = u(gen);
  const int64_t classes = out.back();
  for (int64_t i = 0; i < rows_; ++i) y_[i * classes + i % classes] = 1.f;
  order_.resize(rows_);
  std::iota(order_.begin(), order_.end(), 0);
  run_->train_step(x_, y_, order_, 7);
  run_->prepare(rows_);  // the phase timers restart
}

void StepRun::time(int steps, uint64_t& seed) {
  const PhaseTimes before = run_->times();
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) run_->train_step(x_, y_, order_, ++seed);
  seconds_.push_back(seconds_since(start) / steps);
  const PhaseTimes after = run_->times();
  PhaseTimes each;
  for (size_t p = 0; p < each.seconds.size(); ++p) {
    each.seconds[p] = (after.seconds[p] - before.seconds[p]) / steps;
  }
  each.steps = after.steps - before.steps;
  timed_each_.push_back(each);
}

void StepRun::forget_last() {
  if (seconds_.empty()) throw Error("StepRun::forget_last: nothing timed");
  const PhaseTimes& last = timed_each_.back();
  for (size_t p = 0; p < last.seconds.size(); ++p) {
    left_out_.seconds[p] += last.seconds[p] * static_cast<double>(last.steps);
  }
  left_out_.steps += last.steps;
  seconds_.pop_back();
  timed_each_.pop_back();
}

std::vector<double> StepRun::phase_per_step_each(Phase phase) const {
  std::vector<double> out;
  for (const PhaseTimes& t : timed_each_) out.push_back(t[phase]);
  return out;
}

void StepRun::settle(uint64_t& seed) {
  const PhaseTimes before = run_->times();
  run_->train_step(x_, y_, order_, ++seed);
  const PhaseTimes after = run_->times();
  for (size_t p = 0; p < after.seconds.size(); ++p) {
    left_out_.seconds[p] += after.seconds[p] - before.seconds[p];
  }
  left_out_.steps += after.steps - before.steps;
}

// The strategy's phase times without the settle() steps and the forgotten repetitions.
PhaseTimes StepRun::timed_phases() const {
  PhaseTimes t = run_->times();
  for (size_t p = 0; p < t.seconds.size(); ++p) t.seconds[p] -= left_out_.seconds[p];
  t.steps -= left_out_.steps;
  return t;
}

std::map<std::string, double> StepRun::phase_seconds() const {
  const PhaseTimes t = timed_phases();
  const double steps = static_cast<double>(std::max<int64_t>(t.steps, 1));
  std::map<std::string, double> out;
  for (int p = 0; p < static_cast<int>(Phase::count); ++p) {
    out[phase_name(static_cast<Phase>(p))] = t.seconds[p] / steps;
  }
  return out;
}

}  // namespace tandem::detail
