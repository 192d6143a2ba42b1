// Keras's "Simple MNIST convnet" example, in C++ with tandem, on Fashion-MNIST:
//   Input(28, 28, 1) -> Conv2D(32, 3, relu) -> MaxPooling2D(2) -> Conv2D(64, 3, relu)
//   -> MaxPooling2D(2) -> Flatten -> Dropout(0.5) -> Dense(10, softmax)
//   compile(adam, categorical_crossentropy, accuracy); fit(batch 128, validation_split 0.1)
// Usage: mnist_convnet [epochs (15)] [devices (1)] [seed (none)] [data_dir]
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "tandem/tandem.h"

int main(int argc, char** argv) {
  try {
    const int epochs = argc > 1 ? std::atoi(argv[1]) : 15;
    const int devices = argc > 2 ? std::atoi(argv[2]) : 1;
    if (argc > 3) tandem::set_random_seed(std::strtoull(argv[3], nullptr, 10));
    const std::string dir = argc > 4 ? argv[4] : tandem::fashion_mnist::kDefaultDir;
    auto [train, test] = tandem::fashion_mnist::load_data(dir);
    auto x_train = tandem::scaled(train.x.reshape({-1, 28, 28, 1}), 1.f / 255);
    auto x_test = tandem::scaled(test.x.reshape({-1, 28, 28, 1}), 1.f / 255);
    auto y_train = tandem::to_categorical(train.y);
    auto y_test = tandem::to_categorical(test.y);

    auto inputs = tandem::Input({28, 28, 1});
    auto x = tandem::Conv2D(32, 3, "relu")(inputs);
    x = tandem::MaxPooling2D(2)(x);
    x = tandem::Conv2D(64, 3, "relu")(x);
    x = tandem::MaxPooling2D(2)(x);
    x = tandem::Flatten()(x);
    x = tandem::Dropout(0.5)(x);
    auto outputs = tandem::Dense(10, "softmax")(x);
    tandem::Model model(inputs, outputs, "mnist_convnet");
    model.compile(tandem::Adam(), "categorical_crossentropy", {"accuracy"});
    model.summary();

    const auto start = std::chrono::steady_clock::now();
    model.fit(x_train, y_train,
              {.batch_size = 128,
               .epochs = epochs,
               .verbose = 2,
               .validation_split = 0.1,
               .devices = devices});
    std::cout << "fit "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << " s\n";
    auto scores = model.evaluate(x_test, y_test, {.batch_size = 128, .verbose = 0});
    std::cout << "test loss " << scores["loss"] << ", test accuracy " << scores["accuracy"] << "\n";
  } catch (const tandem::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
