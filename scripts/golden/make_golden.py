#!/usr/bin/env python3
"""Generate golden reference training runs from real Keras for tandem's C++ tests.

Run with the golden virtualenv (see scripts/golden/README.md):

    /work/main/.venv-golden/bin/python scripts/golden/make_golden.py [--out DIR]

For every case it builds a small Keras MLP (Input(n_in) -> Dense...), compiles
it, records its seeded initial weights, then trains STEPS batches taken in order
without shuffling (step i uses rows [i*B, min((i+1)*B, N))).  Before each step
it records the batch loss (the compiled loss object applied to model(x_batch),
reduction "sum_over_batch_size"), then calls model.train_on_batch.  After the
last step it records every weight and model.predict(x[:8]).

Everything is float32; all randomness comes from fixed seeds, so re-running
with the same package versions reproduces the files byte for byte.
"""

import argparse
import inspect
import json
import os
import sys

# Must be set before TensorFlow is imported: plain (non-oneDNN) CPU kernels,
# no log noise.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("PYTHONHASHSEED", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

STEPS = 10
N_PREDICT = 8
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "golden", "data"))

MLP_CCE = [(5, "relu", True), (4, "tanh", True), (3, "softmax", True)]

# name: dict(layers, loss, optimizer (name, kwargs), batch_size, n, x_range, seed)
CASES = [
    dict(name="sgd_cce", layers=MLP_CCE, loss="categorical_crossentropy",
         opt=("sgd", dict(learning_rate=0.1))),
    dict(name="sgd_momentum_cce", layers=MLP_CCE, loss="categorical_crossentropy",
         opt=("sgd", dict(learning_rate=0.05, momentum=0.9))),
    dict(name="sgd_nesterov_cce", layers=MLP_CCE, loss="categorical_crossentropy",
         opt=("sgd", dict(learning_rate=0.05, momentum=0.9, nesterov=True))),
    dict(name="rmsprop_cce", layers=MLP_CCE, loss="categorical_crossentropy",
         opt=("rmsprop", dict())),
    dict(name="adam_cce", layers=MLP_CCE, loss="categorical_crossentropy",
         opt=("adam", dict())),
    dict(name="adam_sparse_cce", layers=MLP_CCE, loss="sparse_categorical_crossentropy",
         opt=("adam", dict(learning_rate=0.01))),
    dict(name="rmsprop_bce", layers=[(5, "sigmoid", True), (3, "sigmoid", True)],
         loss="binary_crossentropy", opt=("rmsprop", dict(learning_rate=0.01)),
         x_range=(0.0, 1.0)),
    dict(name="sgd_mse", layers=[(5, "relu", True), (4, "linear", True), (2, "linear", True)],
         loss="mean_squared_error", opt=("sgd", dict(learning_rate=0.05))),
    dict(name="adam_partial_batch_cce", layers=[(5, "relu", True), (3, "softmax", True)],
         loss="categorical_crossentropy", opt=("adam", dict(learning_rate=0.01)),
         batch_size=5, n=47),
    dict(name="sgd_nobias_cce", layers=[(5, "relu", False), (3, "softmax", True)],
         loss="categorical_crossentropy", opt=("sgd", dict(learning_rate=0.1))),
]

INPUT_DIM = 6

OPT_CLASSES = {
    "sgd": keras.optimizers.SGD,
    "rmsprop": keras.optimizers.RMSprop,
    "adam": keras.optimizers.Adam,
}
# Hyper-parameters reported per optimizer (Keras names), taken from get_config().
OPT_HPARAMS = {
    "sgd": ["learning_rate", "momentum", "nesterov"],
    "rmsprop": ["learning_rate", "rho", "momentum", "epsilon", "centered"],
    "adam": ["learning_rate", "beta_1", "beta_2", "epsilon", "amsgrad"],
}
LOSS_CLASSES = {
    "categorical_crossentropy": keras.losses.CategoricalCrossentropy,
    "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
    "binary_crossentropy": keras.losses.BinaryCrossentropy,
    "mean_squared_error": keras.losses.MeanSquaredError,
}


def f32(v):
    """A float32 value as a Python float (repr round-trips exactly to float32)."""
    return float(np.float32(v))


def make_data(case, rng):
    n = case["n"]
    lo, hi = case.get("x_range", (-1.0, 1.0))
    x = rng.uniform(lo, hi, size=(n, INPUT_DIM)).astype(np.float32)
    n_out = case["layers"][-1][0]
    loss = case["loss"]
    if loss == "categorical_crossentropy":
        labels = rng.integers(0, n_out, size=n)
        y = np.eye(n_out, dtype=np.float32)[labels]
    elif loss == "sparse_categorical_crossentropy":
        y = rng.integers(0, n_out, size=n).astype(np.int32)
    elif loss == "binary_crossentropy":
        y = rng.integers(0, 2, size=(n, n_out)).astype(np.float32)
    elif loss == "mean_squared_error":
        y = rng.uniform(-1.0, 1.0, size=(n, n_out)).astype(np.float32)
    else:
        raise ValueError(loss)
    return x, y


