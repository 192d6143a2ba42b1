import errno
import os

from ... import _tandem


def keras_cache_dirs():
    """Where Keras keeps downloaded datasets: $KERAS_HOME/datasets, else ~/.keras/datasets
    (and /tmp/.keras/datasets, Keras's fallback when the home directory is read-only)."""
    dirs = []
    if os.environ.get("KERAS_HOME"):
        dirs.append(os.path.join(os.environ["KERAS_HOME"], "datasets"))
    dirs.append(os.path.join(os.path.expanduser("~"), ".keras", "datasets"))
    dirs.append(os.path.join("/tmp", ".keras", "datasets"))
    return dirs


def not_found(what, looked, hint):
    return _tandem.FileNotFoundError(
        errno.ENOENT, f"{what}: no data found; looked in: " + ", ".join(looked) +
        ". tandem does not download data; " + hint, looked[0] if looked else "")
