// Datasets and to_categorical. Images and labels reach numpy as uint8 views of the arrays
// the C++ readers filled (no copy).
#include "tandem/datasets.h"

#include <nanobind/stl/string.h>

#include "arrays.h"
#include "bindings.h"
#include "tandem/error.h"

namespace tandem::python {
namespace {

nb::tuple to_numpy(const TrainTestSplit& split) {
  return nb::make_tuple(
      nb::make_tuple(python::to_numpy(split.train.x), python::to_numpy(split.train.y)),
      nb::make_tuple(python::to_numpy(split.test.x), python::to_numpy(split.test.y)));
}

}  // namespace

void bind_datasets(nb::module_& m) {
  m.def(
      "load_mnist",
      [](const std::string& path) {
        TrainTestSplit split;
        {
          nb::gil_scoped_release release;
          split = mnist::load_data(path);
        }
        return to_numpy(split);
      },
      nb::arg("path"));
  m.def(
      "load_fashion_mnist",
      [](const std::string& dir) {
        TrainTestSplit split;
        {
          nb::gil_scoped_release release;
          split = fashion_mnist::load_data(dir);
        }
        return to_numpy(split);
      },
      nb::arg("dir"));
  m.attr("FASHION_MNIST_DEFAULT_DIR") = fashion_mnist::kDefaultDir;
  m.def(
      "to_categorical",
      [](const InputArray& labels, int num_classes) {
        if (labels.dtype() != nb::dtype<uint8_t>()) {
          throw ConfigError("to_categorical: labels must be uint8 here");
        }
        Shape shape(labels.ndim());
        for (size_t i = 0; i < labels.ndim(); ++i) shape[i] = labels.shape(i);
        const auto* data = static_cast<const uint8_t*>(labels.data());
        ByteArray bytes(shape, std::vector<uint8_t>(data, data + labels.size()));
        return python::to_numpy(to_categorical(bytes, num_classes));
      },
      nb::arg("labels"), nb::arg("num_classes"));
}

}  // namespace tandem::python
