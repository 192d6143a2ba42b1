import os
import shutil

import numpy as np
import pytest

import tandem.keras as keras


def require(condition, reason):
    """Skips visibly on a developer's machine; in CI (CI=true) a missing dependency fails."""
    if condition:
        return
    if os.environ.get("CI") or os.environ.get("TANDEM_NO_SKIP"):
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


def require_fashion_mnist():
    require(os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
            or os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte"),
            "Debian's dataset-fashion-mnist is not installed")


def require_mpirun():
    require(shutil.which("mpirun") is not None, "mpirun (openmpi-bin) is not installed")


@pytest.fixture
def data():
    """512 samples of 20 features, 3 classes, one-hot."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((512, 20)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.uint8) + (x[:, 1] > 0.5).astype(np.uint8)
    return x, keras.utils.to_categorical(labels, 3)


def small_model(seed=3, dropout=0.0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input(shape=(20,))
    h = keras.layers.Dense(16, activation="relu")(inputs)
    if dropout:
        h = keras.layers.Dropout(dropout)(h)
    outputs = keras.layers.Dense(3, activation="softmax")(h)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss="categorical_crossentropy", metrics=["accuracy"])
    return model
