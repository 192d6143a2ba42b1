// A Python exception raised inside a callback (or a schedule) while fit runs in C++: it is
// kept here, a CallbackRaised unwinds the fit, and the translator raises the original
// exception, traceback included, once the GIL is back.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>

namespace tandem::python {

struct CallbackRaised : std::exception {
  const char* what() const noexcept override { return "a Python callback raised"; }
};

// Call with the GIL held, inside `catch (nanobind::python_error&)`: keeps the error and throws
// CallbackRaised. The first error of a fit wins.
[[noreturn]] void keep_callback_error(nanobind::python_error& error);
// Sets the kept error as Python's current exception (GIL held).
void restore_callback_error();

}  // namespace tandem::python
