"""Resolving Keras's many spellings (strings, functions, classes, instances) to the names
tandem's C++ side takes."""
import operator


def not_implemented(what, hint=""):
    message = f"{what}: tandem does not implement this yet"
    return NotImplementedError(message + (f"; {hint}" if hint else ""))


def check_unsupported(owner, given, defaults):
    """Raises NotImplementedError for the first argument in `given` that differs from its
    default in `defaults` (what tandem cannot honour), naming owner and argument."""
    for key, value in given.items():
        default = defaults[key]
        if value is not default and value != default:
            raise not_implemented(f"{owner}({key}={value!r})")


def reject_given(owner, **arguments):
    """NotImplementedError for the first argument given (not None), naming owner and it:
    regularizers, constraints and the like, which tandem does not apply."""
    for key, value in arguments.items():
        if value is not None:
            raise not_implemented(f"{owner}({key}=...)")


def positive_int(value, owner, arg):
    """An integer > 0 (numpy integers too), else TypeError / ValueError naming owner.arg."""
    if isinstance(value, bool):
        raise TypeError(f"{owner}: {arg} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{owner}: {arg} must be an integer, got {value!r}") from None
    if value <= 0:
        raise ValueError(f"{owner}: {arg} must be a positive integer, got {value}")
    return value


def reject_unknown(owner, kwargs):
    if kwargs:
        raise TypeError(f"{owner}: unrecognized keyword arguments {sorted(kwargs)}")


def snake_case(name):
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def name_of(obj, kind):
    """A name for a string, a function or an object standing for one (activations, losses,
    metrics, initializers)."""
    if isinstance(obj, str):
        return obj
    name = getattr(obj, "_tandem_name", None) or getattr(obj, "__name__", None)
    if name is None:
        raise TypeError(f"{kind}: expected a name or a Keras {kind} object, got {obj!r}")
    return name


def symbolic_function(name, module, hint):
    """A function that stands for a name (keras.activations.relu, keras.losses.mse): passed
    as an argument it names what the C++ side runs; called on arrays it says why it can't."""
    def fn(*args, **kwargs):
        raise not_implemented(f"keras.{module}.{name}(...)", hint)
    fn.__name__ = name
    fn._tandem_name = name
    return fn
