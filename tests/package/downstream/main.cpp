// A program outside tandem's tree, built against the installed package (CMake or
// pkg-config): a small Sequential model fitted on random samples. Exits 1 if the loss is
// not finite or training did not run.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "tandem/tandem.h"

int main() {
  constexpr int64_t samples = 64, features = 8, classes = 3;
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  std::vector<float> x(samples * features), y(samples * classes, 0.f);
  for (int64_t i = 0; i < samples; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < features; ++j) sum += x[i * features + j] = normal(rng);
    y[i * classes + (sum > 0.5f ? 2 : sum < -0.5f ? 0 : 1)] = 1.f;
  }
  const tandem::Tensor x_train({samples, features}, x);  // (samples, features)
  const tandem::Tensor y_train({samples, classes}, y);   // (samples, classes), one-hot

  tandem::Sequential model({features},
                           {tandem::Dense(16, "relu"), tandem::Dense(classes, "softmax")});
  model.compile(tandem::SGD(0.1), "categorical_crossentropy", {"accuracy"});
  const auto history = model.fit(x_train, y_train, {.batch_size = 16, .epochs = 2, .verbose = 0});

  const auto& loss = history.history.at("loss");
  if (loss.size() != 2) {
    std::fprintf(stderr, "downstream: expected 2 epochs of loss, got %zu\n", loss.size());
    return 1;
  }
  for (double l : loss) {
    if (!std::isfinite(l) || l <= 0) {
      std::fprintf(stderr, "downstream: loss %g is not a finite positive number\n", l);
      return 1;
    }
  }
  std::printf("downstream: loss %.4f -> %.4f\n", loss.front(), loss.back());
  return 0;
}
