"""Metrics compile() takes: accuracy, in any of Keras's spellings (the accuracy that fits the
loss, as Keras picks it for "accuracy"). The logs use the spelling given, as Keras's do:
``metrics=["acc"]`` gives ``history.history["acc"]`` and ``"val_acc"``."""
from ._names import not_implemented, snake_case

_ACCURACY = ("accuracy", "acc", "categorical_accuracy", "sparse_categorical_accuracy",
             "binary_accuracy")


class Metric:
    def __init__(self, name=None, dtype=None, **kwargs):
        self.name = name or snake_case(type(self).__name__)


Accuracy = type("Accuracy", (Metric,), {})
CategoricalAccuracy = type("CategoricalAccuracy", (Metric,), {})
SparseCategoricalAccuracy = type("SparseCategoricalAccuracy", (Metric,), {})
BinaryAccuracy = type("BinaryAccuracy", (Metric,), {})


def get(identifier):
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        identifier = identifier()
    if isinstance(identifier, Metric):
        if identifier.name not in _ACCURACY:
            raise not_implemented(f"metric name {identifier.name!r}",
                                  "the log is named after the metric: " + ", ".join(_ACCURACY))
        return identifier.name
    name = identifier if isinstance(identifier, str) else getattr(identifier, "__name__", None)
    if name in _ACCURACY:
        return name
    raise not_implemented(f"metric {identifier!r}", "tandem reports the loss and accuracy")
