"""MNIST: ``(x_train, y_train), (x_test, y_test) = mnist.load_data()`` -> uint8 arrays
(60000, 28, 28), (60000,), (10000, 28, 28), (10000,)."""
import os

from ... import _tandem
from ._cache import keras_cache_dirs, not_found


def load_data(path="mnist.npz"):
    """Reads Keras's cached ``mnist.npz`` (``path`` relative to $KERAS_HOME/datasets or
    ~/.keras/datasets, as Keras resolves it), or ``path`` itself: an .npz file or a directory
    of the four IDX files (train-images-idx3-ubyte, ... each optionally .gz)."""
    path = os.fspath(path)
    candidates = [path] if os.path.isabs(path) else [path] + [
        os.path.join(d, path) for d in keras_cache_dirs()]
    for candidate in candidates:
        if os.path.exists(candidate):
            return _tandem.load_mnist(candidate)
    raise not_found("mnist.load_data", candidates,
                    "copy Keras's mnist.npz into ~/.keras/datasets, or pass path= an .npz file "
                    "or a directory of MNIST's IDX files")
