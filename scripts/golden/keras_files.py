#!/usr/bin/env python3
"""Write reference Keras 3 `.keras` / `.weights.h5` files and their expected values.

    /work/main/.venv-peers/bin/python scripts/golden/keras_files.py [--out DIR]

For every case below the script builds a small Keras model, compiles it,
trains it for TRAIN_STEPS batches of TRAIN_BATCH rows (seeded data, in order,
no shuffling) so the optimizer has state, then writes

    DIR/NAME.keras        model.save(...)          (config + weights + optimizer)
    DIR/NAME.weights.h5   model.save_weights(...)  (layer weights + optimizer)

and collects into DIR/expected.json, per case:

  * "predict": model.predict(x) (inference mode) for a fixed 5-row input x,
    checked to be identical for the model re-loaded from NAME.keras;
  * "continuation": load NAME.keras with keras.saving.load_model, run ONE
    train_on_batch on a fixed batch (x, y given in the JSON) and record the
    loss it reports plus every weight and every optimizer variable after the
    step. Dropout layers are set to rate 0.0 on the loaded model before the
    step (see "dropout_disabled"), so the step involves no random numbers and
    a C++ implementation can reproduce it exactly;
  * "continuation_with_dropout": the same step with the Dropout layers left
    as saved (only for models that contain Dropout). Its result depends on
    Keras's dropout RNG stream and is recorded for information only;
  * "h5_datasets": every dataset in model.weights.h5 inside NAME.keras and
    in NAME.weights.h5 (path, shape, dtype), in HDF5 iteration order.

All numbers are float32 and written as repr(float(np.float32(v))), which
round-trips exactly to float32. Weight arrays are {"path", "shape", "values"}
with the values flattened row-major.

Determinism: keras.utils.set_random_seed + keras.backend.clear_session before
every model (so auto-generated layer names restart at "dense"), numpy
RandomState data, TF_ENABLE_ONEDNN_OPTS=0, one TensorFlow thread,
jit_compile=False. Re-running gives the same numbers and a byte-identical
expected.json, NAME.weights.h5 and model.weights.h5 member (checked with
keras 3.15.1, TensorFlow backend, h5py 3.14.0). The .keras archives still
differ byte-wise between runs: metadata.json holds the save date,
config.json holds "shared_object_id" values (Python id()s), and the
model.weights.h5 zip member carries the current time.

The numbers depend on the backend (seeded initializers draw differently under
torch); the committed files use the TensorFlow backend (the default here).

Flags: --legacy-h5 additionally writes NAME_legacy.h5 (Keras 2 style full-model
HDF5, via model.save("x.h5")) for each case; not part of the committed set.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "golden", "keras"))

TRAIN_STEPS = 3
TRAIN_BATCH = 8
N_PREDICT = 5
CONT_BATCH = 6
SEED = 1234


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Write reference Keras 3 .keras/.weights.h5 files and expected.json "
        "for tandem's Keras-format reader/writer tests.")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help="output directory (default: %(default)s)")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="only this case (repeatable); expected.json then holds only these")
    p.add_argument("--legacy-h5", action="store_true",
                   help="also write NAME_legacy.h5 (legacy Keras 2 style full-model HDF5)")
    return p.parse_args(argv)


def dump_json(obj, indent=0):
    """JSON with one key per line, but lists that hold no dicts on one line."""
    import json

    def flat(o):
        return not isinstance(o, dict) and (
            not isinstance(o, list) or all(flat(v) for v in o))

    pad, pad1 = " " * indent, " " * (indent + 1)
    if flat(obj):
        return json.dumps(obj, separators=(",", ":")) + ("\n" if indent == 0 else "")
    if isinstance(obj, dict):
        items = [f"{pad1}{json.dumps(k)}: {dump_json(v, indent + 1)}" for k, v in obj.items()]
        body = "{\n" + ",\n".join(items) + "\n" + pad + "}" if items else "{}"
    else:
        items = [pad1 + dump_json(v, indent + 1) for v in obj]
        body = "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return body + ("\n" if indent == 0 else "")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    # Must be set before TensorFlow is imported.
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

    import json
    import platform
    import zipfile

    import h5py
    import numpy as np
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf
        tf.get_logger().setLevel("ERROR")
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        backend_version = tf.__version__
    elif backend == "torch":
        import torch
        torch.set_num_threads(1)
        backend_version = torch.__version__
    else:
        backend_version = None

    L = keras.layers

    def f32(v):
        return float(np.float32(v))

    def nested(a):
        return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()

    def arr_entry(path, value):
        value = np.asarray(value)
        if value.dtype.kind in "iu":
            vals = [int(v) for v in value.reshape(-1)]
        else:
            vals = [f32(v) for v in value.reshape(-1)]
        return {"path": path, "shape": list(value.shape),
                "dtype": str(value.dtype), "values": vals}

    # ------------------------------------------------------------ models
    def sequential_mlp():
        return keras.Sequential([
            keras.Input((20,)),
            L.Dense(32, activation="relu"),
            L.Dropout(0.2),
            L.Dense(16, activation="tanh"),
            L.Dense(3, activation="softmax"),
        ])

    def functional_branches():
        inp = keras.Input((12,))
        a = L.Dense(16, activation="relu", name="a")(inp)
        b = L.Dense(16, activation="tanh", name="b")(inp)
        s = L.Add()([a, b])
        c = L.Concatenate()([s, L.Dense(8)(inp)])
        h = L.Dropout(0.1)(c)
        h = L.Activation("relu")(h)
        out = L.Dense(4, activation="softmax")(h)
        return keras.Model(inp, out)

    def flatten_input():
        inp = keras.Input((3, 4))
        h = L.Flatten()(inp)
        out = L.Dense(5, activation="sigmoid")(h)
        return keras.Model(inp, out)

    O = keras.optimizers
    # name: (builder, input shape, target kind, n_out, optimizer factory, loss, metrics)
    CASES = [
        ("sequential_mlp", sequential_mlp, (20,), "onehot", 3,
         lambda: O.SGD(learning_rate=0.05, momentum=0.9),
         "categorical_crossentropy", ["accuracy"]),
        ("functional_branches", functional_branches, (12,), "onehot", 4,
         lambda: O.SGD(learning_rate=0.05),
         "categorical_crossentropy", ["accuracy"]),
        ("functional_rmsprop", functional_branches, (12,), "onehot", 4,
         lambda: O.RMSprop(learning_rate=0.01),
         "categorical_crossentropy", ["accuracy"]),
        ("functional_adam", functional_branches, (12,), "onehot", 4,
         lambda: O.Adam(learning_rate=0.01),
         "categorical_crossentropy", ["accuracy"]),
        ("flatten_input", flatten_input, (3, 4), "multilabel", 5,
         lambda: O.SGD(learning_rate=0.1),
         "binary_crossentropy", None),
    ]
    names = [c[0] for c in CASES]
    if args.only:
        for n in args.only:
            if n not in names:
                sys.exit(f"unknown case {n!r}; known: {', '.join(names)}")

    def make_xy(rs, n, in_shape, kind, n_out):
        x = rs.uniform(-1.0, 1.0, size=(n,) + tuple(in_shape)).astype(np.float32)
        if kind == "onehot":
            y = np.eye(n_out, dtype=np.float32)[rs.randint(0, n_out, size=n)]
        else:
            y = rs.randint(0, 2, size=(n, n_out)).astype(np.float32)
        return x, y

    def weights_of(model):
        return [arr_entry(v.path, val) for v, val in zip(model.weights, model.get_weights())]

    def optimizer_vars_of(model):
        return [arr_entry(v.path, keras.ops.convert_to_numpy(v))
                for v in model.optimizer.variables]

    def h5_listing(h5file):
        out = []

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out.append({"path": name, "shape": list(obj.shape), "dtype": str(obj.dtype)})
        h5file.visititems(visit)
        return out

    def h5_of_keras(path):
        import io
        with zipfile.ZipFile(path) as zf:
            data = zf.read("model.weights.h5")
        with h5py.File(io.BytesIO(data), "r") as f:
            return h5_listing(f)

    def continuation(path, x, y, disable_dropout):
        keras.backend.clear_session()
        keras.utils.set_random_seed(SEED + 7)
        m = keras.saving.load_model(path)
        n_dropout = 0
        if disable_dropout:
            for layer in m.layers:
                if isinstance(layer, L.Dropout):
                    layer.rate = 0.0
                    n_dropout += 1
        iters_before = int(keras.ops.convert_to_numpy(m.optimizer.iterations))
        loss_pre = None
        if disable_dropout:
            # With no dropout the training forward pass equals the inference one,
            # so the loss train_on_batch reports must equal this.
            per_sample = keras.losses.get(m.loss)(y, m(x, training=False))
            loss_pre = f32(keras.ops.convert_to_numpy(keras.ops.mean(per_sample)))
        logs = m.train_on_batch(x, y, return_dict=True)
        loss = f32(logs["loss"])
        if loss_pre is not None:
            assert abs(loss - loss_pre) <= 1e-6 * max(1.0, abs(loss)), (path, loss, loss_pre)
        rec = {
            "dropout_disabled": bool(disable_dropout),
            "optimizer_iterations_before": iters_before,
            "loss": loss,
            "logs": {k: f32(v) for k, v in logs.items()},
            "weights_after": weights_of(m),
            "optimizer_variables_after": optimizer_vars_of(m),
            "predict_after": nested(m.predict(PRED_X_CACHE[path], verbose=0)),
        }
        return rec, n_dropout

    os.makedirs(args.out, exist_ok=True)
    PRED_X_CACHE = {}
    files = {}
    for idx, (name, build, in_shape, kind, n_out, make_opt, loss, metrics) in enumerate(CASES):
        if args.only and name not in args.only:
            continue
        print(f"[{name}]", flush=True)
        keras.backend.clear_session()
        keras.utils.set_random_seed(SEED)
        rs = np.random.RandomState(SEED + 100 * idx)
        train_x, train_y = make_xy(rs, TRAIN_STEPS * TRAIN_BATCH, in_shape, kind, n_out)
        pred_x, _ = make_xy(rs, N_PREDICT, in_shape, kind, n_out)
        cont_x, cont_y = make_xy(rs, CONT_BATCH, in_shape, kind, n_out)

        model = build()
        opt = make_opt()
        model.compile(optimizer=opt, loss=loss, metrics=metrics, jit_compile=False)
        train_losses = []
        for s in range(TRAIN_STEPS):
            xb = train_x[s * TRAIN_BATCH:(s + 1) * TRAIN_BATCH]
            yb = train_y[s * TRAIN_BATCH:(s + 1) * TRAIN_BATCH]
            logs = model.train_on_batch(xb, yb, return_dict=True)
            train_losses.append(f32(logs["loss"]))

        pred = model.predict(pred_x, verbose=0)
        saved_weights = weights_of(model)
        saved_opt = optimizer_vars_of(model)

        kpath = os.path.join(args.out, f"{name}.keras")
        wpath = os.path.join(args.out, f"{name}.weights.h5")
        model.save(kpath)
        model.save_weights(wpath)
        if args.legacy_h5:
            model.save(os.path.join(args.out, f"{name}_legacy.h5"))
        PRED_X_CACHE[kpath] = pred_x

        # The re-loaded model must predict exactly what the saved one did.
        keras.backend.clear_session()
        re = keras.saving.load_model(kpath)
        pred_re = re.predict(pred_x, verbose=0)
        assert np.array_equal(np.asarray(pred, np.float32), np.asarray(pred_re, np.float32)), name
        for a, b in zip(saved_weights, weights_of(re)):
            assert (a["shape"], a["values"]) == (b["shape"], b["values"]), (name, a["path"])
        for a, b in zip(saved_opt, optimizer_vars_of(re)):
            assert (a["shape"], a["values"]) == (b["shape"], b["values"]), (name, a["path"])

        cont, n_dropout = continuation(kpath, cont_x, cont_y, disable_dropout=True)
        with h5py.File(wpath, "r") as wf:
            weights_h5_listing = h5_listing(wf)
        entry = {
            "keras_file": os.path.basename(kpath),
            "weights_file": os.path.basename(wpath),
            "input_shape": list(in_shape),
            "optimizer": make_opt().get_config(),
            "loss": loss,
            "metrics": metrics,
            "train": {
                "steps": TRAIN_STEPS, "batch_size": TRAIN_BATCH,
                "data": "numpy RandomState(%d) uniform(-1,1) x; see make_xy" % (SEED + 100 * idx),
                "losses": train_losses,
            },
            "layers": [{"name": l.name, "class_name": l.__class__.__name__,
                        "n_weights": len(l.weights)} for l in model.layers],
            "saved_weights": [{"path": w["path"], "shape": w["shape"]} for w in saved_weights],
            "saved_optimizer_variables": [{"path": w["path"], "shape": w["shape"],
                                           "dtype": w["dtype"]} for w in saved_opt],
            "saved_optimizer_iterations": int(saved_opt[0]["values"][0]),
            "predict": {"x": nested(pred_x), "y": nested(pred)},
            "continuation": dict(cont, x=nested(cont_x), y=nested(cont_y),
                                 dropout_layers_set_to_rate_0=n_dropout),
            "h5_datasets": {"keras_model_weights_h5": h5_of_keras(kpath),
                            "weights_h5": weights_h5_listing},
        }
        if n_dropout:
            raw, _ = continuation(kpath, cont_x, cont_y, disable_dropout=False)
            raw.pop("predict_after")
            raw.pop("optimizer_variables_after")
            entry["continuation_with_dropout"] = dict(
                raw, note="Dropout active with Keras's seeded RNG (set_random_seed(%d) "
                "before load_model); not reproducible outside Keras" % (SEED + 7))
        files[name] = entry

    out = {
        "generator": "scripts/golden/keras_files.py",
        "keras_version": keras.__version__,
        "backend": backend,
        "backend_version": backend_version,
        "numpy_version": np.__version__,
        "h5py_version": h5py.__version__,
        "python_version": platform.python_version(),
        "seed": SEED,
        "float_format": "repr(float(np.float32(v))); weight values flattened row-major",
        "notes": [
            "predict.y = model.predict(predict.x) in inference mode, before saving; the model "
            "re-loaded from keras_file gives bit-identical output.",
            "continuation: keras.saving.load_model(keras_file), Dropout rate set to 0.0 "
            "(dropout_layers_set_to_rate_0 layers), then one train_on_batch(x, y). loss is the "
            "value train_on_batch reported (computed before the update); weights_after is "
            "model.get_weights() order (= trainable kernels/biases by layer); "
            "optimizer_variables_after is optimizer.variables order (= optimizer/vars/N).",
            "saved_weights / saved_optimizer_variables list what the files hold, in order.",
            "Variable 'path' strings come from Keras and are not stable: the model that was "
            "saved calls its first kernel 'sequential/dense/kernel', the re-loaded one "
            "'dense/kernel'. Match by position, not by path.",
            "train.losses: the 3 train_on_batch losses before saving (Dropout active).",
        ],
        "files": files,
    }
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        f.write(dump_json(out))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
