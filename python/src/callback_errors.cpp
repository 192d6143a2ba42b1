#include "callback_errors.h"

#include <memory>

namespace tandem::python {
namespace {
// Per thread: a callback runs on the thread that called fit, so each fit (several may run at
// once on different threads) keeps and restores only its own error. Used with the GIL held.
thread_local std::unique_ptr<nanobind::python_error> kept;
}  // namespace

void keep_callback_error(nanobind::python_error& error) {
  if (!kept) kept = std::make_unique<nanobind::python_error>(std::move(error));
  throw CallbackRaised();
}

void restore_callback_error() {
  if (kept) {
    kept->restore();
    kept.reset();
  } else {
    PyErr_SetString(PyExc_RuntimeError, "a Python callback raised, and its error was lost");
  }
}

}  // namespace tandem::python
