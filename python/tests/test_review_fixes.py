"""Behaviour fixed after review: each test failed before its fix."""
import os
import signal
import threading

import numpy as np
import pytest

import tandem
import tandem.keras as keras
from tandem import _tandem
from conftest import small_model


def _long_data(data, times=20):
    x, y = data
    return np.tile(x, (times, 1)), np.tile(y, (times, 1))


def test_sigint_ignored_by_the_program_stays_ignored(data):
    x, y = _long_data(data)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        model = small_model()
        timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        history = model.fit(x, y, batch_size=64, epochs=6, verbose=0)
        timer.join()
        assert history.epoch == list(range(6))  # not stopped, no KeyboardInterrupt
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_programs_own_sigint_handler_is_called(data):
    x, y = _long_data(data)
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        small_model().fit(x, y, batch_size=64, epochs=6, verbose=0)
        timer.join()
        assert seen == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_compile_inside_fit_is_an_error_not_a_crash(data):
    x, y = data

    class Recompile(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.compile(optimizer="adam", loss="categorical_crossentropy")

    with pytest.raises(tandem.ConfigError, match="fit is running"):
        small_model().fit(x, y, epochs=2, verbose=0, callbacks=[Recompile()])


def test_batch_larger_than_data(data):
    x, y = data
    model = small_model()
    history = model.fit(x[:4], y[:4], batch_size=2**62, verbose=0)
    assert len(history.history["loss"]) == 1 and model.run_times()["train_steps"] == 1


def test_users_history_is_filled_and_returned(data):
    x, y = data
    mine = keras.callbacks.History()
    returned = small_model().fit(x, y, epochs=2, verbose=0, callbacks=[mine])
    assert returned is mine and len(mine.history["loss"]) == 2


def test_metric_spelling_names_the_logs(data):
    x, y = data
    model = small_model()
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["acc"])
    history = model.fit(x, y, epochs=1, validation_split=0.2, verbose=0)
    assert set(history.history) == {"loss", "acc", "val_loss", "val_acc"}
    assert model.evaluate(x, y, verbose=0, return_dict=True).keys() == {"loss", "acc"}
    model.compile(optimizer="sgd", loss="categorical_crossentropy",
                  metrics=[keras.metrics.CategoricalAccuracy()])
    assert "categorical_accuracy" in model.fit(x, y, epochs=1, verbose=0).history


def test_deferred_sequential_compile_is_checked_at_once(data):
    x, y = data
    model = keras.Sequential([keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.2), loss="categorical_crossentropy")
    assert model.optimizer.learning_rate == pytest.approx(0.2)
    with pytest.raises(NotImplementedError, match="optimizer 'bogus'"):
        keras.Sequential([keras.layers.Dense(3)]).compile(optimizer="bogus", loss="mse")
    model.fit(x, y, epochs=1, verbose=0)
    assert model.optimizer.learning_rate == pytest.approx(0.2)


def test_numpy_integers_are_integers(data):
    x, y = data
    inputs = keras.Input(shape=(np.int64(20),))
    outputs = keras.layers.Dense(np.int64(y.shape[1]), activation="softmax")(inputs)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    model.fit(x, y, batch_size=np.int32(64), epochs=np.int64(1), verbose=0)
    with pytest.raises(ValueError, match="epochs"):
        model.fit(x, y, epochs=2**40, verbose=0)


def test_model_checkpoint_fields_other_than_epoch_are_refused():
    with pytest.raises(NotImplementedError, match="val_loss"):
        keras.callbacks.ModelCheckpoint("ck-{epoch:02d}-{val_loss:.2f}.tandem")
    keras.callbacks.ModelCheckpoint("ck-{epoch:02d}.tandem")


def test_to_categorical_shapes_like_keras():
    assert keras.utils.to_categorical(np.array([[0, 1], [2, 1]])).shape == (2, 2, 3)
    assert keras.utils.to_categorical(np.array([[1], [0]])).shape == (2, 2)
    assert keras.utils.to_categorical(np.array(2), 4).shape == (4,)
    assert keras.utils.to_categorical(np.array([True, False])).shape == (2, 2)
    with pytest.raises(ValueError, match="num_classes"):
        keras.utils.to_categorical(np.array([1]), -5)


def test_samples_at_is_bounds_checked():
    s = _tandem.samples(np.zeros((1, 1), np.float32))
    with pytest.raises(IndexError):
        s.at(1 << 40, 0)
