"""Every name a Keras program imports resolves; what tandem cannot run says so by name."""
import importlib

import pytest

import tandem
import tandem.keras as keras


def test_keras_3_namespaces():
    for module in ("layers", "models", "optimizers", "losses", "metrics", "callbacks", "utils",
                   "datasets", "initializers", "activations"):
        assert importlib.import_module(f"tandem.keras.{module}") is getattr(keras, module)
    assert keras.Sequential is keras.models.Sequential
    assert keras.Model is keras.models.Model
    assert keras.Input is keras.layers.Input
    for name in ("Input", "InputLayer", "Dense", "Activation", "Dropout", "Flatten", "Add",
                 "Concatenate", "add", "concatenate"):
        assert hasattr(keras.layers, name), name
    for name in ("SGD", "RMSprop", "Adam"):
        assert hasattr(keras.optimizers, name)
    for name in ("Callback", "EarlyStopping", "ModelCheckpoint", "TerminateOnNaN", "CSVLogger",
                 "LearningRateScheduler", "History", "LambdaCallback"):
        assert hasattr(keras.callbacks, name)
    assert keras.models.load_model
    assert keras.utils.to_categorical and keras.utils.multi_gpu_model
    assert keras.datasets.mnist.load_data and keras.datasets.fashion_mnist.load_data


def test_keras_2_paths():
    from tandem.keras.layers import Input, Dense, merge  # noqa: F401
    from tandem.keras.layers.core import Lambda, Dense as CoreDense  # noqa: F401
    from tandem.keras.utils.training_utils import multi_gpu_model
    from tandem.keras.utils import multi_gpu_model as same
    assert multi_gpu_model is same and CoreDense is Dense


def test_keras_2_aliases():
    opt = keras.optimizers.SGD(lr=0.05, momentum=0.5, decay=0.0)
    assert opt.learning_rate == 0.05 and opt.lr == 0.05 and opt.momentum == 0.5
    assert keras.optimizers.RMSprop(epsilon=None).epsilon == 1e-7
    assert keras.optimizers.get("adam").learning_rate == 0.001


@pytest.mark.parametrize("name", ["Lambda", "Conv1D", "LSTM", "LayerNormalization",
                                  "GlobalMaxPooling2D", "Embedding"])
def test_unsupported_layers_name_themselves(name):
    cls = getattr(keras.layers, name)
    with pytest.raises(NotImplementedError, match=name):
        cls(lambda t: t) if name == "Lambda" else cls(8)


def test_merge_and_unsupported_arguments():
    with pytest.raises(NotImplementedError, match="merge"):
        keras.layers.merge([], mode="sum")
    with pytest.raises(NotImplementedError, match="clipnorm"):
        keras.optimizers.Adam(clipnorm=1.0)
    with pytest.raises(NotImplementedError, match="amsgrad"):
        keras.optimizers.Adam(amsgrad=True)
    with pytest.raises(NotImplementedError, match="from_logits"):
        keras.losses.CategoricalCrossentropy(from_logits=True)
    with pytest.raises(NotImplementedError, match="Adagrad"):
        keras.optimizers.Adagrad()
    with pytest.raises(NotImplementedError, match="ReduceLROnPlateau"):
        keras.callbacks.ReduceLROnPlateau()
    with pytest.raises(NotImplementedError, match="subclassed"):
        keras.Model()
    with pytest.raises(NotImplementedError, match="activation 'gelu'"):
        keras.layers.Dense(4, activation="gelu")
    with pytest.raises(TypeError, match="unrecognized"):
        keras.layers.Dense(4, bogus=1)


def test_version_and_module():
    assert tandem.__version__ == keras.__version__
    assert tandem._tandem.__file__.startswith(tandem.__path__[0])
