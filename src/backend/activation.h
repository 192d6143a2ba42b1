// Activation functions by name, shared by layers, the backend and serialisation.
#pragma once

#include <string>

namespace tandem {

enum class ActivationKind { linear, relu, sigmoid, tanh, softmax };

// "relu" -> Activation::relu; "" and "linear" -> linear. Unknown names are a ConfigError
// that lists the known ones; `where` names the layer or option being parsed.
ActivationKind parse_activation(const std::string& name, const std::string& where);
const char* activation_name(ActivationKind activation);

}  // namespace tandem
