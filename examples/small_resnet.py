# A small ResNet for 32x32x3 images in Keras's functional API (residual blocks of two 3x3
# Conv2D + BatchNormalization, Add with the shortcut, a 1x1 projection where the shape
# changes), with only `import keras` changed to tandem's; trained on 1 device and then on N.
# CIFAR-10 is not on this machine, so the images are random ones: this measures seconds
# per epoch, not accuracy.
#
#   python examples/small_resnet.py [DEVICES (2)] [SAMPLES (2048)] [EPOCHS (2)]
import sys
import time

import numpy as np
import tandem
import tandem.keras as keras
from tandem.keras import layers


def residual_block(x, filters, stride):
    y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
    y = layers.Activation("relu")(layers.BatchNormalization()(y))
    y = layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    shortcut = x
    if stride != 1 or x.shape[-1] != filters:
        shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(x)
        shortcut = layers.BatchNormalization()(shortcut)
    return layers.Activation("relu")(layers.Add()([y, shortcut]))


def build(classes=10):
    inputs = keras.Input(shape=(32, 32, 3))
    x = layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    x = layers.Activation("relu")(layers.BatchNormalization()(x))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        x = residual_block(x, filters, stride)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(classes, activation="softmax")(x),
                       name="small_resnet")


devices = int(sys.argv[1]) if len(sys.argv) > 1 else 2
samples = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
rng = np.random.default_rng(0)
x = rng.uniform(0, 1, (samples, 32, 32, 3)).astype("float32")
y = keras.utils.to_categorical(rng.integers(0, 10, samples), 10)

seconds = {}
for n in (1, devices):
    keras.utils.set_random_seed(42)
    with tandem.distribute.MirroredStrategy(n).scope():
        model = build()
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
                      loss="categorical_crossentropy", metrics=["accuracy"])
    if n == 1:
        model.summary()
    start = time.perf_counter()
    model.fit(x, y, batch_size=128, epochs=epochs, verbose=2)
    seconds[n] = time.perf_counter() - start
    print(f"{n} device{'s' if n > 1 else ''}: {seconds[n]:.1f} s for {epochs} epochs")
print(f"speedup with {devices} devices: {seconds[1] / seconds[devices]:.2f}x")
