"""Keras's image layers on tandem's C++ layers: Conv2D, MaxPooling2D, AveragePooling2D,
GlobalAveragePooling2D, ZeroPadding2D (channels last, Keras 3's arguments and defaults)."""
import operator

from ... import _tandem
from .. import activations, initializers
from .._names import not_implemented, reject_given, positive_int
from .base import Layer


def _pair(value, owner, arg):
    """Keras's int-or-tuple arguments (kernel_size=3, strides=(2, 1)) as a (height, width)
    pair of positive integers."""
    if not isinstance(value, (tuple, list)):
        value = (value, value)
    if len(value) != 2:
        raise ValueError(f"{owner}: {arg} must be an integer or a pair, got {value!r}")
    return tuple(positive_int(v, owner, arg) for v in value)


def _padding(padding, owner):
    padding = str(padding).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"{owner}: padding must be 'valid' or 'same', got {padding!r}")
    return padding


def _channels_last(data_format, owner):
    if data_format not in (None, "channels_last"):
        raise not_implemented(f"{owner}(data_format={data_format!r})",
                              "tandem's images are channels last (height, width, channels)")


class Conv2D(Layer):
    """``filters`` outputs of ``activation(conv2d(inputs, kernel) + bias)``; kernel
    (kernel_h, kernel_w, channels, filters)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, lora_rank=None, **kwargs):
        super().__init__(**kwargs)
        owner = "Conv2D"
        reject_given(owner, kernel_regularizer=kernel_regularizer,
                     bias_regularizer=bias_regularizer,
                     activity_regularizer=activity_regularizer,
                     kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                     lora_rank=lora_rank)
        if groups != 1:
            raise not_implemented(f"Conv2D(groups={groups!r})")
        _channels_last(data_format, owner)
        filters = positive_int(filters, owner, "filters")
        self.filters = filters
        self.kernel_size = _pair(kernel_size, owner, "kernel_size")
        self.strides = _pair(strides, owner, "strides")
        self.padding = _padding(padding, owner)
        self.dilation_rate = _pair(dilation_rate, owner, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)

    def _build_cpp(self):
        return _tandem.Conv2D(self.filters, self.kernel_size, self.activation, self.strides,
                              self.padding, self.dilation_rate, self.use_bias,
                              self._kernel_initializer, self._bias_initializer, self.name or "")


class _Pooling2D(Layer):
    _max = True

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        _channels_last(data_format, owner)
        self.pool_size = _pair(pool_size, owner, "pool_size")
        self.strides = None if strides is None else _pair(strides, owner, "strides")
        self.padding = _padding(padding, owner)

    def _build_cpp(self):
        make = _tandem.MaxPooling2D if self._max else _tandem.AveragePooling2D
        return make(self.pool_size, self.strides, self.padding, self.name or "")


class MaxPooling2D(_Pooling2D):
    """The maximum of each ``pool_size`` window (strides default to pool_size)."""


class AveragePooling2D(_Pooling2D):
    """The mean of each ``pool_size`` window, counting only cells inside the input."""
    _max = False


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D


class GlobalAveragePooling2D(Layer):
    """(height, width, channels) -> (channels): the mean over every position."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        _channels_last(data_format, "GlobalAveragePooling2D")
        if keepdims:
            raise not_implemented("GlobalAveragePooling2D(keepdims=True)")

    def _build_cpp(self):
        return _tandem.GlobalAveragePooling2D(self.name or "")


GlobalAvgPool2D = GlobalAveragePooling2D


class ZeroPadding2D(Layer):
    """Zeros around the height and width axes: ``padding`` is an int, (rows, columns) or
    ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last(data_format, "ZeroPadding2D")
        bad = ValueError("ZeroPadding2D: padding must be an int, a pair or a pair of pairs, "
                         f"got {padding!r}")
        if isinstance(padding, (tuple, list)) and len(padding) == 2 and all(
                isinstance(p, (tuple, list)) for p in padding):
            values = (*padding[0], *padding[1])
            if len(values) != 4:
                raise bad
        elif isinstance(padding, (tuple, list)):
            if len(padding) != 2:
                raise bad
            values = (padding[0], padding[0], padding[1], padding[1])
        else:
            values = (padding,) * 4
        try:
            values = tuple(operator.index(v) for v in values)
        except TypeError:
            raise bad from None
        if any(v < 0 for v in values):
            raise bad
        self.padding = ((values[0], values[1]), (values[2], values[3]))

    def _build_cpp(self):
        (top, bottom), (left, right) = self.padding
        return _tandem.ZeroPadding2D(top, bottom, left, right, self.name or "")
