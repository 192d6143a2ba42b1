"""compile / fit / evaluate / predict through Python, History, devices and strategies."""
import json

import numpy as np
import pytest

import tandem
import tandem.keras as keras
from conftest import small_model


def test_fit_history_matches_keras_keys(data):
    x, y = data
    model = small_model()
    history = model.fit(x, y, batch_size=32, epochs=3, validation_split=0.25, verbose=0)
    assert isinstance(history, keras.callbacks.History)
    assert history.epoch == [0, 1, 2]
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert all(len(v) == 3 for v in history.history.values())
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 12}
    assert model.history is history and history.model is model
    loss, acc = model.evaluate(x, y, verbose=0)
    assert 0 <= acc <= 1 and np.isfinite(loss)
    assert model.evaluate(x, y, verbose=0, return_dict=True) == {"loss": loss, "accuracy": acc}
    p = model.predict(x, verbose=0)
    assert p.shape == (512, 3) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-5)


def test_sequential_keras_2_and_3_styles(data):
    x, y = data
    a = keras.Sequential([keras.Input(shape=(20,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(3, activation="softmax")])
    b = keras.Sequential()
    b.add(keras.layers.Dense(8, activation="relu", input_shape=(20,)))
    b.add(keras.layers.Dense(3, activation="softmax"))
    c = keras.Sequential([keras.layers.Dense(8, activation="relu"),  # built from the data
                          keras.layers.Dense(3, activation="softmax")])
    for model in (a, b, c):
        model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["acc"])
        model.fit(x, y, epochs=1, verbose=0)
        assert model.input_shape == (None, 20) and model.output_shape == (None, 3)
        assert model.count_params() == 20 * 8 + 8 + 8 * 3 + 3
    with pytest.raises(ValueError, match="has not been built"):
        keras.Sequential([keras.layers.Dense(3)]).summary()


def test_summary_layout(capsys):
    model = small_model()
    model.summary()
    out = capsys.readouterr().out
    assert 'Model: "model"' in out and "Total params: 387" in out
    assert "(None, 16)" in out and "Param #" in out
    lines = []
    model.summary(print_fn=lines.append)
    assert "Total params: 387" in lines[0]


def test_float64_uint8_and_noncontiguous_inputs(data):
    x, y = data
    model = small_model()
    model.fit(x.astype(np.float64), y.astype(np.float64), epochs=1, verbose=0)
    model.fit(np.asfortranarray(x), y, epochs=1, verbose=0)
    b = (np.abs(x) * 40).astype(np.uint8)
    model.fit(b, y, epochs=1, verbose=0)  # uint8 taken as it is, converted per batch
    assert model.predict(b, verbose=0).shape == (512, 3)


def test_weights_roundtrip_and_functional_graph(data):
    x, y = data
    inputs = keras.Input(shape=(20,))
    left = keras.layers.Dense(8, activation="relu")(inputs)
    right = keras.layers.Dense(8, activation="tanh")(inputs)
    joined = keras.layers.concatenate([left, right])
    summed = keras.layers.add([keras.layers.Dense(4)(joined), keras.layers.Dense(4)(joined)])
    model = keras.Model(inputs=inputs, outputs=keras.layers.Dense(3, activation="softmax")(summed))
    model.compile(optimizer="rmsprop", loss="categorical_crossentropy")
    model.fit(x, y, epochs=1, verbose=0)
    weights = model.get_weights()
    assert [w.shape for w in weights[:2]] == [(20, 8), (8,)]
    model.set_weights([np.zeros_like(w) for w in weights])
    assert all(not w.any() for w in model.get_weights())
    model.set_weights(weights)
    for a, b in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    assert isinstance(model.evaluate(x, y, verbose=0), float)
    with pytest.raises(ValueError):
        model.set_weights(weights[:-1] + [np.zeros(7, np.float32)])


def test_train_on_batch_and_optimizer_learning_rate(data):
    x, y = data
    model = small_model()
    loss, acc = model.train_on_batch(x[:64], y[:64])
    assert np.isfinite(loss)
    assert model.optimizer.learning_rate == pytest.approx(0.1)
    model.optimizer.learning_rate = 0.01
    assert model._cpp.learning_rate == pytest.approx(0.01)


def test_save_and_load_model(tmp_path, data):
    x, y = data
    model = small_model()
    model.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "m.tandem"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    # The optimizer state came along: one more epoch from each gives the same weights.
    model.fit(x, y, epochs=1, verbose=0, shuffle=False)
    restored.fit(x, y, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), restored.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    model.save_weights(tmp_path / "w.tandem")
    other = small_model(seed=11)
    other.load_weights(tmp_path / "w.tandem")
    np.testing.assert_array_equal(other.get_weights()[0], model.get_weights()[0])
    with pytest.raises(FileExistsError):
        model.save(path, overwrite=False)
    with pytest.raises(NotImplementedError, match=r"\.h5"):
        model.save(tmp_path / "m.h5")


def test_multi_gpu_model_shares_weights_and_matches_one_device(data):
    x, y = data
    one = small_model()
    one.fit(x, y, batch_size=64, epochs=2, verbose=0, seed=5, deterministic=True)
    template = small_model()
    parallel = keras.utils.multi_gpu_model(template, 2)
    parallel.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                     loss="categorical_crossentropy", metrics=["accuracy"])
    assert parallel._devices(None, None, None) == (2, "mirrored", False)
    parallel.fit(x, y, batch_size=64, epochs=2, verbose=0, seed=5, deterministic=True)
    for a, b, c in zip(one.get_weights(), parallel.get_weights(), template.get_weights()):
        np.testing.assert_array_equal(a, b)  # deterministic: bitwise for any device count
        np.testing.assert_array_equal(b, c)  # the template holds the same weights
    host = keras.utils.multi_gpu_model(small_model(), gpus=[0, 1], strategy="host")
    host.compile(optimizer="sgd", loss="categorical_crossentropy")
    assert host._devices(None, None, None)[:2] == (2, "host")
    host.fit(x, y, batch_size=64, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="gpus >= 2"):
        keras.utils.multi_gpu_model(template, 1)


def test_fit_devices_and_strategy_scope_use_that_many_devices(tmp_path, data):
    x, y = data

    def device_lanes(trace):
        events = json.loads(trace.read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        return {e["args"]["name"] for e in events
                if e.get("ph") == "M" and e.get("name") == "thread_name"
                and e["args"]["name"].startswith("device")}

    model = small_model()
    model.fit(x, y, batch_size=64, epochs=1, verbose=0, devices=2, trace_path=tmp_path / "a.json")
    assert len(device_lanes(tmp_path / "a.json")) == 2
    strategy = tandem.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
        scoped = small_model()
    assert tandem.distribute.get_strategy() is None
    scoped.fit(x, y, batch_size=64, epochs=1, verbose=0, trace_path=tmp_path / "b.json")
    assert len(device_lanes(tmp_path / "b.json")) == 2
    # Mirrored on 2 devices matches 1 device to float rounding.
    a, b = small_model(), small_model()
    a.fit(x, y, batch_size=64, epochs=2, verbose=0, seed=9)
    b.fit(x, y, batch_size=64, epochs=2, verbose=0, seed=9, devices=2)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-4, atol=1e-5)


def test_fit_releases_the_gil(data):
    import threading
    x, y = data
    x = np.tile(x, (40, 1))
    y = np.tile(y, (40, 1))
    model = small_model()
    ticks = [0]
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    finally:
        done.set()
        t.join()
    assert ticks[0] > 1000  # the thread ran Python while C++ trained
