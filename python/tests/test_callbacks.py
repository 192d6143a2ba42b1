"""Python callbacks called from the C++ loop: order, logs, self.model, stop_training,
exceptions; built-in callbacks; no Python per batch unless a callback asks for it."""
import numpy as np
import pytest

import tandem.keras as keras
from tandem import _tandem
from conftest import small_model


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin", dict(logs or {})))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_batch_begin(self, batch, logs=None):  # Keras 2's name: reached through the alias
        self.calls.append(("batch_begin", batch))

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(("batch_end", batch, sorted(logs)))

    def on_epoch_end(self, epoch, logs=None):
        assert self.model is not None and self.params["epochs"] == 2
        self.calls.append(("epoch_end", epoch, sorted(logs)))

    def on_train_end(self, logs=None):
        self.calls.append(("train_end",))


def test_order_logs_and_model(data):
    x, y = data
    model = small_model()
    rec = Recorder()
    model.fit(x[:128], y[:128], batch_size=64, epochs=2, validation_split=0.5, verbose=0,
              callbacks=[rec])
    batch = ["accuracy", "loss"]
    epoch = ["accuracy", "loss", "val_accuracy", "val_loss"]
    expected = [("train_begin", {})]
    for e in range(2):
        expected += [("epoch_begin", e), ("batch_begin", 0), ("batch_end", 0, batch),
                     ("epoch_end", e, epoch)]
    expected.append(("train_end",))
    assert rec.calls == expected
    assert rec.model is model


def test_stop_training_from_batch_and_epoch(data):
    x, y = data

    class StopAtBatch(keras.callbacks.Callback):
        batches = 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1
            if batch == 2:
                self.model.stop_training = True

    model = small_model()
    cb = StopAtBatch()
    history = model.fit(x, y, batch_size=32, epochs=5, verbose=0, callbacks=[cb])
    assert cb.batches == 3 and history.epoch == [0]

    class StopAtEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                self.model.stop_training = True

    history = small_model().fit(x, y, epochs=5, verbose=0, callbacks=[StopAtEpoch()])
    assert history.epoch == [0, 1]


def test_exception_reaches_the_caller_and_model_stays_usable(data):
    x, y = data

    class Boom(Exception):
        pass

    class Raiser(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                raise Boom("from a callback")

    model = small_model()
    with pytest.raises(Boom, match="from a callback") as info:
        model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[Raiser()])
    assert "on_train_batch_end" in "".join(str(f.name) for f in info.traceback)
    assert np.isfinite(model.predict(x, verbose=0)).all()
    model.fit(x, y, epochs=1, verbose=0)  # trains again afterwards

    def bad_schedule(epoch, lr):
        raise Boom("from a schedule")

    with pytest.raises(Boom, match="from a schedule"):
        model.fit(x, y, epochs=1, verbose=0,
                  callbacks=[keras.callbacks.LearningRateScheduler(bad_schedule)])


def test_no_python_per_batch_unless_asked(data, monkeypatch):
    x, y = data
    calls = []
    # The base class's batch hooks are not overridden by EpochOnly, so C++ never calls them.
    monkeypatch.setattr(keras.callbacks.Callback, "on_train_batch_end",
                        lambda self, batch, logs=None: calls.append(batch))
    monkeypatch.setattr(keras.callbacks.Callback, "on_train_batch_begin",
                        lambda self, batch, logs=None: calls.append(batch))

    class EpochOnly(keras.callbacks.Callback):
        epochs = 0

        def on_epoch_end(self, epoch, logs=None):
            self.epochs += 1

    cb = EpochOnly()
    assert cb._tandem_hooks() == _tandem.HOOK_EPOCH_END
    small_model().fit(x, y, epochs=2, verbose=0, callbacks=[cb])
    assert cb.epochs == 2 and calls == []


def test_builtin_callbacks(tmp_path, data):
    x, y = data
    model = small_model()
    lrs = []
    history = model.fit(
        x, y, epochs=4, verbose=0, validation_split=0.2,
        callbacks=[
            keras.callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1)),
            keras.callbacks.LambdaCallback(
                on_epoch_begin=lambda epoch, logs: lrs.append(model.optimizer.learning_rate)),
            keras.callbacks.CSVLogger(str(tmp_path / "log.csv")),
            keras.callbacks.ModelCheckpoint(str(tmp_path / "ckpt-{epoch:02d}.tandem")),
            keras.callbacks.TerminateOnNaN(),
            keras.callbacks.EarlyStopping(monitor="loss", patience=10),
        ])
    assert lrs == pytest.approx([0.1, 0.05, 0.1 / 3, 0.025])
    assert len((tmp_path / "log.csv").read_text().splitlines()) == 5
    assert sorted(p.name for p in tmp_path.glob("ckpt-*")) == [
        f"ckpt-0{i}.tandem" for i in range(1, 5)]
    assert len(history.epoch) == 4

    # EarlyStopping with patience 0 on a quantity that cannot improve stops after epoch 2.
    history = small_model().fit(x, y, epochs=10, verbose=0, callbacks=[
        keras.callbacks.EarlyStopping(monitor="loss", min_delta=100, patience=0)])
    assert history.epoch == [0, 1]  # as Keras: epoch 1 improves on infinity, epoch 2 cannot

    class Overridden(keras.callbacks.EarlyStopping):
        def on_epoch_end(self, epoch, logs=None):
            pass

    with pytest.raises(NotImplementedError, match="EarlyStopping"):
        small_model().fit(x, y, epochs=1, verbose=0, callbacks=[Overridden()])
    with pytest.raises(NotImplementedError, match=r"\.h5"):
        keras.callbacks.ModelCheckpoint("best.h5")
