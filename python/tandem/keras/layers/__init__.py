"""Keras layers on tandem's C++ layers: ``Input``, ``Dense``, ``Activation``, ``Dropout``,
``Flatten``, ``Add``, ``Concatenate`` (and ``add``, ``concatenate``). Every other layer a
Keras program may import is importable and raises NotImplementedError naming it when used.
"""
from .base import InputLayer, KerasTensor, Layer, Input  # noqa: F401
from .core import Activation, Dense, Dropout, Flatten, Lambda  # noqa: F401
from .merge import Add, Concatenate, add, concatenate, merge  # noqa: F401
from .unsupported import *  # noqa: F401,F403
from .unsupported import __all__ as _unsupported_names

__all__ = ["Input", "InputLayer", "KerasTensor", "Layer", "Activation", "Dense", "Dropout",
           "Flatten", "Lambda", "Add", "Concatenate", "add", "concatenate", "merge",
           *_unsupported_names]
