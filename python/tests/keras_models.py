"""The models test_keras_files.py moves between Keras and tandem, written once against the
Keras API so that keras_side.py builds them with Keras and the tests with tandem.keras."""

import numpy as np

BATCH = 8


def build(keras, kind):
    layers = keras.layers
    if kind == "sequential":
        return keras.Sequential([keras.Input((12,)), layers.Dense(16, activation="relu"),
                                 layers.Dense(8, activation="tanh"),
                                 layers.Dense(4, activation="softmax")], name="mlp")
    if kind == "unsupported":  # LayerNormalization: a Keras layer tandem does not have
        return keras.Sequential([keras.Input((12,)), layers.Dense(16),
                                 layers.LayerNormalization(name="norm"),
                                 layers.Dense(4, activation="softmax")])
    if kind == "crossed":
        # Two Dense layers of one shape whose order in Keras (by depth) differs from a
        # depth-first walk's: a writer in the wrong order would swap their weights silently.
        inputs = keras.Input((12,))
        shallow = layers.Dense(16, activation="relu")(inputs)
        deep = layers.Dense(16, activation="sigmoid")(layers.Dense(16, activation="tanh")(inputs))
        x = layers.Concatenate()([shallow, deep])
        return keras.Model(inputs, layers.Dense(4, activation="softmax")(x), name=kind)
    if kind == "shared":
        # One Dense called on two tensors: its weights once, used twice (two inbound nodes).
        inputs = keras.Input((12,))
        shared = layers.Dense(8, activation="relu", name="shared")
        x = layers.Concatenate()([shared(inputs), shared(layers.Dense(12)(inputs))])
        return keras.Model(inputs, layers.Dense(4, activation="softmax")(x), name=kind)
    if kind == "every_layer":
        # The layers and options the other models leave out, with non-default initializers.
        inputs = keras.Input((8, 8, 2))
        x = layers.ZeroPadding2D(((1, 0), (0, 1)))(inputs)
        x = layers.Conv2D(4, 3, strides=(1, 1), dilation_rate=2, padding="same",
                          kernel_initializer="he_normal", bias_initializer="ones")(x)
        x = layers.Activation("relu")(x)
        x = layers.BatchNormalization(center=False, momentum=0.9, epsilon=1e-2)(x)
        x = layers.AveragePooling2D(2, strides=1, padding="same")(x)
        pooled = layers.GlobalAveragePooling2D()(x)
        x = layers.Reshape((3, 27, 1))(
            layers.Conv2D(1, 1, use_bias=False, kernel_initializer="glorot_normal")(x))
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        x = layers.Dense(8, kernel_initializer="random_uniform",
                         bias_initializer="random_normal")(layers.Flatten()(x))
        x = layers.Concatenate()([pooled, x])
        return keras.Model(inputs, layers.Dense(4, activation="sigmoid",
                                                kernel_initializer="he_uniform")(x), name=kind)
    inputs = keras.Input((8, 8, 2))
    x = layers.Conv2D(4, 3, padding="same", activation="relu")(inputs)
    x = layers.BatchNormalization()(x)
    if kind == "branches":
        a = layers.MaxPooling2D(2)(x)
        b = layers.AveragePooling2D(2)(layers.Conv2D(4, 3, padding="same")(x))
        c = layers.Concatenate()([a, b])
        x = layers.Add()([c, layers.Conv2D(8, 1, activation="tanh")(c)])
        x = layers.Dropout(0.5)(layers.Flatten()(x))
    else:  # functional: Dropout at rate 0, so that a training step is deterministic
        x = layers.MaxPooling2D(2)(x)
        x = layers.Dropout(0.0)(layers.Flatten()(x))
    return keras.Model(inputs, layers.Dense(4, activation="softmax")(x), name=kind)


def optimizer(keras, name):
    return {"sgd": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
            "rmsprop": lambda: keras.optimizers.RMSprop(0.005),
            "adam": lambda: keras.optimizers.Adam(0.005)}[name]()


def compile_and_fit(keras, model, optimizer_name, data):
    """Compiled as the tests compare it, then 4 steps of batch 8 in order."""
    model.compile(optimizer=optimizer(keras, optimizer_name), loss="categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(data["x"], data["y"], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)


# The losses and metrics tandem has, each as Keras compiles it: name: (loss, metric, output
# activation, labels). "class:X" is keras.losses.X() or keras.metrics.X(); labels are one-hot
# rows, class indices (sparse), several 0/1 labels per row (multilabel) or one (single).
LOSS_CASES = {
    "cce_accuracy": ("categorical_crossentropy", "accuracy", "softmax", "onehot"),
    "cce_acc": ("categorical_crossentropy", "acc", "softmax", "onehot"),
    "cce_categorical": ("categorical_crossentropy", "categorical_accuracy", "softmax", "onehot"),
    "cce_binary": ("categorical_crossentropy", "binary_accuracy", "softmax", "onehot"),
    "cce_objects": ("class:CategoricalCrossentropy", "class:CategoricalAccuracy", "softmax",
                    "onehot"),
    "sparse_accuracy": ("sparse_categorical_crossentropy", "accuracy", "softmax", "sparse"),
    "sparse_named": ("sparse_categorical_crossentropy", "sparse_categorical_accuracy", "softmax",
                     "sparse"),
    "sparse_objects": ("class:SparseCategoricalCrossentropy", "class:SparseCategoricalAccuracy",
                       "softmax", "sparse"),
    "bce_accuracy": ("binary_crossentropy", "accuracy", "sigmoid", "multilabel"),
    "bce_binary": ("binary_crossentropy", "class:BinaryAccuracy", "sigmoid", "multilabel"),
    "bce_single": ("binary_crossentropy", "accuracy", "sigmoid", "single"),
    "mse": ("mean_squared_error", None, "linear", "onehot"),
    "mse_alias": ("mse", "binary_accuracy", "linear", "onehot"),
}


def loss_data(rng):
    """The inputs and each label kind of LOSS_CASES, 32 rows."""
    x = rng.standard_normal((32, 12)).astype(np.float32)
    indices = rng.integers(0, 4, 32)
    return {"x": x, "onehot": np.eye(4, dtype=np.float32)[indices],
            "sparse": indices.reshape(32, 1).astype(np.float32),
            "multilabel": (rng.random((32, 4)) < 0.4).astype(np.float32),
            "single": (rng.random((32, 1)) < 0.5).astype(np.float32)}


def resolve(module, spec):
    return getattr(module, spec[len("class:"):])() if spec.startswith("class:") else spec


def build_for_loss(keras, case):
    loss, metric, activation, labels = LOSS_CASES[case]
    outputs = 1 if labels == "single" else 4
    return keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(outputs, activation=activation)], name=case)


def compile_and_fit_for_loss(keras, model, case, data):
    """Compiled with the case's loss and metric and Adam, then 4 steps of batch 8 in order."""
    loss, metric, _, labels = LOSS_CASES[case]
    model.compile(optimizer=keras.optimizers.Adam(0.005), loss=resolve(keras.losses, loss),
                  metrics=None if metric is None else [resolve(keras.metrics, metric)])
    model.fit(data["x"], data[labels], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
