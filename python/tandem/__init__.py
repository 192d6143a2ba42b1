"""tandem: Keras-shaped training in C++ whose data-parallel runs are really faster than one
device. Keras programs use it through ``import tandem.keras as keras``.

A program started by ``mpirun -np N python prog.py`` initialises MPI on import and trains
across the N ranks (each rank with ``devices`` local devices); only rank 0 prints.
"""
import atexit as _atexit

from . import _tandem
from ._tandem import (  # noqa: F401  (the exception types, for ``except tandem.FormatError``)
    BackendError,
    CommError,
    ConfigError,
    Error,
    FileNotFoundError,
    FormatError,
    IoError,
    NumericError,
    ShapeError,
)

__version__ = "0.1.0"

if _tandem.mpi.available() and _tandem.mpi.launched():
    _tandem.mpi.init()
    _atexit.register(_tandem.mpi.finalize)
elif _tandem.mpi.launched():
    _tandem.mpi.init()  # without MPI in this build: a ConfigError unless it is one rank alone

from . import distribute  # noqa: E402,F401


def set_random_seed(seed):
    """Seeds weight initialisation, shuffling and dropout for everything that follows."""
    _tandem.set_random_seed(int(seed))


def set_num_threads(threads):
    """Threads one device uses (0: every core this process may run on)."""
    _tandem.set_num_threads(int(threads))


def set_flush_denormals(flush):
    """Flush denormal floats (below 2**-126) to zero while tandem computes (the default, as
    TensorFlow does: optimizer state decaying through that range slowed a small model's
    step up to 2.7x on a Xeon), or keep them with ``False``. The calling thread is back in
    its own mode when fit, evaluate, predict or train_on_batch returns, and Python callbacks
    run in it."""
    _tandem.set_flush_denormals(bool(flush))


def flush_denormals():
    """Whether tandem flushes denormal floats to zero (``set_flush_denormals``)."""
    return _tandem.flush_denormals()


def rank():
    """This process's MPI rank (0 without MPI)."""
    return _tandem.mpi.rank()


def num_ranks():
    """Processes in the MPI job (1 without MPI)."""
    return _tandem.mpi.size()


def set_comm_timeout(seconds):
    """How long a collective waits for the other ranks before raising tandem.CommError (a
    rank died or hangs; default 60 s)."""
    _tandem.mpi.set_timeout(float(seconds))
