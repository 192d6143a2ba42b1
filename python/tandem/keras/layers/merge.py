"""Layers that join several inputs (Keras 2's keras.layers.merge)."""
from ... import _tandem
from .._names import not_implemented
from .base import Layer


class Add(Layer):
    """Element-wise sum of inputs of equal shape."""

    def _build_cpp(self):
        return _tandem.Add(self.name or "")


class Concatenate(Layer):
    """Joins inputs along ``axis`` (-1: the last)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if axis == 0:
            raise ValueError("Concatenate: axis 0 is the batch axis")
        # Keras counts the batch axis; tandem's C++ layer takes the per-sample axis.
        self.axis = axis if axis < 0 else axis - 1

    def _build_cpp(self):
        return _tandem.Concatenate(self.axis, self.name or "")


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


def merge(*args, **kwargs):
    """Keras 1's merge(inputs, mode=...)."""
    raise not_implemented("layer merge (Keras 1)", "use Add or Concatenate")
