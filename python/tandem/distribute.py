"""Data-parallel training on several devices, TensorFlow-style::

    strategy = tandem.distribute.MirroredStrategy(devices=2)
    with strategy.scope():
        model = keras.Sequential([...])
        model.compile(...)
    model.fit(x, y, batch_size=128)   # on 2 devices

A model remembers the strategy in whose scope it was built; its fit runs on that many
devices (evaluate and predict run on one device, with all of this process's cores). On this machine a device is a group of CPU cores; ``mirrored``
keeps a full replica of the weights per device and reduces gradients in buckets as backward
produces them (tandem's fast path); ``host`` is Keras's multi_gpu_model design (one copy of
the weights, outputs and gradients gathered every step), kept to measure the difference.
"""
import contextlib
import contextvars
import os

_current = contextvars.ContextVar("tandem_strategy", default=None)


def _device_count(devices):
    if devices is None:
        return len(os.sched_getaffinity(0))
    if isinstance(devices, bool):
        raise TypeError(f"devices must be a count or a list of devices, got {devices!r}")
    if isinstance(devices, int):
        if devices < 1:
            raise ValueError(f"devices must be >= 1, got {devices}")
        return devices
    devices = list(devices)
    if not devices:
        raise ValueError("devices must not be an empty list")
    return len(devices)


class Strategy:
    """How a model's replicas are made, fed and kept in sync."""

    _kind = "mirrored"

    def __init__(self, devices=None, *, deterministic=False):
        self._devices = _device_count(devices)
        self.deterministic = bool(deterministic)

    @property
    def num_replicas_in_sync(self):
        return self._devices * _ranks()

    @property
    def devices(self):
        """Local devices of this process."""
        return self._devices

    @property
    def kind(self):
        return self._kind

    @contextlib.contextmanager
    def scope(self):
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def __repr__(self):
        return f"{type(self).__name__}(devices={self._devices})"


class MirroredStrategy(Strategy):
    """A replica of the model on each of ``devices`` devices (an int, or a list whose length
    counts them, like TensorFlow's ``["/gpu:0", "/gpu:1"]``; default: one per core)."""

    _kind = "mirrored"

    def __init__(self, devices=None, cross_device_ops=None, *, deterministic=False):
        if cross_device_ops is not None:
            raise NotImplementedError(
                "MirroredStrategy(cross_device_ops=...): tandem chooses the reduction itself")
        super().__init__(devices, deterministic=deterministic)


class HostStrategy(Strategy):
    """Keras's multi_gpu_model design: one copy of the weights on the host, each device runs
    its slice of the batch, outputs and gradients come back to the host every step."""

    _kind = "host"


def get_strategy():
    """The strategy whose scope is open, or None."""
    return _current.get()


def _ranks():
    from . import _tandem
    return _tandem.mpi.size()
