"""Whole programs, run as a user runs them: the report's program with its imports changed
(1 and 2 devices), Keras 3's mnist_mlp example, the convnet examples (MiniGoogLeNet and a
small ResNet, 1 device then 2), and a program across 2 MPI ranks."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import require_fashion_mnist, require_mpirun

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(args, cwd, timeout=900):
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_report_program_one_and_two_devices(tmp_path):
    require_fashion_mnist()
    for gpus in ("1", "2"):
        out = run([sys.executable, str(EXAMPLES / "report_program.py"), gpus, "1"], tmp_path)
        assert "Total params: 12,688,586" in out or "Total params: 12688586" in out
        assert re.search(r"^fit: \d+\.\d+", out, re.M), out
        assert re.search(r"^predict: \d+\.\d+", out, re.M), out
        loss = float(re.findall(r"loss: ([0-9.]+|nan)", out)[-1])
        assert np.isfinite(loss)


def test_keras_mnist_mlp_example(tmp_path):
    require_fashion_mnist()
    out = run([sys.executable, str(EXAMPLES / "mnist_mlp.py"), "1"], tmp_path)
    accuracy = float(re.search(r"Test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy > 0.75, out
    assert (tmp_path / "mnist_mlp.tandem").exists()


def test_convnet_examples_one_then_two_devices(tmp_path):
    out = run([sys.executable, str(EXAMPLES / "minigooglenet.py"), "2", "128"], tmp_path)
    assert "Total params: 1,656,250" in out, out
    assert re.search(r"^speedup with 2 devices: \d+\.\d+x", out, re.M), out
    out = run([sys.executable, str(EXAMPLES / "small_resnet.py"), "2", "256", "1"], tmp_path)
    assert "Non-trainable params:" in out, out
    losses = [float(v) for v in re.findall(r"loss: ([0-9.]+|nan)", out)]
    assert len(losses) == 2 and all(np.isfinite(losses)), out


MPI_PROGRAM = """
import sys
import numpy as np
import tandem
import tandem.keras as keras
keras.utils.set_random_seed(4)
rng = np.random.default_rng(1)
x = rng.standard_normal((256, 12)).astype("float32")
y = keras.utils.to_categorical((x[:, 0] > 0).astype("uint8"), 2)
model = keras.Sequential([keras.Input(shape=(12,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dropout(0.2), keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
model.summary()
model.fit(x, y, batch_size=32, epochs=2, verbose=2, seed=3, deterministic=True)
if tandem.rank() == 0:
    np.savez(sys.argv[1], *model.get_weights())
    print("ranks", tandem.num_ranks())
"""


def test_mpi_two_ranks_match_one_process(tmp_path):
    require_mpirun()
    program = tmp_path / "prog.py"
    program.write_text(MPI_PROGRAM)
    run([sys.executable, str(program), str(tmp_path / "one.npz")], tmp_path)
    env = dict(os.environ)
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          sys.executable, str(program), str(tmp_path / "two.npz")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "ranks 2" in out.stdout
    assert out.stdout.count("Total params") == 1  # rank 0 alone prints
    one, two = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    for key in one.files:
        np.testing.assert_array_equal(one[key], two[key])  # deterministic: bitwise


HUNG_RANK_PROGRAM = """
import os, time
import numpy as np
import tandem
import tandem.keras as keras
tandem.set_comm_timeout(2)
x = np.zeros((64, 4), "float32")
y = keras.utils.to_categorical(np.zeros(64, "uint8"), 2)
model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="sgd", loss="categorical_crossentropy")
if tandem.rank() == 1:
    time.sleep(20)  # a rank that hangs
try:
    model.fit(x, y, epochs=1, verbose=0)
except tandem.CommError as e:
    assert isinstance(e, RuntimeError)
    print("caught CommError:", e, flush=True)
    os._exit(3)
"""


def test_mpi_hung_rank_is_a_comm_error(tmp_path):
    require_mpirun()
    program = tmp_path / "hung.py"
    program.write_text(HUNG_RANK_PROGRAM)
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          sys.executable, str(program)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "caught CommError:" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    assert "rank 0" in out.stdout


FILES_PROGRAM = """
import sys
import numpy as np
import tandem.keras as keras
x = np.random.default_rng(0).standard_normal((128, 6)).astype("float32")
y = keras.utils.to_categorical((x[:, 0] > 0).astype("uint8"), 2)
model = keras.Sequential([keras.Input(shape=(6,)), keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer="sgd", loss="categorical_crossentropy")
model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[
    keras.callbacks.CSVLogger(sys.argv[1] + "/log.csv", append=True),
    keras.callbacks.ModelCheckpoint(sys.argv[1] + "/ck-{epoch}.tandem")])
"""


def test_mpi_callback_files_are_written_once(tmp_path):
    require_mpirun()
    program = tmp_path / "files.py"
    program.write_text(FILES_PROGRAM)
    out = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          sys.executable, str(program), str(tmp_path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    # append=True: a second writer would have doubled the rows.
    rows = (tmp_path / "log.csv").read_text().splitlines()
    assert rows[0].startswith("epoch") and [r.split(",")[0] for r in rows[1:]] == ["0", "1", "2"]
    from tandem.keras.models import load_model
    for epoch in (1, 2, 3):
        load_model(tmp_path / f"ck-{epoch}.tandem")  # complete, readable
    assert not list(tmp_path.glob("*.tmp*"))
