// The seed's Keras program, in C++ with tandem, on Fashion-MNIST:
//   Input(784) -> Dense(4096, relu) -> Dense(2048, relu) -> Dense(512, relu)
//              -> Dense(64, relu) -> Dense(10, softmax)
//   compile(rmsprop, categorical_crossentropy, accuracy); fit(batch 128, 5 epochs); predict
// Usage: seed_fashion_mnist [epochs] [data_dir]
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "tandem/tandem.h"

int main(int argc, char** argv) {
  try {
    const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
    const std::string dir = argc > 2 ? argv[2] : tandem::fashion_mnist::kDefaultDir;
    auto [train, test] = tandem::fashion_mnist::load_data(dir);
    auto x_train = tandem::scaled(train.x.reshape({60000, 784}), 1.f / 255);
    auto x_test = tandem::scaled(test.x.reshape({10000, 784}), 1.f / 255);
    auto y_train = tandem::to_categorical(train.y);
    auto y_test = tandem::to_categorical(test.y);

    auto inputs = tandem::Input({784});
    auto x = tandem::Dense(4096, "relu")(inputs);
    x = tandem::Dense(2048, "relu")(x);
    x = tandem::Dense(512, "relu")(x);
    x = tandem::Dense(64, "relu")(x);
    auto predictions = tandem::Dense(10, "softmax")(x);
    tandem::Model model(inputs, predictions);
    model.compile(tandem::RMSprop(), "categorical_crossentropy", {"accuracy"});
    model.summary();

    auto a = std::chrono::steady_clock::now();
    model.fit(x_train, y_train, {.batch_size = 128, .epochs = epochs});
    std::cout << std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count()
              << "\n";
    a = std::chrono::steady_clock::now();
    auto probabilities = model.predict(x_test, {.batch_size = 128});
    std::cout << std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count()
              << "\n";
    auto scores = model.evaluate(x_test, y_test, {.batch_size = 128, .verbose = 0});
    std::cout << "test loss " << scores["loss"] << ", test accuracy " << scores["accuracy"] << "\n";
  } catch (const tandem::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
