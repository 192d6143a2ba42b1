"""Datasets in MNIST's format, read from local files (tandem never downloads)."""
from . import fashion_mnist, mnist  # noqa: F401
