"""to_categorical, multi_gpu_model (also at Keras 2's utils.training_utils), set_random_seed."""
import numpy as np

from ... import _tandem
from .training_utils import multi_gpu_model  # noqa: F401


def to_categorical(x, num_classes=None):
    """Integer labels (n,) or (n, 1) -> one-hot float32 (n, num_classes); num_classes
    defaults to the largest label + 1. Labels must lie in [0, 255]."""
    y = np.asarray(x)
    if y.dtype != np.uint8:
        if y.dtype.kind not in "iuf" or (y.dtype.kind == "f" and not np.all(y == np.round(y))):
            raise ValueError(f"to_categorical: labels must be integers, got dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() > 255):
            raise ValueError(f"to_categorical: labels must be in [0, 255], got "
                             f"[{y.min()}, {y.max()}]")
        y = y.astype(np.uint8)
    return _tandem.to_categorical(np.ascontiguousarray(y), -1 if num_classes is None
                                  else int(num_classes))


def set_random_seed(seed):
    """Seeds weight initialisation, shuffling and dropout for everything that follows."""
    _tandem.set_random_seed(int(seed))
