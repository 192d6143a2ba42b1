#include "backend/activation.h"

#include "tandem/error.h"

namespace tandem {

ActivationKind parse_activation(const std::string& name, const std::string& where) {
  if (name.empty() || name == "linear") return ActivationKind::linear;
  if (name == "relu") return ActivationKind::relu;
  if (name == "sigmoid") return ActivationKind::sigmoid;
  if (name == "tanh") return ActivationKind::tanh;
  if (name == "softmax") return ActivationKind::softmax;
  throw ConfigError(where + ": unknown activation '" + name +
                    "' (known: linear, relu, sigmoid, tanh, softmax)");
}

const char* activation_name(ActivationKind activation) {
  switch (activation) {
    case ActivationKind::linear:
      return "linear";
    case ActivationKind::relu:
      return "relu";
    case ActivationKind::sigmoid:
      return "sigmoid";
    case ActivationKind::tanh:
      return "tanh";
    case ActivationKind::softmax:
      return "softmax";
  }
  return "linear";
}

}  // namespace tandem
