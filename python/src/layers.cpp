// Symbolic tensors (Node) and layers. Each layer factory takes Keras's arguments already
// resolved by the Python wrapper (python/tandem/keras/layers).
#include "tandem/layers.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
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

  using Pair = std::pair<int64_t, int64_t>;
  const auto size2 = [](Pair p) { return Size2(p.first, p.second); };
  m.def(
      "Conv2D",
      [size2](int64_t filters, Pair kernel_size, const std::string& activation, Pair strides,
              const std::string& padding, Pair dilation_rate, bool use_bias,
              const Initializer& kernel_initializer, const Initializer& bias_initializer,
              const std::string& name) {
        return Conv2D(filters, size2(kernel_size), activation,
                      {.strides = size2(strides),
                       .padding = padding,
                       .dilation_rate = size2(dilation_rate),
                       .use_bias = use_bias,
                       .kernel_initializer = kernel_initializer,
                       .bias_initializer = bias_initializer,
                       .name = name});
      },
      nb::arg("filters"), nb::arg("kernel_size"), nb::arg("activation"), nb::arg("strides"),
      nb::arg("padding"), nb::arg("dilation_rate"), nb::arg("use_bias"),
      nb::arg("kernel_initializer"), nb::arg("bias_initializer"), nb::arg("name"));
  const auto pool = [size2](bool max) {
    return [size2, max](Pair pool_size, std::optional<Pair> strides, const std::string& padding,
                        const std::string& name) {
      Pool2DOptions options{.padding = padding, .name = name};
      if (strides) options.strides = size2(*strides);
      return max ? MaxPooling2D(size2(pool_size), options)
                 : AveragePooling2D(size2(pool_size), options);
    };
  };
  m.def("MaxPooling2D", pool(true), nb::arg("pool_size"), nb::arg("strides").none(),
        nb::arg("padding"), nb::arg("name"));
  m.def("AveragePooling2D", pool(false), nb::arg("pool_size"), nb::arg("strides").none(),
        nb::arg("padding"), nb::arg("name"));
  m.def("GlobalAveragePooling2D", &GlobalAveragePooling2D, nb::arg("name"));
  m.def(
      "ZeroPadding2D",
      [](int64_t top, int64_t bottom, int64_t left, int64_t right, const std::string& name) {
        return ZeroPadding2D(Padding2D(top, bottom, left, right), name);
      },
      nb::arg("top"), nb::arg("bottom"), nb::arg("left"), nb::arg("right"), nb::arg("name"));
  m.def("Reshape", &Reshape, nb::arg("target_shape"), nb::arg("name"));
  m.def(
      "BatchNormalization",
      [](double momentum, double epsilon, bool center, bool scale, bool synchronized,
         const Initializer& beta, const Initializer& gamma, const Initializer& moving_mean,
         const Initializer& moving_variance, const std::string& name) {
        return BatchNormalization({.momentum = momentum,
                                   .epsilon = epsilon,
                                   .center = center,
                                   .scale = scale,
                                   .synchronized = synchronized,
                                   .beta_initializer = beta,
                                   .gamma_initializer = gamma,
                                   .moving_mean_initializer = moving_mean,
                                   .moving_variance_initializer = moving_variance,
                                   .name = name});
      },
      nb::arg("momentum"), nb::arg("epsilon"), nb::arg("center"), nb::arg("scale"),
      nb::arg("synchronized"), nb::arg("beta_initializer"), nb::arg("gamma_initializer"),
      nb::arg("moving_mean_initializer"), nb::arg("moving_variance_initializer"), nb::arg("name"));
}

}  // namespace tandem::python
