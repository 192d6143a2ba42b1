// Ctrl-C during fit: Python's own SIGINT handler cannot run while C++ holds the thread, so
// for the length of a fit tandem installs one that only raises a flag. A callback stops
// training at the next batch boundary (the model is left consistent and usable), and once
// the GIL is back the fit raises KeyboardInterrupt. A second Ctrl-C ends the process at once.
#pragma once

#include <csignal>
#include <memory>

#include "tandem/callbacks.h"

namespace tandem::python {

class InterruptGuard {
 public:
  // Installs the handler only when `active` (fit runs on Python's main thread).
  explicit InterruptGuard(bool active);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The callback that turns the flag into model.stop_training; add it to the fit's list.
  std::shared_ptr<Callback> callback() const;
  // Raises KeyboardInterrupt (a nanobind::python_error) if Ctrl-C came during the fit.
  void raise_if_interrupted() const;

 private:
  bool active_;
  struct sigaction previous_ {};
};

}  // namespace tandem::python
