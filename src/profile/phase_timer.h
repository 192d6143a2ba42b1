// Phase timers: where a replica's step time goes. Accumulated seconds per phase and per
// layer (forward and backward), read by the fit loop, benchmarks and the scaling report.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

namespace tandem {

enum class Phase { data, forward, loss, backward, allreduce, optimizer, idle, count };
const char* phase_name(Phase phase);

struct PhaseTimes {
  std::array<double, static_cast<size_t>(Phase::count)> seconds{};
  std::vector<double> layer_forward;   // per graph node
  std::vector<double> layer_backward;  // per graph node
  int64_t steps = 0;

  double& operator[](Phase p) { return seconds[static_cast<size_t>(p)]; }
  double operator[](Phase p) const { return seconds[static_cast<size_t>(p)]; }
  double total() const;
  void reset();
  PhaseTimes& operator+=(const PhaseTimes& other);
};

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The wall seconds `pass()` takes.
template <typename Pass>
double seconds_of(Pass&& pass) {
  const auto start = Clock::now();
  pass();
  return seconds_since(start);
}

// Keeps the calling thread computing (no sleep, no yield) for `seconds`: a task of known
// length for probes and tests of the device threads.
inline void busy_for(double seconds) {
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
  }
}

namespace detail {
// Records a scope on the timeline when a trace is being taken (profile/trace.cpp).
void trace_scope(const char* name, const char* category, Clock::time_point start);
// A bucket's reduction, with its size, on the timeline ("allreduce" category).
void trace_bucket(const char* name, Clock::time_point start, int64_t bytes);
bool tracing();
}  // namespace detail

// Adds the scope's duration to one slot; with a name, also to the timeline when tracing.
class ScopedTimer {
 public:
  explicit ScopedTimer(double& slot, const char* name = nullptr, const char* category = "phase")
      : slot_(slot), name_(name), category_(category), start_(Clock::now()) {}
  ScopedTimer(PhaseTimes& times, Phase phase) : ScopedTimer(times[phase], phase_name(phase)) {}
  ~ScopedTimer() {
    slot_ += seconds_since(start_);
    if (name_ != nullptr && detail::tracing()) detail::trace_scope(name_, category_, start_);
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double& slot_;
  const char* name_;
  const char* category_;
  Clock::time_point start_;
};

}  // namespace tandem
