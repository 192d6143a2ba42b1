"""Models move between Keras 3 and tandem through .keras files: a Sequential MLP, a
functional convnet with BatchNormalization and one with branches (Concatenate, Add,
Dropout), each way. Keras runs in its own interpreter (keras_side.py in .venv-keras, made by
scripts/keras_env.sh: Keras 3 on JAX). Predictions agree within 1e-5, and a model trained
in one continues in the other from the same optimizer state: the next step's weights match
within 1e-5 for SGD with momentum, RMSprop and Adam. Each loss and accuracy tandem has
(by name and as a Keras object) gives Keras's evaluate() logs, names included, either way."""
import json
import os
import subprocess
import zipfile

import numpy as np
import pytest

import tandem
import tandem.keras as keras
import keras_models
from conftest import require

HERE = os.path.dirname(os.path.abspath(__file__))
KERAS_PYTHON = os.path.join(HERE, "..", "..", ".venv-keras", "bin", "python")
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def keras_side(*args):
    require(os.path.exists(KERAS_PYTHON),
            "Keras 3 for the interop tests (scripts/keras_env.sh makes .venv-keras)")
    done = subprocess.run([KERAS_PYTHON, os.path.join(HERE, "keras_side.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr


def write_data(directory, kind):
    rng = np.random.default_rng(11)
    shape = (32, 12) if kind in ("sequential", "unsupported", "crossed", "shared") else (32, 8, 8, 2)
    x = rng.standard_normal(shape).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 32)]
    np.savez(directory / "data.npz", x=x, y=y)
    return {"x": x, "y": y}


def assert_same_weights(actual, expected_npz):
    expected = [expected_npz[f"arr_{i}"] for i in range(len(expected_npz.files))]
    assert [a.shape for a in actual] == [e.shape for e in expected]
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, err_msg=f"weight {i}", **TOLERANCE)


def next_step(model, data):
    model.train_on_batch(data["x"][:keras_models.BATCH], data["y"][:keras_models.BATCH])


CONTINUED = [(kind, opt) for kind in ("sequential", "functional")
             for opt in ("sgd", "rmsprop", "adam")] + [("crossed", "adam"), ("shared", "sgd")]


@pytest.mark.parametrize("kind,optimizer", CONTINUED)
def test_keras_model_continues_training_in_tandem(tmp_path, kind, optimizer):
    data = write_data(tmp_path, kind)
    keras_side("make", kind, optimizer, tmp_path)
    model = keras.models.load_model(tmp_path / "keras.keras")
    np.testing.assert_allclose(model.predict(data["x"], verbose=0),
                               np.load(tmp_path / "predict.npy"), **TOLERANCE)
    next_step(model, data)
    assert_same_weights(model.get_weights(), np.load(tmp_path / "next.npz"))


@pytest.mark.parametrize("kind,optimizer", CONTINUED)
def test_tandem_model_continues_training_in_keras(tmp_path, kind, optimizer):
    data = write_data(tmp_path, kind)
    keras.utils.set_random_seed(3)
    model = keras_models.build(keras, kind)
    keras_models.compile_and_fit(keras, model, optimizer, data)
    model.save(tmp_path / "tandem.keras")
    keras_side("continue", tmp_path)
    np.testing.assert_allclose(model.predict(data["x"], verbose=0),
                               np.load(tmp_path / "predict.npy"), **TOLERANCE)
    next_step(model, data)
    assert_same_weights(model.get_weights(), np.load(tmp_path / "next.npz"))
    # Keras counted on from tandem's step count: 4 steps in tandem, then its own one.
    assert int(np.load(tmp_path / "iterations.npy")) == 5


@pytest.mark.parametrize("kind", ["branches", "every_layer"])
def test_models_predict_alike_both_ways(tmp_path, kind):
    data = write_data(tmp_path, kind)
    keras_side("make", kind, "adam", tmp_path)
    model = keras.models.load_model(tmp_path / "keras.keras")
    np.testing.assert_allclose(model.predict(data["x"], verbose=0),
                               np.load(tmp_path / "predict.npy"), **TOLERANCE)
    # And back: the model tandem read, written by tandem, read by Keras.
    model.save(tmp_path / "tandem.keras")
    expected = model.predict(data["x"], verbose=0)
    keras_side("continue", tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "predict.npy"), expected, **TOLERANCE)


def test_weights_files_load_into_the_same_architecture(tmp_path):
    data = write_data(tmp_path, "functional")
    keras_side("make", "functional", "adam", tmp_path)
    trained = keras.models.load_model(tmp_path / "keras.keras")
    trained.save_weights(tmp_path / "w.weights.h5")
    keras.utils.set_random_seed(8)
    fresh = keras_models.build(keras, "functional")
    fresh.load_weights(tmp_path / "w.weights.h5")
    np.testing.assert_array_equal(fresh.predict(data["x"], verbose=0),
                                  trained.predict(data["x"], verbose=0))


def test_unsupported_layer_and_damaged_file_are_named(tmp_path):
    write_data(tmp_path, "unsupported")
    keras_side("make", "unsupported", "adam", tmp_path)
    with pytest.raises(tandem.FormatError, match=r"layer 'norm' \(LayerNormalization\).*not supported"):
        keras.models.load_model(tmp_path / "keras.keras")

    data = write_data(tmp_path, "sequential")
    keras_side("make", "sequential", "adam", tmp_path)
    whole = (tmp_path / "keras.keras").read_bytes()
    (tmp_path / "cut.keras").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(tandem.FormatError, match=r"cut\.keras.*zip"):
        keras.models.load_model(tmp_path / "cut.keras")
    # A zip whose weights entry is not HDF5: the entry is named.
    with zipfile.ZipFile(tmp_path / "keras.keras") as z:
        entries = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(tmp_path / "bad.keras", "w") as z:
        for name, contents in entries.items():
            z.writestr(name, b"\0" * 65536 if name == "model.weights.h5" else contents)
    with pytest.raises(tandem.FormatError, match=r"zip entry 'model\.weights\.h5'.*not a readable HDF5"):
        keras.models.load_model(tmp_path / "bad.keras")
    assert data["x"].shape == (32, 12)


