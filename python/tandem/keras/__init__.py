"""Keras's API on tandem: ``import tandem.keras as keras`` and a Keras program runs with
tandem's C++ engine. Names, arguments and defaults are Keras 3's (with Keras 2's aliases
where programs still use them); what tandem cannot run raises NotImplementedError naming it.
"""
from . import (  # noqa: F401
    activations,
    callbacks,
    datasets,
    initializers,
    layers,
    losses,
    metrics,
    models,
    optimizers,
    utils,
)
from .layers import Input  # noqa: F401
from .models import Model, Sequential  # noqa: F401
from .utils import set_random_seed  # noqa: F401

__version__ = "0.1.0"
