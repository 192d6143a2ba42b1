"""Metrics compile() takes: accuracy, in any of Keras's spellings. "accuracy" and "acc" pick
the accuracy that fits the shapes, as Keras 3 does; the others (by name or class) are what
they name. The logs use the spelling given, as Keras's do: ``metrics=["acc"]`` gives
``history.history["acc"]`` and ``"val_acc"``."""
from ._names import not_implemented, snake_case

_ACCURACY = ("accuracy", "acc", "categorical_accuracy", "sparse_categorical_accuracy",
             "binary_accuracy")


class Metric:
    def __init__(self, name=None, dtype=None):
        owner = type(self).__name__
        if dtype not in (None, "float32"):
            raise not_implemented(f"{owner}(dtype={dtype!r})")
        self.name = name or snake_case(owner)


class CategoricalAccuracy(Metric):
    pass


class SparseCategoricalAccuracy(Metric):
    pass


class BinaryAccuracy(Metric):
    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        if threshold != 0.5:
            raise not_implemented(f"BinaryAccuracy(threshold={threshold!r})")
        super().__init__(name, dtype)


class Accuracy(Metric):
    def __init__(self, *args, **kwargs):
        raise not_implemented("keras.metrics.Accuracy (the fraction of outputs equal to their "
                              "labels)", "use metrics=['accuracy'], which picks the accuracy "
                              "that fits the loss")


def get(identifier):
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        identifier = identifier()
    if isinstance(identifier, Metric):
        own = snake_case(type(identifier).__name__)
        if identifier.name != own:
            raise not_implemented(f"{type(identifier).__name__}(name={identifier.name!r})",
                                  f"the log is named after the metric ({own!r})")
        return own
    name = identifier if isinstance(identifier, str) else getattr(identifier, "__name__", None)
    if name in _ACCURACY:
        return name
    raise not_implemented(f"metric {identifier!r}", "tandem reports the loss and accuracy")
