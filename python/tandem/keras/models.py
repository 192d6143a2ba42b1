"""Model (functional), Sequential and load_model. Every method runs in C++: these classes
turn Keras's arguments into tandem's and numpy arrays into views the engine reads."""
import os
import signal
import sys
import threading

import operator

import numpy as np

from .. import _tandem, distribute
from . import callbacks as callbacks_module
from . import losses, metrics as metrics_module, optimizers
from ._names import not_implemented
from .layers.base import InputLayer, KerasTensor, Layer, Input

_LEGACY_H5_SUFFIXES = (".h5", ".hdf5")


def check_tandem_path(path, owner):
    """The suffix picks the format in C++: .keras and .weights.h5 are Keras 3's, Keras 2's
    .h5 is read by load_model and load_weights, anything else is tandem's own. tandem does not
    write Keras 2's .h5: its format under that name would make a file Keras cannot read."""
    lower = str(path).lower()
    if (lower.endswith(_LEGACY_H5_SUFFIXES) and not lower.endswith(".weights.h5")
            and owner not in ("load_model", "load_weights")):
        raise not_implemented(f"{owner}({path!r}): Keras 2's .h5 format (read by load_model "
                              "and load_weights only)",
                              "use Keras 3's .keras (or .weights.h5), or tandem's .tandem")


def _as_array(x, what):
    """A C-contiguous float32 or uint8 array (viewed by C++ without a copy); other numeric
    dtypes are converted to float32, as Keras converts them."""
    if isinstance(x, (list, tuple)) and len(x) == 1 and not np.isscalar(x[0]):
        x = x[0]
    if isinstance(x, (list, tuple, dict)) and x and not np.isscalar(
            next(iter(x.values())) if isinstance(x, dict) else x[0]):
        raise not_implemented(f"{what}: several input or output arrays",
                              "tandem models have one input and one output")
    a = np.asarray(x)
    if a.dtype == np.float32 or a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return np.ascontiguousarray(a).view(np.uint8)
    if a.dtype.kind in "fiu":
        return np.ascontiguousarray(a, dtype=np.float32)
    raise ValueError(f"{what}: expected a numeric array, got dtype {a.dtype}")


def _differs(value, default):
    if default is None:
        return value is not None
    return not (value is default or (np.isscalar(value) and value == default))


def _verbose(verbose):
    """Keras's "auto" is 1; ranks other than 0 of an MPI job print nothing."""
    if _tandem.mpi.rank() != 0:
        return 0
    return 1 if verbose == "auto" else int(verbose)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError):
            pass


def _rank0():
    return _tandem.mpi.rank() == 0


def _catches_interrupt():
    """Ctrl-C stops a fit at a batch boundary when it runs on the main thread and the program
    left Python's default SIGINT handler (a handler of its own, or SIG_IGN, stays in charge)."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)


def _integer(value, what, bits=64):
    """An int (numpy integers too) that fits the C++ field; its meaning (e.g. > 0) is
    checked in C++, whose ConfigError says what is wrong."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r}") from None
    if not -(2**(bits - 1)) <= n < 2**(bits - 1):
        raise ValueError(f"{what} must be below 2^{bits - 1}, got {n}")
    return n