def build_model(case, seed):
    inp = keras.Input(shape=(INPUT_DIM,), dtype="float32")
    h = inp
    for i, (units, act, use_bias) in enumerate(case["layers"]):
        h = keras.layers.Dense(
            units,
            activation=act,
            use_bias=use_bias,
            dtype="float32",
            # Keras' default kernel init, seeded; a small random bias instead of
            # zeros so that the bias path is exercised from step 0.
            kernel_initializer=keras.initializers.GlorotUniform(seed=seed + 10 * i),
            bias_initializer=keras.initializers.RandomUniform(-0.1, 0.1, seed=seed + 10 * i + 1),
            name="dense" if i == 0 else f"dense_{i}",
        )(h)
    return keras.Model(inp, h, name=case["name"])


def weights_list(model):
    out = []
    for var, val in zip(model.weights, model.get_weights()):
        val = np.asarray(val, dtype=np.float32)
        out.append({
            "name": var.path,
            "shape": list(val.shape),
            "values": [f32(v) for v in val.reshape(-1)],
        })
    return out


def run_case(case, seed):
    case = dict(case)
    case.setdefault("batch_size", 4)
    case.setdefault("n", STEPS * case["batch_size"])
    bsz, n = case["batch_size"], case["n"]
    assert (n + bsz - 1) // bsz == STEPS, case["name"]

    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x, y = make_data(case, rng)

    model = build_model(case, seed)
    opt_name, opt_kwargs = case["opt"]
    optimizer = OPT_CLASSES[opt_name](**opt_kwargs)
    loss_fn = LOSS_CLASSES[case["loss"]]()  # default reduction: sum_over_batch_size
    model.compile(optimizer=optimizer, loss=loss_fn, jit_compile=False)

    initial_weights = weights_list(model)

    step_losses, tob_losses = [], []
    for i in range(STEPS):
        xb, yb = x[i * bsz:(i + 1) * bsz], y[i * bsz:(i + 1) * bsz]
        loss = loss_fn(yb, model(xb, training=False))
        step_losses.append(f32(keras.ops.convert_to_numpy(loss)))
        tob = model.train_on_batch(xb, yb)  # loss of this batch before the update
        tob_losses.append(f32(tob))

    # Consistency: the loss train_on_batch reports (computed in its tf.function
    # before applying gradients) must match the eager one we record.
    for a, b in zip(step_losses, tob_losses):
        assert abs(a - b) <= 1e-6 * max(1.0, abs(a)), (case["name"], step_losses, tob_losses)

    final_weights = weights_list(model)
    pred = model.predict(x[:N_PREDICT], verbose=0).astype(np.float32)

    cfg = optimizer.get_config()
    opt = {"name": opt_name}
    for k in OPT_HPARAMS[opt_name]:
        if k == "learning_rate":
            # Nominal value as given to Keras, or the class default (Keras keeps
            # it in a float32 variable, so get_config() shows the float32 value).
            default = inspect.signature(OPT_CLASSES[opt_name]).parameters[k].default
            v = opt_kwargs.get(k, default)
            assert np.float32(v) == np.float32(cfg[k]), (k, v, cfg[k])
        else:
            v = cfg[k]
        opt[k] = bool(v) if isinstance(v, bool) else float(v)

    if case["loss"] == "sparse_categorical_crossentropy":
        y_json = [int(v) for v in y]
    else:
        y_json = [[f32(v) for v in row] for row in y]

    return {
        "name": case["name"],
        "generator": "make_golden.py",
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "numpy_version": np.__version__,
        "seed": seed,
        "input_dim": INPUT_DIM,
        "layers": [{"units": u, "activation": a, "use_bias": b} for (u, a, b) in case["layers"]],
        "loss": case["loss"],
        "loss_reduction": "sum_over_batch_size",
        "optimizer": opt,
        "batch_size": bsz,
        "steps": STEPS,
        "n": n,
        "x": [[f32(v) for v in row] for row in x],
        "y": y_json,
        "initial_weights": initial_weights,
        "step_losses": step_losses,
        "final_weights": final_weights,
        "predict": [[f32(v) for v in row] for row in pred],
    }


def dumps(obj, indent=0):
    """JSON with flat lists/objects of scalars kept on one line (readable, small)."""
    pad, pad1 = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        if all(not isinstance(v, (list, dict)) for v in obj.values()):
            return "{" + ", ".join(f"{json.dumps(k)}: {dumps(v)}" for k, v in obj.items()) + "}"
        items = [f"{pad1}{json.dumps(k)}: {dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list):
        if all(not isinstance(v, (list, dict)) for v in obj):
            return "[" + ", ".join(dumps(v) for v in obj) + "]"
        return "[\n" + ",\n".join(pad1 + dumps(v, indent + 1) for v in obj) + "\n" + pad + "]"
    if isinstance(obj, float):
        if not np.isfinite(obj):
            raise ValueError("non-finite value in golden data")
        return repr(obj)
    return json.dumps(obj)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default: tests/golden/data)")
    ap.add_argument("--only", nargs="*", help="case names to generate (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for idx, case in enumerate(CASES):
        if args.only and case["name"] not in args.only:
            continue
        data = run_case(case, seed=1000 + 17 * idx)
        path = os.path.join(args.out, case["name"] + ".json")
        with open(path, "w") as fh:
            fh.write(dumps(data) + "\n")
        print(f"{path}: {os.path.getsize(path)} bytes, losses "
              f"{data['step_losses'][0]:.6f} -> {data['step_losses'][-1]:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
