// The Python module _tandem: one bind_* function per C++ concept, each in its own file.
// The Keras-shaped names and defaults live in the Python package (python/tandem/keras); this
// module exposes the C++ objects they wrap.
#pragma once

#include <nanobind/nanobind.h>

namespace tandem::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_arrays(nb::module_& m);
void bind_layers(nb::module_& m);
void bind_callbacks(nb::module_& m);
void bind_model(nb::module_& m);
void bind_datasets(nb::module_& m);
void bind_runtime(nb::module_& m);

}  // namespace tandem::python