class Model:
    """A functional model: ``Model(inputs=Input(...), outputs=...)``.

    fit takes the tandem options ``devices`` (CPU devices: groups of cores), ``strategy``
    ("mirrored" or "host"), ``deterministic`` (bitwise-identical results for any device
    count), ``seed``, ``threads_per_device``, ``checkpoint_dir`` / ``checkpoint_every`` /
    ``resume`` and ``trace_path``; the defaults for the first three come from
    ``multi_gpu_model`` or the ``tandem.distribute`` strategy whose scope built the model.
    evaluate and predict run on one device (all of this process's cores)."""

    def __init__(self, inputs=None, outputs=None, name=None, **kwargs):
        inputs = kwargs.pop("input", inputs)  # Keras 1
        outputs = kwargs.pop("output", outputs)
        kwargs.pop("trainable", None)
        if kwargs:
            raise TypeError(f"Model: unrecognized keyword arguments {sorted(kwargs)}")
        if inputs is None or outputs is None:
            raise not_implemented("subclassed keras.Model (a Python call())",
                                  "tandem runs graphs of its layers: build the model with "
                                  "Model(inputs, outputs) or Sequential")
        inputs, outputs = _single(inputs, "inputs"), _single(outputs, "outputs")
        self._init(_tandem.Model(inputs._node, outputs._node, name or "model"))

    def _init(self, cpp):
        self._cpp_model = cpp
        self._strategy = distribute.get_strategy()
        self._parallel = None  # (devices, strategy) set by multi_gpu_model
        self.optimizer = None
        self.history = None

    # -- the C++ model; Sequential builds it on first use --
    @property
    def _cpp(self):
        return self._cpp_model

    @property
    def name(self):
        return self._cpp.name

    @property
    def stop_training(self):
        return self._cpp.stop_training

    @stop_training.setter
    def stop_training(self, value):
        self._cpp.stop_training = bool(value)

    @property
    def input_shape(self):
        return (None, *self._cpp.input_shape)

    @property
    def output_shape(self):
        return (None, *self._cpp.output_shape)

    def count_params(self):
        return self._cpp.count_params()

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile="auto", auto_scale_loss=True, **kwargs):
        if loss is None:
            raise ValueError("compile: give loss= (e.g. 'categorical_crossentropy')")
        for arg, value, default in (("loss_weights", loss_weights, None),
                                    ("weighted_metrics", weighted_metrics, None),
                                    ("steps_per_execution", steps_per_execution, 1)):
            if _differs(value, default):
                raise not_implemented(f"compile({arg}={value!r})")
        kwargs.pop("sample_weight_mode", None)
        if kwargs:
            raise TypeError(f"compile: unrecognized keyword arguments {sorted(kwargs)}")
        if isinstance(loss, (list, tuple, dict)):
            raise not_implemented("compile with several losses")
        opt = optimizers.get(optimizer)
        metric_names = [metrics_module.get(m) for m in (metrics or [])]
        self._cpp.compile(opt._to_cpp(), losses.get(loss), metric_names)
        opt._model = self._cpp
        self.optimizer = opt
        self.loss = loss

    def _devices(self, devices, strategy, deterministic):
        source = self._strategy
        n, kind, det = 1, "mirrored", False
        if source is not None:
            n, kind, det = source.devices, source.kind, source.deterministic
        if self._parallel is not None:
            n, kind = self._parallel
        if devices is not None:
            n = distribute._device_count(devices)
        if strategy is not None:
            kind = strategy
        if deterministic is not None:
            det = bool(deterministic)
        return n, kind, det

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, *, devices=None, strategy=None,
            deterministic=None, seed=None, threads_per_device=None, checkpoint_dir=None,
            checkpoint_every=None, checkpoint_unit="epoch", keep_checkpoints=3, resume=False,
            resume_overrides=(), overwrite_checkpoints=False, trace_path=None,
            grad_compression=None, **kwargs):
        if "nb_epoch" in kwargs:  # Keras 1
            epochs = kwargs.pop("nb_epoch")
        if kwargs:
            raise TypeError(f"fit: unrecognized keyword arguments {sorted(kwargs)}")
        for arg, value, default in (("class_weight", class_weight, None),
                                    ("sample_weight", sample_weight, None),
                                    ("steps_per_epoch", steps_per_epoch, None),
                                    ("validation_steps", validation_steps, None),
                                    ("validation_batch_size", validation_batch_size, None),
                                    ("validation_freq", validation_freq, 1)):
            if _differs(value, default):
                raise not_implemented(f"fit({arg}=...)")
        if x is None or y is None:
            raise not_implemented("fit without arrays x and y (datasets, generators)")
        x = _as_array(x, "fit: x")
        y = _as_array(y, "fit: y")
        self._build_for(x)
        o = _tandem.FitOptions()
        o.batch_size = 32 if batch_size is None else _integer(batch_size, "fit: batch_size")
        o.epochs = _integer(epochs, "fit: epochs", bits=32)
        o.verbose = _verbose(verbose)
        o.shuffle = bool(shuffle)
        o.validation_split = float(validation_split)
        o.initial_epoch = _integer(initial_epoch, "fit: initial_epoch", bits=32)
        o.devices, o.strategy, o.deterministic = self._devices(devices, strategy, deterministic)
        if seed is not None:
            o.seed = int(seed)
        if threads_per_device is not None:
            o.threads_per_device = int(threads_per_device)
        if checkpoint_dir is not None:
            o.checkpoint_dir = os.fspath(checkpoint_dir)
            o.checkpoint_every = 1 if checkpoint_every is None else int(checkpoint_every)
            o.checkpoint_unit = checkpoint_unit
            o.keep_checkpoints = int(keep_checkpoints)
        o.resume = bool(resume)
        o.resume_overrides = list(resume_overrides)
        o.overwrite_checkpoints = bool(overwrite_checkpoints)
        if trace_path is not None:
            o.trace_path = os.fspath(trace_path)
        if grad_compression is not None:
            o.grad_compression = grad_compression
        if validation_data is not None:
            if len(validation_data) == 3 and validation_data[2] is not None:
                raise not_implemented("fit(validation_data=(x, y, sample_weight))")
            o.set_validation_data(_as_array(validation_data[0], "validation_data: x"),
                                  _as_array(validation_data[1], "validation_data: y"))

        # Keras fills and returns a History the caller passed among the callbacks.
        history = next((cb for cb in callbacks or []
                        if isinstance(cb, callbacks_module.History)), None)
        history = history or callbacks_module.History()
        steps = -(-int(len(x) * (1 - o.validation_split)) // max(o.batch_size, 1))
        params = {"verbose": o.verbose, "epochs": o.epochs, "steps": steps}
        cpp_callbacks = []
        for cb in callbacks or []:
            if cb is history:
                continue
            if not isinstance(cb, callbacks_module.Callback):
                raise TypeError(f"fit: callbacks must be keras.callbacks.Callback objects, got "
                                f"{cb!r}")
            cb.set_model(self)
            cb.set_params(params)
            cpp_callbacks.append(cb._tandem_callback())
        o.callbacks = cpp_callbacks
        _flush()
        result = self._cpp.fit(x, y, o, _catches_interrupt())
        history.set_model(self)
        history.set_params(params)
        history.epoch = list(result.epoch)
        history.history = {k: list(v) for k, v in result.history.items()}
        self.history = history
        return history

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        if kwargs:
            raise TypeError(f"evaluate: unrecognized keyword arguments {sorted(kwargs)}")
        if sample_weight is not None or steps is not None:
            raise not_implemented("evaluate(sample_weight=/steps=)")
        x, y = _as_array(x, "evaluate: x"), _as_array(y, "evaluate: y")
        self._build_for(x)
        _flush()
        logs = self._cpp.evaluate(
            x, y, 32 if batch_size is None else _integer(batch_size, "evaluate: batch_size"),
            _verbose(verbose))
        ordered = {"loss": logs["loss"], **{k: v for k, v in logs.items() if k != "loss"}}
        if return_dict:
            return ordered
        values = list(ordered.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        if steps is not None:
            raise not_implemented("predict(steps=...)")
        x = _as_array(x, "predict: x")
        self._build_for(x)
        _flush()
        return self._cpp.predict(
            x, 32 if batch_size is None else _integer(batch_size, "predict: batch_size"),
            _verbose(verbose))

    def predict_on_batch(self, x):
        x = _as_array(x, "predict_on_batch: x")
        self._build_for(x)
        return self._cpp.predict(x, max(len(x), 1), 0)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        if sample_weight is not None or class_weight is not None:
            raise not_implemented("train_on_batch(sample_weight=/class_weight=)")
        x, y = _as_array(x, "train_on_batch: x"), _as_array(y, "train_on_batch: y")
        self._build_for(x)
        logs = self._cpp.train_on_batch(x, y)
        ordered = {"loss": logs["loss"], **{k: v for k, v in logs.items() if k != "loss"}}
        if return_dict:
            return ordered
        values = list(ordered.values())
        return values[0] if len(values) == 1 else values

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        return self.evaluate(x, y, batch_size=max(len(x), 1), verbose=0,
                             sample_weight=sample_weight, return_dict=return_dict)

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Keras's table of layers, output shapes and parameter counts (rank 0 only)."""
        if not _rank0():
            return
        text = self._cpp.summary_string().rstrip("\n")
        if print_fn is None:
            print(text)
        else:
            print_fn(text)

    def get_weights(self):
        return self._cpp.get_weights()

    def set_weights(self, weights):
        self._cpp.set_weights([np.ascontiguousarray(w, dtype=np.float32) for w in weights])

    def save(self, filepath, overwrite=True, **kwargs):
        """The whole model (architecture, weights, optimizer and its state), written
        atomically: Keras 3's format for a .keras path, tandem's otherwise."""
        path = os.fspath(filepath)
        check_tandem_path(path, "save")
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"save: {path} exists and overwrite=False")
        self._cpp.save(path)

    def save_weights(self, filepath, overwrite=True):
        path = os.fspath(filepath)
        check_tandem_path(path, "save_weights")
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"save_weights: {path} exists and overwrite=False")
        self._cpp.save_weights(path)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        if skip_mismatch:
            raise not_implemented("load_weights(skip_mismatch=True)")
        path = os.fspath(filepath)
        check_tandem_path(path, "load_weights")
        self._cpp.load_weights(path)

    def run_times(self):
        """Seconds of the last fit / evaluate / predict, steps and per-phase seconds."""
        return self._cpp.run_times()

    def _build_for(self, x):
        pass

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


