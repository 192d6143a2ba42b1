"""Keras's core layers (also reachable as keras.layers.core, Keras 2's module)."""
import operator

from ... import _tandem
from .. import activations, initializers
from .._names import not_implemented, positive_int, reject_given
from .base import Layer


class Dense(Layer):
    """``units`` outputs of ``activation(inputs @ kernel + bias)``, on the last axis."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 lora_rank=None, **kwargs):
        super().__init__(**kwargs)
        reject_given("Dense", kernel_regularizer=kernel_regularizer,
                     bias_regularizer=bias_regularizer,
                     activity_regularizer=activity_regularizer,
                     kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                     lora_rank=lora_rank)
        units = positive_int(units, "Dense", "units")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)

    def _build_cpp(self):
        return _tandem.Dense(self.units, self.activation, self.use_bias, self._kernel_initializer,
                             self._bias_initializer, self.name or "")


class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def _build_cpp(self):
        return _tandem.Activation(self.activation, self.name or "")


class Dropout(Layer):
    """Inverted dropout of ``rate`` in training; identity in evaluate and predict. Masks are
    drawn from the fit's seed (a seeded fit repeats exactly), so ``seed`` here is accepted
    and does not change them."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if noise_shape is not None:
            raise not_implemented("Dropout(noise_shape=...)")
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate = float(rate)

    def _build_cpp(self):
        return _tandem.Dropout(self.rate, self.name or "")


class Flatten(Layer):
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise not_implemented(f"Flatten(data_format={data_format!r})")

    def _build_cpp(self):
        return _tandem.Flatten(self.name or "")


class Reshape(Layer):
    """The same values in another per-sample shape; one entry may be -1."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        try:
            shape = [operator.index(d) for d in tuple(target_shape)]
        except TypeError:
            raise TypeError(f"Reshape: target_shape must be a tuple of integers, got "
                            f"{target_shape!r}") from None
        if any(d != -1 and d <= 0 for d in shape) or shape.count(-1) > 1:
            raise ValueError(f"Reshape: target_shape must be positive integers with at most one "
                             f"-1, got {tuple(target_shape)}")
        self.target_shape = tuple(shape)

    def _build_cpp(self):
        return _tandem.Reshape(list(self.target_shape), self.name or "")


class Lambda:
    """Keras's Lambda runs a Python function inside the model; tandem's models run in C++."""

    def __init__(self, function=None, *args, **kwargs):
        raise not_implemented("layer Lambda", "a Python function cannot run inside tandem's "
                              "C++ graph; express it with tandem's layers")
