"""C++ errors arrive as Python exceptions of the matching kind, with the C++ message."""
import numpy as np
import pytest

import tandem
import tandem.keras as keras
from conftest import small_model


def test_hierarchy():
    assert issubclass(tandem.ShapeError, ValueError) and issubclass(tandem.ShapeError, tandem.Error)
    assert issubclass(tandem.ConfigError, ValueError)
    assert issubclass(tandem.FileNotFoundError, FileNotFoundError)
    assert issubclass(tandem.FileNotFoundError, tandem.IoError)
    assert issubclass(tandem.IoError, OSError) and issubclass(tandem.FormatError, OSError)
    assert issubclass(tandem.BackendError, RuntimeError)
    assert issubclass(tandem.CommError, RuntimeError)
    assert issubclass(tandem.NumericError, FloatingPointError)


def test_shape_error_is_value_error(data):
    x, y = data
    model = small_model()
    with pytest.raises(ValueError, match=r"784|\(None, 20\)|20") as info:
        model.fit(np.zeros((10, 784), np.float32), y[:10], verbose=0)
    assert isinstance(info.value, tandem.ShapeError)
    with pytest.raises(tandem.ShapeError):
        model.predict(np.zeros((4, 19), np.float32), verbose=0)


def test_config_error_is_value_error(data):
    x, y = data
    with pytest.raises(tandem.ConfigError, match="batch"):
        small_model().fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(ValueError):
        small_model().fit(x, y, devices=0, verbose=0)


def test_missing_and_corrupt_files(tmp_path, data):
    missing = tmp_path / "nothing.tandem"
    with pytest.raises(FileNotFoundError) as info:
        keras.models.load_model(missing)
    assert isinstance(info.value, tandem.IoError) and str(missing) in str(info.value)
    assert info.value.filename == str(missing)
    corrupt = tmp_path / "corrupt.tandem"
    corrupt.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(OSError) as info:
        keras.models.load_model(corrupt)
    assert isinstance(info.value, tandem.FormatError) and str(corrupt) in str(info.value)
    model = small_model()
    model.save(tmp_path / "ok.tandem")
    raw = bytearray((tmp_path / "ok.tandem").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tmp_path / "flipped.tandem").write_bytes(bytes(raw))
    with pytest.raises(tandem.FormatError):
        keras.models.load_model(tmp_path / "flipped.tandem")
    with pytest.raises(OSError):
        model.save(tmp_path / "no" / "such" / "dir" / "m.tandem")


def test_unknown_dtype_and_bad_arguments(data):
    x, y = data
    with pytest.raises(ValueError, match="numeric"):
        small_model().fit(np.array([["a"] * 20] * 4), y[:4], verbose=0)
    with pytest.raises(TypeError, match="unrecognized"):
        small_model().fit(x, y, verbose=0, bogus=True)
    with pytest.raises(NotImplementedError, match="sample_weight"):
        small_model().fit(x, y, verbose=0, sample_weight=np.ones(512))
    with pytest.raises(ValueError, match="labels"):
        keras.utils.to_categorical(np.array([-1, 2]))
