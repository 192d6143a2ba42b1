// numpy <-> tandem arrays. Inputs are views, never copies: a C-contiguous float32 array
// becomes float Samples, a uint8 array byte Samples (converted to float only as a batch is
// formed); the array stays alive while any Samples refer to it. Outputs hand a Tensor's
// storage to numpy without a copy.
#pragma once

#include <nanobind/ndarray.h>

#include "bindings.h"
#include "tandem/array.h"
#include "tandem/samples.h"

namespace tandem::python {

using InputArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// float32 or uint8 (scale applies to uint8); other dtypes are a ConfigError naming `what`.
Samples to_samples(const InputArray& array, const char* what, float scale = 1.f);
// A float32 copy of any float32 array (weights the model keeps).
Tensor to_tensor(const InputArray& array, const char* what);

nb::object to_numpy(Tensor tensor);
nb::object to_numpy(ByteArray bytes);

}  // namespace tandem::python
