"""Activations by name (``activation="relu"`` or ``activation=keras.activations.relu``)."""
from ._names import not_implemented, symbolic_function

SUPPORTED = ("linear", "relu", "sigmoid", "tanh", "softmax")


def _activation(name):
    return symbolic_function(name, "activations", "activations are used as layer arguments")


linear = _activation("linear")
relu = _activation("relu")
sigmoid = _activation("sigmoid")
tanh = _activation("tanh")
softmax = _activation("softmax")


def get(identifier):
    """The name tandem uses for an activation given as None, a string or a function."""
    if identifier is None:
        return "linear"
    name = identifier if isinstance(identifier, str) else getattr(identifier, "_tandem_name",
                                                                  getattr(identifier, "__name__",
                                                                          None))
    if name not in SUPPORTED:
        raise not_implemented(f"activation {name or identifier!r}",
                              "supported: " + ", ".join(SUPPORTED))
    return name
