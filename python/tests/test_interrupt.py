"""Ctrl-C during fit stops at a batch boundary, leaves the model usable, raises
KeyboardInterrupt, and restores Python's own handler."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import small_model


def test_keyboard_interrupt_stops_fit(data):
    x, y = data
    x, y = np.tile(x, (20, 1)), np.tile(y, (20, 1))
    model = small_model()
    before = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=32, epochs=1000, verbose=0)
    elapsed = time.monotonic() - start
    timer.join()
    assert elapsed < 30  # 1000 epochs would take far longer: it stopped early
    assert signal.getsignal(signal.SIGINT) is before
    assert np.isfinite(model.predict(x[:10], verbose=0)).all()
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert history.epoch == [0]
