"""Initializers by name or as Keras objects (``GlorotUniform(seed=1)``)."""
from . import _names
from .. import _tandem

SUPPORTED = ("glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "random_normal",
             "random_uniform", "zeros", "ones")


class Initializer:
    _tandem_name = None

    def __init__(self, seed=None):
        self.seed = seed

    def get_config(self):
        return {"seed": self.seed}

    def __call__(self, shape, dtype=None):
        raise _names.not_implemented(f"{type(self).__name__}()(shape)",
                                     "initializers are used as layer arguments")


def _make(class_name, name, **fixed):
    def __init__(self, seed=None, **kwargs):
        for key, value in kwargs.items():
            if key not in fixed or value != fixed[key]:
                raise _names.not_implemented(f"{class_name}({key}={value!r})")
        Initializer.__init__(self, seed)
    return type(class_name, (Initializer,), {"__init__": __init__, "_tandem_name": name})


GlorotUniform = _make("GlorotUniform", "glorot_uniform")
GlorotNormal = _make("GlorotNormal", "glorot_normal")
HeNormal = _make("HeNormal", "he_normal")
HeUniform = _make("HeUniform", "he_uniform")
RandomNormal = _make("RandomNormal", "random_normal", mean=0.0, stddev=0.05)
RandomUniform = _make("RandomUniform", "random_uniform", minval=-0.05, maxval=0.05)
Zeros = _make("Zeros", "zeros")
Ones = _make("Ones", "ones")


def get(identifier):
    """An _tandem.Initializer for a name, a class or an instance."""
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        identifier = identifier()
    if isinstance(identifier, Initializer):
        return _tandem.Initializer(identifier._tandem_name, identifier.seed)
    name = _names.name_of(identifier, "initializer")
    name = {"GlorotUniform": "glorot_uniform"}.get(name, _names.snake_case(name)
                                                    if name[:1].isupper() else name)
    if name not in SUPPORTED:
        raise _names.not_implemented(f"initializer {name!r}", "supported: " + ", ".join(SUPPORTED))
    return _tandem.Initializer(name, None)
