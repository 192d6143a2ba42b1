"""numpy in and out without copies; Keras's dataset loaders on local files."""
import gzip
import struct

import numpy as np
import pytest

import tandem
import tandem.keras as keras
from tandem import _tandem
from conftest import require_fashion_mnist, small_model


def test_float32_and_uint8_are_views_not_copies():
    a = np.zeros((4, 3), np.float32)
    s = _tandem.samples(a)
    a[2, 1] = 5.0  # written after the Samples exist: seen through them
    assert s.at(2, 1) == 5.0 and not s.is_bytes and s.sample_shape == [3]
    b = np.zeros((4, 3), np.uint8)
    s = _tandem.samples(b, 0.5)
    b[1, 2] = 8
    assert s.is_bytes and s.at(1, 2) == 4.0
    del b
    assert s.at(1, 2) == 4.0  # the view keeps the array alive


def test_outputs_own_their_memory(data):
    x, y = data
    model = small_model()
    p = model.predict(x, verbose=0)
    weights = model.get_weights()
    del model
    assert np.isfinite(p).all() and weights[0].shape == (20, 16)
    p[:] = 0  # writable numpy arrays


def test_to_categorical():
    y = keras.utils.to_categorical(np.array([0, 2, 1]))
    assert y.dtype == np.float32 and y.shape == (3, 3)
    np.testing.assert_array_equal(y, np.eye(3, dtype=np.float32)[[0, 2, 1]])
    assert keras.utils.to_categorical(np.array([[1], [0]]), 4).shape == (2, 4)
    with pytest.raises(ValueError):
        keras.utils.to_categorical(np.array([5]), 3)


def write_idx(path, array):
    kind = 0x08
    header = struct.pack(">HBB", 0, kind, array.ndim) + b"".join(
        struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def fake_mnist(n=6):
    rng = np.random.default_rng(0)
    return (rng.integers(0, 255, (n, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, n, dtype=np.uint8))


def test_mnist_from_keras_cache_npz(tmp_path, monkeypatch):
    xtr, ytr = fake_mnist(6)
    xte, yte = fake_mnist(4)
    (tmp_path / "datasets").mkdir()
    np.savez_compressed(tmp_path / "datasets" / "mnist.npz", x_train=xtr, y_train=ytr,
                        x_test=xte, y_test=yte)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (a, b), (c, d) = keras.datasets.mnist.load_data()
    for got, want in ((a, xtr), (b, ytr), (c, xte), (d, yte)):
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)


def test_mnist_from_idx_directory(tmp_path):
    xtr, ytr = fake_mnist(5)
    xte, yte = fake_mnist(3)
    for name, arr in (("train-images-idx3-ubyte", xtr), ("train-labels-idx1-ubyte", ytr),
                      ("t10k-images-idx3-ubyte", xte), ("t10k-labels-idx1-ubyte", yte)):
        write_idx(tmp_path / (name + ".gz"), arr)
    (a, b), (c, d) = keras.datasets.mnist.load_data(path=str(tmp_path))
    np.testing.assert_array_equal(a, xtr)
    np.testing.assert_array_equal(d, yte)


def test_mnist_missing_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        keras.datasets.mnist.load_data()
    message = str(info.value)
    assert str(tmp_path / "keras-home" / "datasets" / "mnist.npz") in message
    assert str(tmp_path / "home" / ".keras" / "datasets" / "mnist.npz") in message
    assert "does not download" in message and isinstance(info.value, tandem.IoError)


def test_fashion_mnist_from_debian_package(monkeypatch, tmp_path):
    require_fashion_mnist()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    (x_train, y_train), (x_test, y_test) = keras.datasets.fashion_mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and x_train.dtype == np.uint8
    assert y_train.shape == (60000,) and x_test.shape == (10000, 28, 28)
    assert set(np.unique(y_test)) == set(range(10))
