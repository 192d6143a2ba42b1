# Keras's mnist_mlp example (Sequential, Dropout, RMSprop), written for Keras 3, with only
# `import keras` changed to tandem's (Fashion-MNIST stands in for MNIST on this machine).
#
#   python examples/mnist_mlp.py [EPOCHS]
import sys

import numpy as np
import tandem.keras as keras
from tandem.keras import layers

batch_size = 128
num_classes = 10
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20

(x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
x_train = x_train.reshape(60000, 784).astype("float32") / 255
x_test = x_test.reshape(10000, 784).astype("float32") / 255
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")

y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

model = keras.Sequential(
    [
        keras.Input(shape=(784,)),
        layers.Dense(512, activation="relu"),
        layers.Dropout(0.2),
        layers.Dense(512, activation="relu"),
        layers.Dropout(0.2),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()

model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.RMSprop(),
              metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, verbose=1,
                    validation_split=0.1,
                    callbacks=[keras.callbacks.EarlyStopping(monitor="val_loss", patience=2)])
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
model.save("mnist_mlp.tandem")
restored = keras.models.load_model("mnist_mlp.tandem")
assert np.allclose(restored.predict(x_test[:100], verbose=0), model.predict(x_test[:100], verbose=0))
