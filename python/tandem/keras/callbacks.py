"""Callbacks: subclass ``Callback`` in Python (its overridden methods are called from the C++
training loop, with ``logs``, ``self.model`` and ``self.model.stop_training``), or use
Keras's built-in ones, which run in C++. A Python callback's exception stops the fit and
reaches the caller unchanged."""
import string

from .. import _tandem
from . import _names
from ._names import not_implemented


# The C++ hooks and the Python methods that reach each (Keras 2's batch names are aliases).
_HOOKS = ((_tandem.HOOK_TRAIN_BEGIN, ("on_train_begin",)),
          (_tandem.HOOK_TRAIN_END, ("on_train_end",)),
          (_tandem.HOOK_EPOCH_BEGIN, ("on_epoch_begin",)),
          (_tandem.HOOK_EPOCH_END, ("on_epoch_end",)),
          (_tandem.HOOK_BATCH_BEGIN, ("on_batch_begin", "on_train_batch_begin")),
          (_tandem.HOOK_BATCH_END, ("on_batch_end", "on_train_batch_end")))


def _hooks(defines):
    """The C++ hook mask of the methods for which defines(name) holds."""
    mask = 0
    for flag, names in _HOOKS:
        if any(defines(n) for n in names):
            mask |= flag
    return mask


class Callback:
    """Keras's Callback. Override any of the hooks; fit calls only those overridden (a hook
    left alone costs nothing per batch)."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_batch_begin(self, batch, logs=None):
        pass

    def on_batch_end(self, batch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    # Keras calls these around evaluate and predict; tandem's evaluate and predict run
    # whole in C++, so they are never called.
    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    def _tandem_hooks(self):
        """Which C++ hooks must call into Python: those this object's class overrides."""
        return _hooks(lambda name: getattr(type(self), name) is not getattr(Callback, name))

    def _tandem_callback(self):
        return _tandem.PythonCallback(self, self._tandem_hooks())


class _Builtin(Callback):
    """A callback that runs in C++."""

    _cpp = None

    def _tandem_callback(self):
        # A user's subclass of a built-in: its hooks would never be called from C++.
        for cls in type(self).__mro__:
            if cls.__module__ == __name__:
                break
            if any(n.startswith("on_") for n in vars(cls)):
                raise not_implemented(f"overriding hooks of the built-in {cls.__mro__[1].__name__}",
                                      "subclass keras.callbacks.Callback instead")
        return self._cpp


class EarlyStopping(_Builtin):
    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        if start_from_epoch:
            raise not_implemented(f"EarlyStopping(start_from_epoch={start_from_epoch})")
        self.monitor = monitor
        self.patience = patience
        self._cpp = _tandem.EarlyStopping(monitor, float(min_delta), int(patience), mode,
                                          baseline, bool(restore_best_weights))


class ModelCheckpoint(_Builtin):
    """Saves the model (tandem's format) after every epoch, or when ``monitor`` improves.
    ``{epoch}`` / ``{epoch:02d}`` in the path become the 1-based epoch."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        from .models import check_tandem_path  # noqa: the models module imports this one
        check_tandem_path(str(filepath), "ModelCheckpoint")
        if save_freq != "epoch":
            raise not_implemented(f"ModelCheckpoint(save_freq={save_freq!r})",
                                  "fit(checkpoint_dir=, checkpoint_every=) checkpoints by step")
        if initial_value_threshold is not None:
            raise not_implemented("ModelCheckpoint(initial_value_threshold=...)")
        fields = {f for _, f, _, _ in string.Formatter().parse(str(filepath)) if f is not None}
        if fields - {"epoch"}:
            raise not_implemented(f"ModelCheckpoint({filepath!r}): the fields "
                                  f"{sorted(fields - {'epoch'})} in the path",
                                  "only {epoch} (and {epoch:02d}) is filled in")
        self.filepath = str(filepath)
        self._cpp = _tandem.ModelCheckpoint(self.filepath, monitor, bool(save_best_only),
                                            bool(save_weights_only), mode)


class TerminateOnNaN(_Builtin):
    def __init__(self):
        super().__init__()
        self._cpp = _tandem.TerminateOnNaN()


class CSVLogger(_Builtin):
    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = str(filename)
        self._cpp = _tandem.CSVLogger(self.filename, separator, bool(append))


class LearningRateScheduler(_Builtin):
    """Sets the learning rate at each epoch's start to ``schedule(epoch, lr)`` (or
    ``schedule(epoch)``, as Keras accepts)."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

        def call(epoch, lr):
            try:
                new_lr = schedule(epoch, lr)
            except TypeError:  # Keras's fallback for one-argument schedules
                new_lr = schedule(epoch)
            new_lr = float(new_lr)
            if verbose > 0:
                print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                      f"{new_lr}.")
            return new_lr
        self._cpp = _tandem.LearningRateScheduler(call)


class History(Callback):
    """What fit returns: ``history`` (a dict of per-epoch lists: loss, accuracy, val_...),
    ``epoch`` (0-based epochs run), ``params`` and ``model``."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def _tandem_hooks(self):
        return 0


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_begin(epoch, logs), on_epoch_end(epoch, logs),
    on_train_batch_begin/on_batch_begin(batch, logs), on_train_batch_end/on_batch_end(batch,
    logs), on_train_begin(logs), on_train_end(logs). Only those given are called."""

    _KEYS = ("on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end",
             "on_train_begin", "on_train_end", "on_train_batch_begin", "on_train_batch_end")

    def __init__(self, **kwargs):
        super().__init__()
        _names.reject_unknown("LambdaCallback", {k: v for k, v in kwargs.items()
                                                 if k not in self._KEYS})
        self._given = {k: v for k, v in kwargs.items() if v is not None}
        for key, fn in self._given.items():
            setattr(self, key, fn)

    def _tandem_hooks(self):
        return _hooks(lambda name: name in self._given)


def _unsupported(name, hint=""):
    def __init__(self, *args, **kwargs):
        raise not_implemented(f"callback {name}", hint)
    return type(name, (Callback,), {"__init__": __init__})


ReduceLROnPlateau = _unsupported("ReduceLROnPlateau", "use LearningRateScheduler")
TensorBoard = _unsupported("TensorBoard", "fit(trace_path=...) writes a timeline for Perfetto")
BackupAndRestore = _unsupported("BackupAndRestore",
                                "fit(checkpoint_dir=..., checkpoint_every=1, resume=True)")
RemoteMonitor = _unsupported("RemoteMonitor")
ProgbarLogger = _unsupported("ProgbarLogger", "fit(verbose=1) shows Keras's progress bar")
SwapEMAWeights = _unsupported("SwapEMAWeights")
