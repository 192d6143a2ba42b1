// Symbolic tensors (Node) and layers. Each layer factory takes Keras's arguments already
// resolved by the Python wrapper (python/tandem/keras/layers).
#include "tandem/layers.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace tandem::python {

void bind_layers(nb::module_& m) {
  nb::class_<Node>(m, "Node").def_prop_ro("shape", &Node::shape);

  nb::class_<Layer>(m, "Layer")
      .def("__call__", nb::overload_cast<const Node&>(&Layer::operator(), nb::const_),
           nb::arg("input"))
      .def("__call__", nb::overload_cast<const std::vector<Node>&>(&Layer::operator(), nb::const_),
           nb::arg("inputs"));

  nb::class_<Initializer>(m, "Initializer")
      .def(nb::init<std::string, std::optional<uint64_t>>(), nb::arg("name"),
           nb::arg("seed") = nb::none())
      .def_ro("name", &Initializer::name)
      .def_ro("seed", &Initializer::seed);

  m.def("Input", &Input, nb::arg("shape"), nb::arg("name") = "");
  m.def(
      "Dense",
      [](int64_t units, const std::string& activation, bool use_bias,
         const Initializer& kernel_initializer, const Initializer& bias_initializer,
         const std::string& name) {
        return Dense(units, activation,
                     {.use_bias = use_bias,
                      .kernel_initializer = kernel_initializer,
                      .bias_initializer = bias_initializer,
                      .name = name});
      },
      nb::arg("units"), nb::arg("activation"), nb::arg("use_bias"), nb::arg("kernel_initializer"),
      nb::arg("bias_initializer"), nb::arg("name"));
  m.def("Activation", &Activation, nb::arg("activation"), nb::arg("name"));
  m.def("Dropout", &Dropout, nb::arg("rate"), nb::arg("name"));
  m.def("Flatten", &Flatten, nb::arg("name"));
  m.def("Add", &Add, nb::arg("name"));
  m.def("Concatenate", &Concatenate, nb::arg("axis"), nb::arg("name"));
}

}  // namespace tandem::python
