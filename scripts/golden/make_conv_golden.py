#!/usr/bin/env python3
"""Golden training runs of a small convnet with BatchNormalization, from real Keras 3.

    .venv-peers/bin/python scripts/golden/make_conv_golden.py [--out DIR]

The model (channels last):
    Input(8, 8, 2) -> Conv2D(4, 3, padding="same", use_bias=B) -> BatchNormalization -> relu
    -> MaxPooling2D(2) -> Conv2D(6, 2, use_bias=False) -> BatchNormalization(center=False)
    -> tanh -> Flatten -> Dense(3, softmax)
categorical cross-entropy, batch 8, 10 steps over 80 samples taken in order. B (the JSON's
"conv_bias") is False for Adam: a bias right before BatchNormalization has no gradient but
float rounding, which Adam's g / sqrt(v) turns into full-size steps of either sign, so no
two implementations agree on it (SGD keeps such a bias still, and keeps B True). Per case it
records the seeded initial weights (Keras's order: gamma, beta, moving_mean,
moving_variance for BatchNormalization), the loss train_on_batch reports for each step (the
training forward, batch statistics), every weight after the last step (moving statistics
included) and predict(x[:8]) (inference: moving statistics). Float32 throughout, one
thread, oneDNN off: re-running with the same versions gives the same files.
"""
import argparse
import json
import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("PYTHONHASHSEED", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "golden", "conv"))
STEPS, BATCH, N = 10, 8, 80

CASES = [
    ("conv_bn_adam", keras.optimizers.Adam, dict(learning_rate=0.01), False),
    ("conv_bn_sgd_momentum", keras.optimizers.SGD, dict(learning_rate=0.05, momentum=0.9), True),
]


def build(seed, conv_bias):
    keras.utils.set_random_seed(seed)
    layers = keras.layers
    inputs = keras.Input(shape=(8, 8, 2))
    x = layers.Conv2D(4, 3, padding="same", use_bias=conv_bias)(inputs)
    x = layers.Activation("relu")(layers.BatchNormalization()(x))
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(6, 2, use_bias=False)(x)
    x = layers.Activation("tanh")(layers.BatchNormalization(center=False)(x))
    outputs = layers.Dense(3, activation="softmax")(layers.Flatten()(x))
    return keras.Model(inputs, outputs)


def rounded(a):
    return [float(v) for v in np.asarray(a, np.float32).ravel()]


def run(name, optimizer, kwargs, conv_bias, seed=7):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 2, (N, 8, 8, 2)).astype(np.float32)
    labels = (x[:, :4, :, 0].mean(axis=(1, 2)) > 0.5).astype(int) + (x[:, 4:, :, 1].mean(
        axis=(1, 2)) > 0.5).astype(int)
    y = np.eye(3, dtype=np.float32)[labels]
    model = build(seed, conv_bias)
    model.compile(optimizer=optimizer(**kwargs), loss="categorical_crossentropy")
    initial = [w.copy() for w in model.get_weights()]
    losses = []
    for step in range(STEPS):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        losses.append(float(model.train_on_batch(x[rows], y[rows])))
    return {
        "name": name,
        "generator": "scripts/golden/make_conv_golden.py",
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "optimizer": {"name": optimizer.__name__.lower(), **kwargs},
        "conv_bias": conv_bias,
        "batch_size": BATCH,
        "steps": STEPS,
        "x": rounded(x),
        "y": rounded(y),
        "weight_shapes": [list(w.shape) for w in initial],
        "initial_weights": [rounded(w) for w in initial],
        "step_losses": losses,
        "final_weights": [rounded(w) for w in model.get_weights()],
        "predict": rounded(model.predict(x[:8], verbose=0)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, optimizer, kwargs, conv_bias in CASES:
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(run(name, optimizer, kwargs, conv_bias), f, separators=(",", ":"))
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
