"""Keras layers on tandem's C++ layers: ``Input``, ``Dense``, ``Activation``, ``Dropout``,
``Flatten``, ``Reshape``, ``Add``, ``Concatenate`` (and ``add``, ``concatenate``),
``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``, ``GlobalAveragePooling2D`` and
``ZeroPadding2D``, ``BatchNormalization``. Every other layer a Keras program may import is importable and raises
NotImplementedError naming it when used.
"""
from .base import InputLayer, KerasTensor, Layer, Input  # noqa: F401
from .convolutional import (AveragePooling2D, AvgPool2D, Conv2D, GlobalAveragePooling2D,  # noqa: F401
                            GlobalAvgPool2D, MaxPool2D, MaxPooling2D, ZeroPadding2D)
from .core import Activation, Dense, Dropout, Flatten, Lambda, Reshape  # noqa: F401
from .normalization import BatchNormalization  # noqa: F401
from .merge import Add, Concatenate, add, concatenate, merge  # noqa: F401
from .unsupported import *  # noqa: F401,F403
from .unsupported import __all__ as _unsupported_names

__all__ = ["Input", "InputLayer", "KerasTensor", "Layer", "Activation", "Dense", "Dropout",
           "Flatten", "Lambda", "Reshape", "Conv2D", "MaxPooling2D", "MaxPool2D",
           "AveragePooling2D", "AvgPool2D", "GlobalAveragePooling2D", "GlobalAvgPool2D",
           "ZeroPadding2D", "BatchNormalization", "Add", "Concatenate", "add", "concatenate", "merge",
           *_unsupported_names]
