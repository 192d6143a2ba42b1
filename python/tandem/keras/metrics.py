"""Metrics compile() takes: accuracy, in any of Keras's spellings (the accuracy that fits the
loss, as Keras picks it for "accuracy")."""
from ._names import not_implemented

_ACCURACY = ("accuracy", "acc", "categorical_accuracy", "sparse_categorical_accuracy",
             "binary_accuracy")


class Metric:
    _tandem_name = "accuracy"

    def __init__(self, name=None, dtype=None, **kwargs):
        self.name = name


Accuracy = type("Accuracy", (Metric,), {})
CategoricalAccuracy = type("CategoricalAccuracy", (Metric,), {})
SparseCategoricalAccuracy = type("SparseCategoricalAccuracy", (Metric,), {})
BinaryAccuracy = type("BinaryAccuracy", (Metric,), {})


def get(identifier):
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        identifier = identifier()
    if isinstance(identifier, Metric):
        return "accuracy"
    name = identifier if isinstance(identifier, str) else getattr(identifier, "__name__", None)
    if name in _ACCURACY:
        return "accuracy"
    raise not_implemented(f"metric {identifier!r}", "tandem reports the loss and accuracy")
