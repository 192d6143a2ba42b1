"""Layer, Input and the symbolic tensors a functional model is built from."""
import operator

from ... import _tandem
from .._names import not_implemented, reject_unknown

_LEGACY_KWARGS = ("input_shape", "batch_input_shape", "input_dim", "batch_size", "dtype",
                  "trainable", "name", "weights")


def _shape_tuple(shape, owner):
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    out = []
    for d in shape:
        if d is None:
            raise not_implemented(f"{owner} with a variable dimension {tuple(shape)}",
                                  "give every per-sample dimension")
        try:
            d = operator.index(d)  # numpy integers too
        except TypeError:
            raise ValueError(f"{owner}: dimensions must be integers, got {tuple(shape)}") from None
        if d <= 0 or isinstance(d, bool):
            raise ValueError(f"{owner}: dimensions must be positive, got {tuple(shape)}")
        out.append(d)
    return tuple(out)


class KerasTensor:
    """A symbolic tensor: a layer's output in a graph being built. ``shape`` includes the
    batch axis as None, as in Keras."""

    def __init__(self, node):
        self._node = node

    @property
    def shape(self):
        return (None, *self._node.shape)

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}>"


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None,
          tensor=None, **kwargs):
    """A symbolic input of per-sample ``shape`` (the batch axis excluded)."""
    reject_unknown("Input", kwargs)
    if batch_shape is not None:
        shape = tuple(batch_shape)[1:]
    if shape is None:
        raise ValueError("Input: give shape= (the per-sample shape, e.g. shape=(784,))")
    if sparse or tensor is not None:
        raise not_implemented("Input(sparse=/tensor=)")
    if dtype not in (None, "float32", "uint8"):
        raise not_implemented(f"Input(dtype={dtype!r})", "inputs are float32 (uint8 is scaled)")
    return KerasTensor(_tandem.Input(list(_shape_tuple(shape, "Input")), name or ""))


class Layer:
    """A layer, ready to be called on KerasTensors; calling one layer twice shares its
    weights. Subclasses create the C++ layer in ``_build_cpp``."""

    def __init__(self, name=None, input_shape=None, batch_input_shape=None, input_dim=None,
                 dtype=None, trainable=True, **kwargs):
        reject_unknown(type(self).__name__, kwargs)
        if dtype not in (None, "float32"):
            raise not_implemented(f"{type(self).__name__}(dtype={dtype!r})")
        if not trainable:
            raise not_implemented(f"{type(self).__name__}(trainable=False)")
        self.name = name
        if input_dim is not None:
            input_shape = (input_dim,)
        if batch_input_shape is not None:
            input_shape = tuple(batch_input_shape)[1:]
        self._input_shape = None if input_shape is None else _shape_tuple(
            input_shape, type(self).__name__)
        self._cpp = None

    @property
    def cpp(self):
        if self._cpp is None:
            self._cpp = self._build_cpp()
        return self._cpp

    def _build_cpp(self):
        raise NotImplementedError(type(self).__name__)

    def __call__(self, inputs, *args, **kwargs):
        if args or kwargs.keys() - {"training", "mask"}:
            raise not_implemented(f"{type(self).__name__}.__call__ with extra arguments")
        if isinstance(inputs, (list, tuple)):
            return KerasTensor(self.cpp([_node_of(t, self) for t in inputs]))
        return KerasTensor(self.cpp(_node_of(inputs, self)))

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


class InputLayer:
    """Keras's InputLayer, as the first entry of a Sequential model."""

    def __init__(self, shape=None, batch_size=None, dtype=None, batch_shape=None, name=None,
                 input_shape=None, **kwargs):
        self.tensor = Input(shape=shape if shape is not None else input_shape,
                            batch_size=batch_size, dtype=dtype, batch_shape=batch_shape,
                            name=name, **kwargs)
        self.name = name


def _node_of(tensor, layer):
    if isinstance(tensor, KerasTensor):
        return tensor._node
    raise TypeError(f"{type(layer).__name__} must be called on a symbolic tensor from Input() or "
                    f"another layer, got {type(tensor).__name__}; tandem runs layers inside "
                    "models (fit, evaluate, predict), not on arrays")
