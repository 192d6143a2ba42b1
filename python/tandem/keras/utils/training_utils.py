"""Keras 2's keras.utils.training_utils.multi_gpu_model, on tandem's devices."""
from .. import models
from ... import distribute


class _ParallelModel(models.Model):
    """The template's layers and weights (one C++ model shared with the template), trained
    and run on several devices."""

    def __init__(self, template, devices, strategy):
        self._init(template._cpp)
        self._template = template
        self._parallel = (devices, strategy)
        self._strategy = template._strategy

    @property
    def optimizer(self):
        return self._template.optimizer

    @optimizer.setter
    def optimizer(self, value):
        if hasattr(self, "_template"):
            self._template.optimizer = value


def multi_gpu_model(model, gpus=None, cpu_merge=True, cpu_relocation=False, strategy="mirrored"):
    """A model that shares ``model``'s weights and whose fit runs on ``gpus`` devices
    (evaluate and predict run on one device, with all of this process's cores) (a count, or a list whose length counts them; on this machine a device
    is a group of CPU cores).

    Keras 2's multi_gpu_model kept one copy of the weights on the host, copied them to every
    device each step and brought outputs and gradients back to be summed there: with many
    parameters and little compute per step (an MLP) that traffic made 4 GPUs slower than 1.
    ``strategy="host"`` reproduces that design, so the difference can be measured. The
    default, ``"mirrored"``, keeps a full replica on every device and reduces gradients in
    buckets while backward still runs (as PyTorch DDP and tf.distribute do), which is what
    makes N devices faster than one.

    As in Keras, the returned model and the template share weights; in tandem they also
    share the compiled optimizer and its state (they are one model)."""
    if isinstance(gpus, (list, tuple)):
        n = len(gpus)
    else:
        n = distribute._device_count(gpus)
    if n <= 1:
        raise ValueError(f"For multi-gpu usage to be effective, call `multi_gpu_model` with "
                         f"`gpus >= 2`. Received: `gpus={gpus}`")
    if strategy not in ("mirrored", "host"):
        raise ValueError(f"multi_gpu_model: strategy must be 'mirrored' or 'host', got "
                         f"{strategy!r}")
    if not isinstance(model, models.Model):
        raise TypeError(f"multi_gpu_model: expected a tandem.keras model, got {model!r}")
    return _ParallelModel(model, n, strategy)