def test_keras2_h5_files_load_and_predict_as_keras_did():
    """Keras 2 (tf_keras) whole-model .h5 files, from tests/golden/keras2: read, not written."""
    golden = os.path.join(HERE, "..", "..", "tests", "golden", "keras2")
    import json
    with open(os.path.join(golden, "expected.json")) as f:
        files = json.load(f)["files"]
    for name, entry in files.items():
        model = keras.models.load_model(os.path.join(golden, entry["file"]))
        x = np.asarray(entry["predict"]["x"], np.float32).reshape(-1, *entry["input_shape"])
        np.testing.assert_allclose(model.predict(x, verbose=0), entry["predict"]["y"],
                                   err_msg=name, **TOLERANCE)
    with pytest.raises(NotImplementedError, match=r"\.h5"):
        model.save(os.path.join(golden, "never.h5"))


@pytest.fixture(scope="module")
def keras_loss_files(tmp_path_factory):
    """Keras's side of the loss and metric tests: one Keras process for every case."""
    out = tmp_path_factory.mktemp("losses")
    keras_side("losses", out)
    return out


def loss_data():
    return keras_models.loss_data(np.random.default_rng(5))


def assert_same_logs(actual, expected, case):
    assert sorted(actual) == sorted(expected), (case, actual, expected)
    for key, value in expected.items():
        np.testing.assert_allclose(actual[key], value, err_msg=f"{case}: {key}", **TOLERANCE)


@pytest.mark.parametrize("case", sorted(keras_models.LOSS_CASES))
def test_each_loss_and_metric_evaluates_and_continues_as_in_keras(keras_loss_files, case):
    data = loss_data()
    labels = data[keras_models.LOSS_CASES[case][3]]
    model = keras.models.load_model(keras_loss_files / f"keras_{case}.keras")
    logs = model.evaluate(data["x"], labels, batch_size=32, verbose=0, return_dict=True)
    with open(keras_loss_files / "keras_logs.json") as f:
        assert_same_logs(logs, json.load(f)[case], case)
    model.train_on_batch(data["x"][:keras_models.BATCH], labels[:keras_models.BATCH])
    assert_same_weights(model.get_weights(), np.load(keras_loss_files / f"keras_next_{case}.npz"))


def test_each_loss_and_metric_tandem_saves_evaluates_so_in_keras(tmp_path):
    data = loss_data()
    expected = {}
    for case, (_, _, _, labels) in keras_models.LOSS_CASES.items():
        keras.utils.set_random_seed(3)
        model = keras_models.build_for_loss(keras, case)
        keras_models.compile_and_fit_for_loss(keras, model, case, data)
        model.save(tmp_path / f"tandem_{case}.keras")
        expected[case] = model.evaluate(data["x"], data[labels], batch_size=32, verbose=0,
                                        return_dict=True)
    keras_side("evaluate", tmp_path)
    with open(tmp_path / "tandem_logs.json") as f:
        got = json.load(f)
    assert sorted(got) == sorted(expected)
    for case in expected:
        assert_same_logs(got[case], expected[case], case)


def test_load_model_without_compile(keras_loss_files):
    """compile=False, as Keras's: weights and architecture, no optimizer, loss or state; a
    file compiled with a loss tandem lacks loads so, and not otherwise."""
    data = loss_data()
    path = keras_loss_files / "keras_cce_accuracy.keras"
    compiled = keras.models.load_model(path)
    assert compiled.optimizer.get_config()["name"] == "adam"
    assert compiled.optimizer.learning_rate == pytest.approx(0.005)
    assert compiled.loss == "categorical_crossentropy"
    bare = keras.models.load_model(path, compile=False)
    assert bare.optimizer is None
    np.testing.assert_array_equal(bare.predict(data["x"], verbose=0),
                                  compiled.predict(data["x"], verbose=0))
    with pytest.raises(tandem.ConfigError, match="must be compiled before"):
        bare.fit(data["x"], data["onehot"], verbose=0)
    bare.compile(optimizer="sgd", loss="categorical_crossentropy")
    bare.fit(data["x"], data["onehot"], epochs=1, verbose=0)

    huber = keras_loss_files / "keras_huber.keras"
    with pytest.raises(tandem.FormatError, match=r"compile_config.*unknown loss 'huber'"):
        keras.models.load_model(huber)
    model = keras.models.load_model(huber, compile=False)
    assert model.predict(data["x"], verbose=0).shape == (32, 4)


def test_keras2_weights_only_h5_loads_into_a_model_built_again():
    """Keras 2's save_weights("x.h5"): matched by layer order, as Keras's load_weights."""
    golden = os.path.join(HERE, "..", "..", "tests", "golden", "keras2")
    with open(os.path.join(golden, "expected.json")) as f:
        entry = json.load(f)["files"]["sequential_sgd_keras2"]
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4, activation="softmax")])
    model.load_weights(os.path.join(golden, entry["weights_file"]))
    x = np.asarray(entry["predict"]["x"], np.float32)
    np.testing.assert_allclose(model.predict(x, verbose=0), entry["predict"]["y"], **TOLERANCE)
    with pytest.raises(NotImplementedError, match=r"\.h5"):
        model.save_weights(os.path.join(golden, "never.h5"))
