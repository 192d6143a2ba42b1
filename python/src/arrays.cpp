#include "arrays.h"

#include <nanobind/stl/vector.h>

#include <string>

#include "tandem/error.h"

namespace tandem::python {
namespace {

Shape shape_of(const InputArray& array) {
  Shape shape(array.ndim());
  for (size_t i = 0; i < array.ndim(); ++i) shape[i] = static_cast<int64_t>(array.shape(i));
  return shape;
}

std::string dtype_name(const nb::dlpack::dtype& dtype) {
  const char* kind = dtype.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float)  ? "float"
                     : dtype.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt) ? "uint"
                                                                                        : "int";
  return kind + std::to_string(dtype.bits);
}

// The owner of an array's memory for as long as Samples use it. Released under the GIL:
// the last Samples may die on a thread that does not hold it.
template <class T>
std::shared_ptr<const T> keep_alive(const InputArray& array) {
  auto* held = new InputArray(array);
  return std::shared_ptr<const T>(static_cast<const T*>(array.data()), [held](const T*) {
    nb::gil_scoped_acquire gil;
    delete held;
  });
}

template <class T>
nb::object wrap(Array<T> values) {
  auto* owner = new Array<T>(std::move(values));
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Array<T>*>(p); });
  std::vector<size_t> shape(owner->shape().begin(), owner->shape().end());
  return nb::cast(nb::ndarray<nb::numpy, T>(owner->data(), shape.size(), shape.data(), capsule));
}

}  // namespace

Samples to_samples(const InputArray& array, const char* what, float scale) {
  if (array.ndim() == 0) {
    throw ShapeError(std::string(what) +
                     ": need an array with a leading sample axis, got a "
                     "scalar");
  }
  if (array.dtype() == nb::dtype<float>()) {
    return Samples::view(keep_alive<float>(array), shape_of(array));
  }
  if (array.dtype() == nb::dtype<uint8_t>()) {
    return Samples::view(keep_alive<uint8_t>(array), shape_of(array), scale);
  }
  throw ConfigError(std::string(what) + ": arrays of " + dtype_name(array.dtype()) +
                    " are not taken as they are; pass float32, float64 or uint8");
}

Tensor to_tensor(const InputArray& array, const char* what) {
  if (array.dtype() != nb::dtype<float>()) {
    throw ConfigError(std::string(what) + ": need float32, got " + dtype_name(array.dtype()));
  }
  const auto* data = static_cast<const float*>(array.data());
  return Tensor(shape_of(array), std::vector<float>(data, data + array.size()));
}

nb::object to_numpy(Tensor tensor) {
  return wrap(std::move(tensor));
}
nb::object to_numpy(ByteArray bytes) {
  return wrap(std::move(bytes));
}

void bind_arrays(nb::module_& m) {
  // Samples as the model sees them, for tests of the zero-copy path.
  nb::class_<Samples>(m, "Samples")
      .def_prop_ro("count", &Samples::count)
      .def_prop_ro("sample_shape", &Samples::sample_shape)
      .def_prop_ro("is_bytes", &Samples::is_bytes)
      .def(
          "at",
          [](const Samples& s, int64_t row, int64_t j) {
            if (row < 0 || row >= s.count() || j < 0 || j >= s.sample_size()) {
              throw nb::index_error("Samples.at: index out of range");
            }
            return s.at(row, j);
          },
          nb::arg("row"), nb::arg("j"));
  m.def(
      "samples",
      [](const InputArray& array, float scale) { return to_samples(array, "samples", scale); },
      nb::arg("array"), nb::arg("scale") = 1.f);
}

}  // namespace tandem::python
