"""Fashion-MNIST, the same shapes as MNIST: from Keras's cache (~/.keras/datasets/
fashion-mnist, as keras.datasets.fashion_mnist leaves it) or Debian's dataset-fashion-mnist
package (/usr/share/datasets/fashion-mnist)."""
import os

from ... import _tandem
from ._cache import keras_cache_dirs, not_found

_FILE = "train-images-idx3-ubyte"


def load_data():
    looked = [os.path.join(d, "fashion-mnist") for d in keras_cache_dirs()]
    looked.append(_tandem.FASHION_MNIST_DEFAULT_DIR)
    for directory in looked:
        if any(os.path.exists(os.path.join(directory, _FILE + ext)) for ext in ("", ".gz")):
            return _tandem.load_fashion_mnist(directory)
    raise not_found("fashion_mnist.load_data", looked,
                    "apt-get install dataset-fashion-mnist")
