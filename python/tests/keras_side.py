"""The Keras half of test_keras_files.py, run in its own interpreter (.venv-keras: Keras 3
on JAX; tandem never shares a process with Keras). Commands, each reading DIR/data.npz and
writing into DIR:
  make KIND OPTIMIZER DIR   builds KIND (keras_models.py), compiles and trains it 4 steps,
                            saves DIR/keras.keras, then writes its predictions (predict.npy),
                            the weights after one more step on the first batch (next.npz)
                            and its optimizer's step count after it (iterations.npy)
  continue DIR              the same predictions and next step from DIR/tandem.keras, a file
                            tandem wrote
"""
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


def main():
    command, args = sys.argv[1], sys.argv[2:]
    out = args[-1]
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
