"""Keras's BatchNormalization on tandem's C++ layer (the channels, last axis)."""
from ... import _tandem
from .. import initializers
from .._names import not_implemented, reject_given
from .base import Layer


class BatchNormalization(Layer):
    """Normalizes the last axis: with the batch's statistics in fit (updating moving_mean and
    moving_variance by ``momentum``), with the moving statistics in evaluate and predict. On
    several devices each normalizes with its own batch (as MirroredStrategy does), or, with
    ``synchronized=True``, all with the statistics of the whole global batch."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        reject_given("BatchNormalization", beta_regularizer=beta_regularizer,
                     gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
                     gamma_constraint=gamma_constraint)
        if axis not in (-1, [-1], (-1,)):
            raise not_implemented(f"BatchNormalization(axis={axis!r})",
                                  "tandem normalizes the last axis (channels last)")
        if not 0 <= momentum < 1:
            raise ValueError(f"BatchNormalization: momentum must be in [0, 1), got {momentum}")
        if not 0 < epsilon < 1:
            raise ValueError(f"BatchNormalization: epsilon must be in (0, 1), got {epsilon}")
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.synchronized = bool(synchronized)
        self._initializers = [initializers.get(i) for i in (
            beta_initializer, gamma_initializer, moving_mean_initializer,
            moving_variance_initializer)]

    def _build_cpp(self):
        return _tandem.BatchNormalization(self.momentum, self.epsilon, self.center, self.scale,
                                          self.synchronized, *self._initializers, self.name or "")
