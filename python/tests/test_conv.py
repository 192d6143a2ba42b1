"""Image models through tandem.keras: Keras's MNIST convnet, the image layers' arguments
and the errors bad shapes give."""
import numpy as np
import pytest

import tandem
import tandem.keras as keras
from tandem.keras import layers


def mnist_convnet():
    """Keras's "Simple MNIST convnet" example, as its documentation writes it."""
    return keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ])


def images(n=256, seed=0):
    """n 28x28x1 images whose class is the quadrant holding a bright square."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 0.2, (n, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 4, n)
    for i, c in enumerate(labels):
        r, col = divmod(int(c), 2)
        x[i, 14 * r + 3:14 * r + 11, 14 * col + 3:14 * col + 11, 0] = 1.0
    return x, keras.utils.to_categorical(labels, 10)


def test_mnist_convnet_summary_weights_and_training(capsys):
    keras.utils.set_random_seed(1)
    model = mnist_convnet()
    model.summary()
    out = capsys.readouterr().out
    # "max_pooling2d (MaxPooling2D)" is cut at 29 columns, as Keras 2 prints it.
    for name in ("conv2d (Conv2D)", "conv2d_1 (Conv2D)", "max_pooling2d (MaxPooling2D",
                 "(None, 26, 26, 32)", "(None, 5, 5, 64)", "Total params: 34,826"):
        assert name in out, name
    assert model.count_params() == 34826
    shapes = [w.shape for w in model.get_weights()]
    assert shapes == [(3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (1600, 10), (10,)]
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    x, y = images()
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.9
    p = model.predict(x[:10], verbose=0)
    assert p.shape == (10, 10)
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-5)


def test_two_devices_train_the_convnet_like_one():
    x, y = images(192, seed=2)
    weights = []
    for devices in (1, 2):
        keras.utils.set_random_seed(4)
        with tandem.distribute.MirroredStrategy(devices).scope():
            model = mnist_convnet()
            model.compile(loss="categorical_crossentropy",
                          optimizer=keras.optimizers.SGD(0.05, momentum=0.9))
        model.fit(x, y, batch_size=64, epochs=1, verbose=0, shuffle=False)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_functional_image_layers():
    inputs = keras.Input(shape=(9, 9, 3))
    x = layers.ZeroPadding2D(padding=((1, 0), (0, 1)))(inputs)      # (10, 10, 3)
    a = layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(x)  # (5, 5, 4)
    b = layers.AveragePooling2D(pool_size=3, strides=1, padding="same")(a)
    c = layers.Conv2D(4, (1, 1), dilation_rate=1, use_bias=False)(b)
    x = layers.Concatenate()([layers.Add()([a, c]), b])           # (5, 5, 8)
    x = layers.MaxPool2D(2, padding="same")(x)                     # (3, 3, 8)
    x = layers.GlobalAveragePooling2D()(x)                         # (8,)
    x = layers.Reshape((2, 4))(x)
    model = keras.Model(inputs, layers.Dense(2, activation="softmax")(layers.Flatten()(x)))
    assert model.output_shape == (None, 2)
    assert x.shape == (None, 2, 4) and a.shape == (None, 5, 5, 4)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    rng = np.random.default_rng(0)
    model.fit(rng.standard_normal((16, 9, 9, 3)).astype(np.float32),
              keras.utils.to_categorical(rng.integers(0, 2, 16), 2), epochs=1, verbose=0)


def test_arguments_follow_keras():
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(8, 0)
    with pytest.raises(ValueError, match="filters"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(8, 3, padding="full")
    with pytest.raises(NotImplementedError, match="channels_first"):
        layers.Conv2D(8, 3, data_format="channels_first")
    with pytest.raises(NotImplementedError, match="groups"):
        layers.Conv2D(8, 3, groups=2)
    with pytest.raises(NotImplementedError, match="keepdims"):
        layers.GlobalAveragePooling2D(keepdims=True)
    with pytest.raises(ValueError, match="at most one -1"):
        layers.Reshape((-1, -1))
    with pytest.raises(ValueError, match="ZeroPadding2D"):
        layers.ZeroPadding2D(padding=(1, 2, 3))
    assert layers.Conv2D(8, 3, padding="SAME").padding == "same"  # Keras lower-cases it
    assert layers.MaxPooling2D().pool_size == (2, 2) and layers.MaxPooling2D().strides is None
    assert layers.ZeroPadding2D(2).padding == ((2, 2), (2, 2))
    assert layers.ZeroPadding2D((1, 3)).padding == ((1, 1), (3, 3))
    assert layers.MaxPool2D is layers.MaxPooling2D


def test_bad_shapes_name_the_layer():
    with pytest.raises(tandem.ShapeError, match="Conv2D 'c'.*height, width, channels"):
        layers.Conv2D(8, 3, name="c")(keras.Input(shape=(784,)))
    with pytest.raises(tandem.ShapeError, match="Conv2D 'k'.*5x5.*does not fit"):
        layers.Conv2D(8, 5, name="k")(keras.Input(shape=(3, 3, 1)))
    model = mnist_convnet()
    model.compile(loss="categorical_crossentropy", optimizer="adam")
    flat = np.zeros((8, 784), np.float32)
    with pytest.raises(ValueError, match=r"\(None, 28, 28, 1\).*reshape"):
        model.fit(flat, np.zeros((8, 10), np.float32), verbose=0)


def test_batch_normalization_weights_summary_and_moving_statistics(capsys):
    model = keras.Sequential([keras.Input(shape=(4, 4, 3)), layers.Conv2D(2, 3, use_bias=False),
                              layers.BatchNormalization(), layers.Flatten(),
                              layers.Dense(2, activation="softmax")])
    model.summary()
    out = capsys.readouterr().out
    assert "batch_normalization (BatchN" in out and "Non-trainable params: 4" in out
    kernel, gamma, beta, mean, variance, _, _ = model.get_weights()
    assert kernel.shape == (3, 3, 3, 2) and gamma.shape == beta.shape == (2,)
    assert (gamma == 1).all() and (beta == 0).all() and (mean == 0).all() and (variance == 1).all()
    # One step: the moving statistics move 1 % of the way to the
    # statistics of the conv output (computed before the step updates the kernel).
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="categorical_crossentropy")
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 2, (8, 4, 4, 3)).astype(np.float32)
    model.fit(x, keras.utils.to_categorical(rng.integers(0, 2, 8), 2), batch_size=8, verbose=0)
    conv = np.zeros((8, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            conv[:, i, j, :] = np.einsum("nhwc,hwcf->nf", x[:, i:i + 3, j:j + 3, :], kernel)
    flat = conv.reshape(-1, 2)
    _, _, _, mean, variance, _, _ = model.get_weights()
    np.testing.assert_allclose(mean, 0.01 * flat.mean(axis=0), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(variance, 0.99 + 0.01 * flat.var(axis=0), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="axis"):
        layers.BatchNormalization(axis=1)


def _bn_net(synchronized):
    keras.utils.set_random_seed(4)
    model = keras.Sequential([
        keras.Input((6, 6, 2)),
        layers.Conv2D(4, 3, padding="same", use_bias=False),
        layers.BatchNormalization(synchronized=synchronized),
        layers.Activation("relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dense(3, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
                  loss="categorical_crossentropy")
    return model


def test_synchronized_batch_normalization_on_two_devices_matches_one():
    rng = np.random.default_rng(2)
    x = rng.normal(1, 2, (64, 6, 6, 2)).astype(np.float32)
    y = keras.utils.to_categorical(rng.integers(0, 3, 64), 3)
    runs = {}
    for synchronized, devices in [(True, 1), (True, 2), (False, 2)]:
        model = _bn_net(synchronized)
        model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False, devices=devices)
        runs[synchronized, devices] = model.get_weights()
    for a, b in zip(runs[True, 2], runs[True, 1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Each device's own statistics (the default) train to other weights.
    gap = max(np.abs(a - b).max() for a, b in zip(runs[False, 2], runs[True, 1]))
    assert gap > 1e-3
