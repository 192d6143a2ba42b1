#include "callback_errors.h"

#include <memory>

namespace tandem::python {
namespace {
// Guarded by the GIL: written and read only while it is held.
std::unique_ptr<nanobind::python_error> kept;
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
