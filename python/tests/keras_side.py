"""The Keras half of test_keras_files.py, run in its own interpreter (.venv-keras: Keras 3
on JAX; tandem never shares a process with Keras). Commands, each reading DIR/data.npz and
writing into DIR:
  make KIND OPTIMIZER DIR   builds KIND (keras_models.py), compiles and trains it 4 steps,
                            saves DIR/keras.keras, then writes its predictions (predict.npy),
                            the weights after one more step on the first batch (next.npz)
                            and its optimizer's step count after it (iterations.npy)
  continue DIR              the same predictions and next step from DIR/tandem.keras, a file
                            tandem wrote
  losses DIR                for each of keras_models.LOSS_CASES: built, compiled with that
                            loss and metric, trained 4 steps and saved as DIR/keras_CASE.keras,
                            with evaluate()'s logs (DIR/keras_logs.json) and the weights after
                            one more step (DIR/keras_next_CASE.npz); a model compiled with a
                            loss tandem lacks as DIR/keras_huber.keras
  evaluate DIR              evaluate()'s logs of each DIR/tandem_CASE.keras (tandem_logs.json)
Data for losses and evaluate: keras_models.loss_data(numpy's default_rng(5)).
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_models  # noqa: E402


def after_next_step(model, data, out):
    np.save(os.path.join(out, "predict.npy"), model.predict(data["x"], verbose=0))
    batch = keras_models.BATCH
    model.train_on_batch(data["x"][:batch], data["y"][:batch])
    np.savez(os.path.join(out, "next.npz"), *model.get_weights())
    np.save(os.path.join(out, "iterations.npy"), np.asarray(int(model.optimizer.iterations)))


def logs_of(model, case, data):
    labels = keras_models.LOSS_CASES[case][3]
    logs = model.evaluate(data["x"], data[labels], batch_size=32, verbose=0, return_dict=True)
    return {k: float(v) for k, v in logs.items()}


def losses(out):
    data = keras_models.loss_data(np.random.default_rng(5))
    logs = {}
    for case, (_, _, _, labels) in keras_models.LOSS_CASES.items():
        keras.utils.set_random_seed(3)
        model = keras_models.build_for_loss(keras, case)
        keras_models.compile_and_fit_for_loss(keras, model, case, data)
        model.save(os.path.join(out, f"keras_{case}.keras"))
        logs[case] = logs_of(model, case, data)
        model.train_on_batch(data["x"][:keras_models.BATCH], data[labels][:keras_models.BATCH])
        np.savez(os.path.join(out, f"keras_next_{case}.npz"), *model.get_weights())
    with open(os.path.join(out, "keras_logs.json"), "w") as f:
        json.dump(logs, f)
    model = keras_models.build_for_loss(keras, "cce_accuracy")
    model.compile(optimizer="adam", loss="huber")
    model.save(os.path.join(out, "keras_huber.keras"))


def evaluate(out):
    data = keras_models.loss_data(np.random.default_rng(5))
    logs = {}
    for case in keras_models.LOSS_CASES:
        path = os.path.join(out, f"tandem_{case}.keras")
        if os.path.exists(path):
            logs[case] = logs_of(keras.models.load_model(path), case, data)
    with open(os.path.join(out, "tandem_logs.json"), "w") as f:
        json.dump(logs, f)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    out = args[-1]
    if command == "losses":
        return losses(out)
    if command == "evaluate":
        return evaluate(out)
    data = np.load(os.path.join(out, "data.npz"))
    if command == "make":
        kind, optimizer_name, _ = args
        keras.utils.set_random_seed(3)
        model = keras_models.build(keras, kind)
        keras_models.compile_and_fit(keras, model, optimizer_name, data)
        model.save(os.path.join(out, "keras.keras"))
        if kind != "unsupported":
            after_next_step(model, data, out)
    elif command == "continue":
        after_next_step(keras.models.load_model(os.path.join(out, "tandem.keras")), data, out)
    else:
        raise SystemExit(f"keras_side.py: unknown command {command}")


if __name__ == "__main__":
    main()
