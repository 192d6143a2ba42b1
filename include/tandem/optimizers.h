// Optimizers with Keras's defaults and update rules (Keras 3 / tf.keras, float32).
// SGD: m = momentum*m - lr*g; w += m. Nesterov: w += momentum*m - lr*g. Without momentum:
//   w -= lr*g.
// RMSprop: v = rho*v + (1-rho)*g^2; w -= lr*g / sqrt(v + epsilon).
// Adam: m += (g-m)(1-b1); v += (g^2-v)(1-b2);
//   w -= lr*sqrt(1-b2^t)/(1-b1^t) * m / (sqrt(v) + epsilon).
// Accumulators start at zero.
#pragma once

#include <string>

namespace tandem {

struct Optimizer {
  std::string name = "rmsprop";  // sgd | rmsprop | adam
  double learning_rate = 0.001;
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  double rho = 0.9;       // rmsprop
  double beta_1 = 0.9;    // adam
  double beta_2 = 0.999;  // adam
  double epsilon = 1e-7;  // rmsprop, adam
};

Optimizer SGD(double learning_rate = 0.01, double momentum = 0.0, bool nesterov = false);
Optimizer RMSprop(double learning_rate = 0.001, double rho = 0.9, double epsilon = 1e-7);
Optimizer Adam(double learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.999,
               double epsilon = 1e-7);
// "sgd", "rmsprop", "adam" with Keras defaults; ConfigError otherwise.
Optimizer optimizer_from_name(const std::string& name);

}  // namespace tandem
