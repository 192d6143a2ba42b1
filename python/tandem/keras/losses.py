"""Losses by name, function or class (``loss="categorical_crossentropy"``,
``keras.losses.CategoricalCrossentropy()``). They are computed in C++ inside fit and evaluate."""
from ._names import not_implemented, snake_case, symbolic_function

SUPPORTED = ("categorical_crossentropy", "sparse_categorical_crossentropy",
             "binary_crossentropy", "mean_squared_error")
_ALIASES = {"mse": "mean_squared_error", "MSE": "mean_squared_error"}


def _function(name):
    return symbolic_function(name, "losses", "losses are computed inside fit and evaluate")


categorical_crossentropy = _function("categorical_crossentropy")
sparse_categorical_crossentropy = _function("sparse_categorical_crossentropy")
binary_crossentropy = _function("binary_crossentropy")
mean_squared_error = _function("mean_squared_error")
mse = MSE = mean_squared_error


class Loss:
    _tandem_name = None

    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="sum_over_batch_size",
                 name=None, axis=-1, **kwargs):
        owner = type(self).__name__
        if from_logits:
            raise not_implemented(f"{owner}(from_logits=True)", "end the model with softmax or "
                                  "sigmoid (fused with the loss in C++)")
        if label_smoothing:
            raise not_implemented(f"{owner}(label_smoothing={label_smoothing})")
        if reduction not in ("sum_over_batch_size", "auto", None):
            raise not_implemented(f"{owner}(reduction={reduction!r})")
        if axis != -1:
            raise not_implemented(f"{owner}(axis={axis})")
        if kwargs.pop("ignore_class", None) is not None:
            raise not_implemented(f"{owner}(ignore_class=...)")
        if kwargs:
            raise TypeError(f"{owner}: unrecognized keyword arguments {sorted(kwargs)}")

    def __call__(self, y_true, y_pred, sample_weight=None):
        raise not_implemented(f"{type(self).__name__}()(y_true, y_pred)",
                              "losses are computed inside fit and evaluate")


def _class(class_name, name):
    return type(class_name, (Loss,), {"_tandem_name": name})


CategoricalCrossentropy = _class("CategoricalCrossentropy", "categorical_crossentropy")
SparseCategoricalCrossentropy = _class("SparseCategoricalCrossentropy",
                                       "sparse_categorical_crossentropy")
BinaryCrossentropy = _class("BinaryCrossentropy", "binary_crossentropy")
MeanSquaredError = _class("MeanSquaredError", "mean_squared_error")


def get(identifier):
    """The C++ name of a loss given as a string, function, class or instance."""
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        identifier = identifier()
    name = identifier if isinstance(identifier, str) else getattr(identifier, "_tandem_name",
                                                                  None)
    if name is None:
        raise not_implemented(f"loss {identifier!r}", "tandem's losses are " + ", ".join(SUPPORTED))
    name = _ALIASES.get(name, name)
    if name[:1].isupper():
        name = snake_case(name)
    if name not in SUPPORTED:
        raise not_implemented(f"loss {name!r}", "tandem's losses are " + ", ".join(SUPPORTED))
    return name
