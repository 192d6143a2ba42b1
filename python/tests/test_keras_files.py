"""Models move between Keras 3 and tandem through .keras files: a Sequential MLP, a
functional convnet with BatchNormalization and one with branches (Concatenate, Add,
Dropout), each way. Keras runs in its own interpreter (keras_side.py in .venv-keras, made by
scripts/keras_env.sh: Keras 3 on JAX). Predictions agree within 1e-5, and a model trained
in one continues in the other from the same optimizer state: the next step's weights match
within 1e-5 for SGD with momentum, RMSprop and Adam."""
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
    shape = (32, 12) if kind in ("sequential", "unsupported", "crossed") else (32, 8, 8, 2)
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
             for opt in ("sgd", "rmsprop", "adam")] + [("crossed", "adam")]


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
