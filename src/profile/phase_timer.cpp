#include "profile/phase_timer.h"

#include <algorithm>

namespace tandem {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::data:
      return "data";
    case Phase::forward:
      return "forward";
    case Phase::loss:
      return "loss";
    case Phase::backward:
      return "backward";
    case Phase::allreduce:
      return "allreduce";
    case Phase::optimizer:
      return "optimizer";
    case Phase::idle:
      return "idle";
    case Phase::count:
      break;
  }
  return "?";
}

double PhaseTimes::total() const {
  double t = 0;
  for (double s : seconds) t += s;
  return t;
}

void PhaseTimes::reset() {
  seconds.fill(0.0);
  std::fill(layer_forward.begin(), layer_forward.end(), 0.0);
  std::fill(layer_backward.begin(), layer_backward.end(), 0.0);
  steps = 0;
}

PhaseTimes& PhaseTimes::operator+=(const PhaseTimes& other) {
  for (size_t i = 0; i < seconds.size(); ++i) seconds[i] += other.seconds[i];
  layer_forward.resize(std::max(layer_forward.size(), other.layer_forward.size()));
  layer_backward.resize(std::max(layer_backward.size(), other.layer_backward.size()));
  for (size_t i = 0; i < other.layer_forward.size(); ++i)
    layer_forward[i] += other.layer_forward[i];
  for (size_t i = 0; i < other.layer_backward.size(); ++i)
    layer_backward[i] += other.layer_backward[i];
  steps += other.steps;
  return *this;
}

}  // namespace tandem
