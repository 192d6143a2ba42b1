"""Keras 3 reference for tandem's examples/mnist_convnet.cpp: Keras's "Simple MNIST convnet"
example, trained on Fashion-MNIST exactly as the example trains it.

    Input(28, 28, 1) -> Conv2D(32, 3, relu) -> MaxPooling2D(2) -> Conv2D(64, 3, relu)
    -> MaxPooling2D(2) -> Flatten -> Dropout(0.5) -> Dense(10, softmax)
    Adam (Keras defaults), categorical cross-entropy, batch 128, validation_split 0.1,
    inputs uint8 / 255, Keras's initialisation.

Run with the peers' environment (Keras 3 on TensorFlow, oneDNN on):
    TF_ENABLE_ONEDNN_OPTS=1 .venv-peers/bin/python scripts/reference/keras_mnist_convnet.py \
        --seed 1 --epochs 15 --json docs/reference/keras_mnist_convnet_seed1.json
Prints and writes, per epoch: loss, accuracy, val_loss, val_accuracy, seconds; then the
test loss and accuracy on the 10 000 test images.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def idx(name):
    """An IDX file of Debian's dataset-fashion-mnist (gzip or plain) as a numpy array."""
    path = os.path.join(DATA, name)
    opener = gzip.open if os.path.exists(path + ".gz") else open
    with opener(path + ".gz" if opener is gzip.open else path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--json")
    args = parser.parse_args()
    import keras
    from keras import layers

    keras.utils.set_random_seed(args.seed)
    x_train = (idx("train-images-idx3-ubyte") / 255.0).astype("float32").reshape(-1, 28, 28, 1)
    x_test = (idx("t10k-images-idx3-ubyte") / 255.0).astype("float32").reshape(-1, 28, 28, 1)
    y_train = keras.utils.to_categorical(idx("train-labels-idx1-ubyte"), 10)
    y_test = keras.utils.to_categorical(idx("t10k-labels-idx1-ubyte"), 10)
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])

    seconds = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    history = model.fit(x_train, y_train, batch_size=128, epochs=args.epochs,
                        validation_split=0.1, callbacks=[Timer()], verbose=2)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    result = {"keras": keras.__version__, "backend": keras.backend.backend(), "seed": args.seed,
              "epochs": args.epochs, "history": history.history, "epoch_seconds": seconds,
              "test_loss": loss, "test_accuracy": accuracy}
    print(f"test loss {loss:.4f}, test accuracy {accuracy:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
