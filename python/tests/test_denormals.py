"""Denormal floats are flushed to zero while tandem computes (as TensorFlow does) and kept
with tandem.set_flush_denormals(False); the calling Python thread, and Python callbacks, stay
in their own mode. Each check computes with a denormal (1e-40) and looks at the result."""
import platform

import numpy as np
import pytest

import tandem
import tandem.keras as keras
from conftest import require

TINY = np.float32(1e-40)  # a denormal float32
HUGE = np.float32(1e30)   # TINY * HUGE = 1e-10, a normal float


def python_keeps_denormals():
    return TINY * np.float32(1.0) != 0  # numpy on this thread: 0 if it flushed


def tiny_weight_model():
    model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1, use_bias=False)])
    model.set_weights([np.array([[TINY]], np.float32)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    return model


class Probe(keras.callbacks.Callback):
    """Numpy's arithmetic in a callback, and a predict nested in fit by a model of its own
    whose weight is still 1e-40."""

    def __init__(self):
        super().__init__()
        self.kept = []
        self.other = tiny_weight_model()
        self.predicted = []

    def on_train_batch_end(self, batch, logs=None):
        self.kept.append(python_keeps_denormals())
        self.predicted.append(float(self.other.predict(X, verbose=0)[0, 0]))
        self.kept.append(python_keeps_denormals())


@pytest.fixture(autouse=True)
def flush_by_default():
    require(platform.machine() in ("x86_64", "AMD64", "aarch64", "arm64"),
            "tandem flushes denormals on x86-64 and AArch64 only")
    assert tandem.flush_denormals()
    assert python_keeps_denormals()
    yield
    tandem.set_flush_denormals(True)


X = np.full((2, 1), HUGE, np.float32)
Y = np.zeros((2, 1), np.float32)
# Training on x = 0 gives the weight a zero gradient: one step of SGD writes w - 0.1 * 0 back,
# the weight itself where the update keeps denormals, 0 where it flushes them.
X0 = np.zeros((2, 1), np.float32)


@pytest.mark.parametrize("devices", [1, 2])
def test_flushed_while_tandem_computes_and_not_in_python(devices):
    model = tiny_weight_model()
    assert model.predict(X, verbose=0)[0, 0] == 0
    assert python_keeps_denormals()
    probe = Probe()
    model.fit(X0, Y, batch_size=2, epochs=1, verbose=0, devices=devices, callbacks=[probe])
    assert model.get_weights()[0][0, 0] == 0
    assert probe.kept == [True, True]
    assert probe.predicted == [0.0]
    assert python_keeps_denormals()


@pytest.mark.parametrize("devices", [1, 2])
def test_kept_when_asked(devices):
    tandem.set_flush_denormals(False)
    assert not tandem.flush_denormals()
    model = tiny_weight_model()
    assert model.predict(X, verbose=0)[0, 0] == pytest.approx(1e-10, rel=1e-3)
    model.fit(X0, Y, batch_size=2, epochs=1, verbose=0, devices=devices)
    assert model.get_weights()[0][0, 0] == TINY
    assert model.evaluate(X, Y, verbose=0) > 0
