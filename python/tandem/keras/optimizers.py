"""SGD, RMSprop and Adam with Keras 3's arguments and defaults, Keras 2's ``lr`` alias, and
Keras's exact update rules (run in C++). Arguments tandem cannot honour (clipping, weight
decay, EMA, ...) raise NotImplementedError naming them.

After ``model.compile(optimizer=opt)``, ``opt.learning_rate`` reads and sets the rate the
model trains with (what LearningRateScheduler changes)."""
from .. import _tandem
from ._names import not_implemented, reject_unknown

_COMMON = {"weight_decay": None, "clipnorm": None, "clipvalue": None, "global_clipnorm": None,
           "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
           "loss_scale_factor": None, "gradient_accumulation_steps": None, "decay": 0.0,
           "name": None, "jit_compile": None}


class Optimizer:
    _tandem_name = None

    def __init__(self, learning_rate, kwargs):
        owner = type(self).__name__
        if "lr" in kwargs:  # Keras 2
            learning_rate = kwargs.pop("lr")
        for key in list(kwargs):
            if key in _COMMON:
                value = kwargs.pop(key)
                if key == "name":
                    continue
                if value is not _COMMON[key] and value != _COMMON[key]:
                    raise not_implemented(f"{owner}({key}={value!r})")
        reject_unknown(owner, kwargs)
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise not_implemented(f"{owner}(learning_rate={learning_rate!r})",
                                  "a learning-rate schedule object; use a float and a "
                                  "LearningRateScheduler callback")
        if learning_rate <= 0:
            raise ValueError(f"{owner}: learning_rate must be > 0, got {learning_rate}")
        self._learning_rate = float(learning_rate)
        self._model = None  # the C++ model once compiled

    @property
    def learning_rate(self):
        return self._model.learning_rate if self._model is not None else self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if self._model is not None:
            self._model.learning_rate = float(value)
        self._learning_rate = float(value)

    lr = learning_rate  # Keras 2

    def _to_cpp(self):
        o = _tandem.Optimizer()
        o.name = self._tandem_name
        o.learning_rate = self._learning_rate
        for field in ("momentum", "nesterov", "rho", "beta_1", "beta_2", "epsilon"):
            if hasattr(self, field):
                setattr(o, field, getattr(self, field))
        return o

    def get_config(self):
        config = {"name": self._tandem_name, "learning_rate": self.learning_rate}
        for field in ("momentum", "nesterov", "rho", "beta_1", "beta_2", "epsilon"):
            if hasattr(self, field):
                config[field] = getattr(self, field)
        return config

    def __repr__(self):
        return f"{type(self).__name__}({self.get_config()})"


class SGD(Optimizer):
    _tandem_name = "sgd"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **kwargs):
        super().__init__(learning_rate, kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)


class RMSprop(Optimizer):
    _tandem_name = "rmsprop"

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 **kwargs):
        super().__init__(learning_rate, kwargs)
        if momentum:
            raise not_implemented(f"RMSprop(momentum={momentum!r})")
        if centered:
            raise not_implemented("RMSprop(centered=True)")
        self.rho = float(rho)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)  # Keras 2: None = 1e-7


class Adam(Optimizer):
    _tandem_name = "adam"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        super().__init__(learning_rate, kwargs)
        if amsgrad:
            raise not_implemented("Adam(amsgrad=True)")
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)


def _unsupported(name):
    def __init__(self, *args, **kwargs):
        raise not_implemented(f"optimizer {name}", "tandem has SGD, RMSprop and Adam")
    return type(name, (), {"__init__": __init__})


Adagrad = _unsupported("Adagrad")
Adadelta = _unsupported("Adadelta")
Adamax = _unsupported("Adamax")
AdamW = _unsupported("AdamW")
Nadam = _unsupported("Nadam")
Ftrl = _unsupported("Ftrl")
Lion = _unsupported("Lion")

_BY_NAME = {"sgd": SGD, "rmsprop": RMSprop, "adam": Adam}


def _from_cpp(cpp_model):
    """The optimizer a loaded model was compiled with, as its class here, bound to the model
    (its learning_rate is the one the model trains with); None when it is not compiled."""
    o = cpp_model.optimizer
    if o is None:
        return None
    if o.name == "sgd":
        opt = SGD(o.learning_rate, momentum=o.momentum, nesterov=o.nesterov)
    elif o.name == "rmsprop":
        opt = RMSprop(o.learning_rate, rho=o.rho, epsilon=o.epsilon)
    else:
        opt = Adam(o.learning_rate, beta_1=o.beta_1, beta_2=o.beta_2, epsilon=o.epsilon)
    opt._learning_rate = cpp_model.learning_rate  # as trained (compile(model.optimizer) keeps it)
    opt._model = cpp_model
    return opt


def get(identifier):
    """An Optimizer for a name ("rmsprop") or an Optimizer instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise not_implemented(f"optimizer {identifier!r}", "tandem has sgd, rmsprop, adam")
        return cls()
    raise TypeError(f"optimizer must be a name or a tandem.keras.optimizers object, got "
                    f"{identifier!r}")
