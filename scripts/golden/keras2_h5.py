"""Writes tests/golden/keras2/: whole-model .h5 files as Keras 2 (tf_keras) and Keras 3's
legacy writer save them, with what Keras computed from each in expected.json, for
tests/golden/keras2_h5_golden_test.cpp.

  .venv-peers/bin/python scripts/golden/keras2_h5.py --writer keras2   # tf_keras 2.x
  .venv-peers/bin/python scripts/golden/keras2_h5.py --writer keras3   # keras 3, legacy h5

Each model is compiled, trained 3 steps of batch 8 and saved (Keras 2 also saves its
weights alone, save_weights("x.h5"), as <name>_weights.h5, and the first model's again
with its name lists as fixed-length strings, as Keras 2 on h5py 2 wrote them, as
<name>_fixed_strings_weights.h5); expected.json records its
predictions on 5 rows (inference mode) and, after one more train_on_batch on a fixed batch,
the loss that step reported, every weight in get_weights() order and the optimizer's step
count. The continuation models have no Dropout, so the step is deterministic.
"""
import argparse
import json
import os
import sys

import numpy as np

MODELS = {
    # name: (kind, optimizer, loss, continuation)
    "sequential_sgd": ("sequential", "sgd", "categorical_crossentropy", True),
    "functional_adam": ("functional", "adam", "categorical_crossentropy", True),
    "convnet_rmsprop": ("convnet", "rmsprop", "categorical_crossentropy", True),
    "dropout_branches": ("dropout", "adam", "categorical_crossentropy", False),
}


def build(keras, kind):
    layers = keras.layers
    if kind == "sequential":
        return keras.Sequential([layers.Dense(16, activation="relu", input_shape=(12,)),
                                 layers.Dense(4, activation="softmax")])
    if kind == "convnet":
        inputs = keras.Input((6, 6, 2))
        x = layers.Conv2D(3, 3, padding="same", activation="relu")(inputs)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(2)(x)
        return keras.Model(inputs, layers.Dense(4, activation="softmax")(layers.Flatten()(x)))
    inputs = keras.Input((12,))
    a = layers.Dense(16, activation="relu", name="a")(inputs)
    b = layers.Dense(16, activation="tanh", name="b")(inputs)
    x = layers.Concatenate()([layers.Add()([a, b]), layers.Dense(8)(inputs)])
    if kind == "dropout":
        x = layers.Dropout(0.3)(x)
    return keras.Model(inputs, layers.Dense(4, activation="softmax")(x))


def optimizer(keras, name):
    return {"sgd": lambda: keras.optimizers.SGD(0.05, momentum=0.9),
            "rmsprop": lambda: keras.optimizers.RMSprop(0.01),
            "adam": lambda: keras.optimizers.Adam(0.01)}[name]()


def floats(a):
    return [float(np.float32(v)) for v in np.asarray(a, dtype=np.float32).ravel()]


def fixed_strings_copy(out, weights_file):
    """A copy of `weights_file` whose layer_names and weight_names attributes are arrays of
    fixed-length byte strings (h5py 3 writes variable-length ones)."""
    import shutil
    import h5py
    copy = weights_file.replace("_weights.h5", "_fixed_strings_weights.h5")
    shutil.copyfile(os.path.join(out, weights_file), os.path.join(out, copy))
    with h5py.File(os.path.join(out, copy), "r+") as f:
        groups = [f] + [f[n] for n in f.attrs["layer_names"]]
        for g in groups:
            for key in ("layer_names", "weight_names"):
                if key in g.attrs and len(g.attrs[key]):
                    names = [n.encode() if isinstance(n, str) else n for n in g.attrs[key]]
                    del g.attrs[key]
                    g.attrs[key] = np.array(names, dtype=f"S{max(map(len, names))}")
                    assert g.attrs[key].dtype.kind == "S"
    return copy


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--writer", choices=["keras2", "keras3"], required=True)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                  "tests", "golden", "keras2"))
    args = p.parse_args()
    if args.writer == "keras2":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tf_keras as keras
    else:
        import keras
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "expected.json")
    expected = json.load(open(path)) if os.path.exists(path) else {"files": {}}
    expected["generator"] = "scripts/golden/keras2_h5.py"
    expected.setdefault("writers", {})[args.writer] = {"keras_version": keras.__version__,
                                                       "python": sys.version.split()[0]}
    for name, (kind, opt, loss, continuation) in MODELS.items():
        if args.writer == "keras3" and name != "functional_adam":
            continue  # one file from Keras 3's legacy writer: its configs are Keras 3's
        keras.utils.set_random_seed(1234)
        model = build(keras, kind)
        model.compile(optimizer=optimizer(keras, opt), loss=loss, metrics=["accuracy"])
        rng = np.random.RandomState(99)
        shape = (6, 6, 2) if kind == "convnet" else (12,)
        x = rng.uniform(-1, 1, (24,) + shape).astype(np.float32)
        y = np.eye(4, dtype=np.float32)[rng.randint(0, 4, 24)]
        for step in range(3):
            model.train_on_batch(x[step * 8:(step + 1) * 8], y[step * 8:(step + 1) * 8])
        file = f"{name}_{args.writer}.h5"
        model.save(os.path.join(args.out, file))
        weights_file = None
        if args.writer == "keras2":
            weights_file = f"{name}_{args.writer}_weights.h5"
            model.save_weights(os.path.join(args.out, weights_file))
        px = rng.uniform(-1, 1, (5,) + shape).astype(np.float32)
        entry = {"file": file, "input_shape": list(shape), "loss": loss,
                 "iterations": int(model.optimizer.iterations.numpy()),
                 "layers": [type(layer).__name__ for layer in model.layers if layer.weights],
                 "predict": {"x": [floats(r) for r in px],
                             "y": [floats(r) for r in model.predict(px, verbose=0)]}}
        if weights_file:
            entry["weights_file"] = weights_file
            if name == "sequential_sgd":
                entry["fixed_strings_file"] = fixed_strings_copy(args.out, weights_file)
        if continuation:
            cx = rng.uniform(-1, 1, (6,) + shape).astype(np.float32)
            cy = np.eye(4, dtype=np.float32)[rng.randint(0, 4, 6)]
            logs = model.train_on_batch(cx, cy, return_dict=True)
            entry["continuation"] = {
                "x": [floats(r) for r in cx], "y": [floats(r) for r in cy],
                "loss": float(logs["loss"]),
                "weights_after": [floats(w) for w in model.get_weights()],
                "iterations_after": int(model.optimizer.iterations.numpy())}
        expected["files"][f"{name}_{args.writer}"] = entry
    with open(path, "w") as f:
        json.dump(expected, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