class Sequential(Model):
    """Layers in order. The input shape comes from a first ``Input(shape)`` /
    ``InputLayer``, a first layer's ``input_shape=``, or (as in Keras 3) the first data the
    model sees."""

    def __init__(self, layers=None, name=None, **kwargs):
        kwargs.pop("trainable", None)
        if kwargs:
            raise TypeError(f"Sequential: unrecognized keyword arguments {sorted(kwargs)}")
        self._seq_name = name or "sequential"
        self._input = None
        self._layers = []
        self._compile_args = None
        self._init(None)
        for layer in layers or []:
            self.add(layer)

    @property
    def _cpp(self):
        if self._cpp_model is None and self._input is not None:
            self._build()
        if self._cpp_model is None:
            raise ValueError(f"Sequential model {self._seq_name!r} has not been built: start it "
                             "with keras.Input(shape=...) or give the first layer input_shape=, "
                             "or call fit/predict on data first")
        return self._cpp_model

    @property
    def name(self):
        return self._seq_name if self._cpp_model is None else self._cpp_model.name

    def add(self, layer):
        if self._cpp_model is not None:
            raise not_implemented("Sequential.add after the model was built")
        if isinstance(layer, InputLayer):
            layer = layer.tensor
        if isinstance(layer, KerasTensor):
            if self._input is not None or self._layers:
                raise ValueError("Sequential: an Input may only come first")
            self._input = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: expected a tandem.keras layer, got {layer!r}")
        if not self._layers and self._input is None and layer._input_shape is not None:
            self._input = Input(shape=layer._input_shape)
        self._layers.append(layer)

    def pop(self):
        if self._cpp_model is not None:
            raise not_implemented("Sequential.pop after the model was built")
        return self._layers.pop()

    def _build(self, sample_shape=None):
        if self._cpp_model is not None:
            return
        if self._input is None:
            self._input = Input(shape=tuple(sample_shape))
        cpp = _tandem.Sequential(self._seq_name)
        cpp.add(self._input._node)
        for layer in self._layers:
            cpp.add(layer.cpp)
        self._cpp_model = cpp
        if self._compile_args is not None:
            args, kwargs = self._compile_args
            self._compile_args = None
            Model.compile(self, *args, **kwargs)

    def _build_for(self, x):
        self._build(x.shape[1:])

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, **kwargs):
        if self._cpp_model is None and self._input is None:
            # The C++ model is built from the first data; everything else is checked now.
            if loss is None:
                raise ValueError("compile: give loss= (e.g. 'categorical_crossentropy')")
            self.optimizer = optimizers.get(optimizer)
            losses.get(loss)
            for m in metrics or []:
                metrics_module.get(m)
            self.loss = loss
            self._compile_args = ((self.optimizer, loss, metrics), kwargs)
            return
        Model.compile(self, optimizer, loss, metrics, **kwargs)


class _Loaded(Model):
    def __init__(self, cpp):
        self._init(cpp)
        self.optimizer = optimizers._from_cpp(cpp)
        if self.optimizer is not None:
            self.loss = cpp.loss


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model saved by ``model.save``, tandem's or Keras 3's (.keras, as Keras writes it),
    or Keras 2's whole-model .h5: architecture, weights, and with ``compile=True`` the
    optimizer, its state, the loss and metrics. ``compile=False`` reads none of those (a
    model compiled in Keras with a loss tandem lacks loads); compile it before fit."""
    path = os.fspath(filepath)
    check_tandem_path(path, "load_model")
    if custom_objects:
        raise not_implemented("load_model(custom_objects=...)")
    return _Loaded(_tandem.Model.load(path, bool(compile)))


def _single(tensors, what):
    if isinstance(tensors, (list, tuple)):
        if len(tensors) != 1:
            raise not_implemented(f"Model with {len(tensors)} {what}",
                                  f"tandem models have one input and one output")
        tensors = tensors[0]
    if not isinstance(tensors, KerasTensor):
        raise TypeError(f"Model: {what} must be symbolic tensors from Input() and layers, got "
                        f"{tensors!r}")
    return tensors
