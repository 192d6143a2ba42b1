# MiniGoogLeNet, as the multi-GPU blog post builds it in Keras (conv, inception and
# downsample modules with BatchNormalization), trained on 1 device and then on N devices
# with the blog's scaling rule (batch 64 per device), with only `import keras` changed to
# tandem's. CIFAR-10 is not on this machine, so the images are random 32x32x3 ones: this
# measures seconds per epoch, not accuracy.
#
#   python examples/minigooglenet.py [DEVICES (2)] [SAMPLES (2048)]
import sys
import time

import numpy as np
import tandem
import tandem.keras as keras
from tandem.keras.layers import (Activation, AveragePooling2D, BatchNormalization, Conv2D,
                                 Dense, Dropout, Flatten, Input, MaxPooling2D, concatenate)


def conv_module(x, K, kX, kY, stride, chanDim, padding="same"):
    x = Conv2D(K, (kX, kY), strides=stride, padding=padding)(x)
    x = BatchNormalization(axis=chanDim)(x)
    return Activation("relu")(x)


def inception_module(x, numK1x1, numK3x3, chanDim):
    conv_1x1 = conv_module(x, numK1x1, 1, 1, (1, 1), chanDim)
    conv_3x3 = conv_module(x, numK3x3, 3, 3, (1, 1), chanDim)
    return concatenate([conv_1x1, conv_3x3], axis=chanDim)


def downsample_module(x, K, chanDim):
    conv_3x3 = conv_module(x, K, 3, 3, (2, 2), chanDim, padding="valid")
    pool = MaxPooling2D((3, 3), strides=(2, 2))(x)
    return concatenate([conv_3x3, pool], axis=chanDim)


def build(width, height, depth, classes):
    chanDim = -1
    inputs = Input(shape=(height, width, depth))
    x = conv_module(inputs, 96, 3, 3, (1, 1), chanDim)
    x = inception_module(x, 32, 32, chanDim)
    x = inception_module(x, 32, 48, chanDim)
    x = downsample_module(x, 80, chanDim)
    x = inception_module(x, 112, 48, chanDim)
    x = inception_module(x, 96, 64, chanDim)
    x = inception_module(x, 80, 80, chanDim)
    x = inception_module(x, 48, 96, chanDim)
    x = downsample_module(x, 96, chanDim)
    x = inception_module(x, 176, 160, chanDim)
    x = inception_module(x, 176, 160, chanDim)
    x = AveragePooling2D((7, 7))(x)
    x = Dropout(0.5)(x)
    x = Flatten()(x)
    x = Dense(classes)(x)
    x = Activation("softmax")(x)
    return keras.Model(inputs, x, name="googlenet")


devices = int(sys.argv[1]) if len(sys.argv) > 1 else 2
samples = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
rng = np.random.default_rng(0)
x = rng.uniform(0, 1, (samples, 32, 32, 3)).astype("float32")
y = keras.utils.to_categorical(rng.integers(0, 10, samples), 10)

seconds = {}
for n in (1, devices):
    keras.utils.set_random_seed(42)
    with tandem.distribute.MirroredStrategy(n).scope():
        model = build(32, 32, 3, 10)
        model.compile(loss="categorical_crossentropy", metrics=["accuracy"],
                      optimizer=keras.optimizers.SGD(learning_rate=1e-2, momentum=0.9))
    if n == 1:
        model.summary()
    start = time.perf_counter()
    model.fit(x, y, batch_size=64 * n, epochs=1, verbose=2)
    seconds[n] = time.perf_counter() - start
    print(f"{n} device{'s' if n > 1 else ''}: {seconds[n]:.1f} s for {samples} images")
print(f"speedup with {devices} devices: {seconds[1] / seconds[devices]:.2f}x")
