// Ctrl-C during fit: Python's own SIGINT handler cannot run while C++ holds the thread, so
// for the length of a fit on the main thread (and only while Python's default handler is
// in place: a program's own handler or SIG_IGN is left alone) tandem installs one that
// only raises this guard's flag. A callback stops training at the next batch boundary (the
// model is left consistent and usable); once the GIL is back, the interrupt is handed to
// Python, whose handler raises KeyboardInterrupt. A second Ctrl-C ends the process at once.
#pragma once

#include <csignal>
#include <memory>

#include "tandem/callbacks.h"

namespace tandem::python {

class InterruptGuard {
 public:
  explicit InterruptGuard(bool active);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The callback that turns this guard's flag into model.stop_training; null when inactive.
  std::shared_ptr<Callback> callback();
  // Hands a Ctrl-C that came during the fit to Python (GIL held): throws the
  // nanobind::python_error its handler raised.
  void raise_if_interrupted() const;

 private:
  bool active_;
  struct sigaction previous_ {};
};

}  // namespace tandem::python
