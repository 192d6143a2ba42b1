// Keras-style progress output: a bar with ETA on a terminal, one line per epoch otherwise.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "profile/phase_timer.h"
#include "tandem/callbacks.h"

namespace tandem::detail {

class Progress {
 public:
  // verbose 0: silent; 1: bar when `out` is a terminal, else like 2; 2: one line at the end.
  Progress(int verbose, int64_t total_steps, std::ostream& out, bool is_terminal);
  // After `step` of total (1-based) with running averages so far.
  void update(int64_t step, const Logs& logs);
  // Epoch (or evaluation) done: the final line, val_* included.
  void finish(const Logs& logs);

 private:
  std::string values(const Logs& logs) const;

  int mode_;  // 0 silent, 1 bar, 2 line
  int64_t total_;
  std::ostream& out_;
  Clock::time_point start_, last_draw_;
};

// "loss: 0.3241" (Keras's format: 4 decimals, or 4-digit exponent below 1e-3).
std::string format_log_value(double value);
// True when stdout is a terminal.
bool stdout_is_terminal();

}  // namespace tandem::detail
