"""to_categorical, multi_gpu_model (also at Keras 2's utils.training_utils), set_random_seed."""
import operator

import numpy as np

from ... import _tandem
from .training_utils import multi_gpu_model  # noqa: F401


def to_categorical(x, num_classes=None):
    """Integer labels of any shape -> one-hot float32 of shape ``shape + (num_classes,)``
    (a trailing axis of 1 is dropped first, as in Keras); num_classes defaults to the largest
    label + 1. Labels must lie in [0, 255]; the one-hot rows are made in C++."""
    y = np.asarray(x)
    if y.dtype == np.bool_:
        y = y.astype(np.uint8)
    if y.dtype != np.uint8:
        if y.dtype.kind not in "iuf" or (y.dtype.kind == "f" and not np.all(y == np.round(y))):
            raise ValueError(f"to_categorical: labels must be integers, got dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() > 255):
            raise ValueError(f"to_categorical: labels must be in [0, 255], got "
                             f"[{y.min()}, {y.max()}]")
        y = y.astype(np.uint8)
    if num_classes is not None:
        num_classes = operator.index(num_classes)
        if not 0 < num_classes <= 256:
            raise ValueError(f"to_categorical: num_classes must be in [1, 256], got "
                             f"{num_classes}")
    shape = y.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = np.ascontiguousarray(y.reshape(-1))
    one_hot = _tandem.to_categorical(flat, -1 if num_classes is None else num_classes)
    return one_hot.reshape(shape + (one_hot.shape[-1],))


def set_random_seed(seed):
    """Seeds weight initialisation, shuffling and dropout for everything that follows."""
    _tandem.set_random_seed(int(seed))
