#!/usr/bin/env python3
"""The seed training step through Python: tandem.keras against Keras 3 on TensorFlow and
PyTorch, at 1 and 2 threads, ms/step, interleaved rounds, median.

    bench/python_vs_peers.py [--rounds 5] [--threads 1,2] [--steps 20] [--epochs 3]
                             [--json out.json] [--python .venv/bin/python]
                             [--peers-python .venv-peers/bin/python]

The seed model (784 -> 4096 -> 2048 -> 512 -> 64 relu -> 10 softmax, 12.7 M parameters),
RMSprop (lr 0.001, rho/alpha 0.9, eps 1e-7), categorical cross-entropy, batch 128, on a fixed
random float32 array of --steps batches. Every measurement is a fresh interpreter (thread
settings are made before the framework is imported): one warm-up epoch over the array,
then --epochs timed epochs, each timed from its start to its end (Keras: on_epoch_begin /
on_epoch_end callbacks; PyTorch: the loop), ms/step = epoch time / steps, the median of the
epochs. Each round runs every configuration once, in turn; the table gives the median
over rounds, the min-max over rounds, and the best configuration of each framework.

Configurations (tandem with .venv's python, the peers with --peers-python):
  tandem fit          model.fit over the array, tandem.set_num_threads(n); also
                      model.train_on_batch over the same batches (same process, after fit)
  keras-tf jit=off/on Keras 3, TensorFlow backend, TF_ENABLE_ONEDNN_OPTS=1 (oneDNN is off on
                      AMD CPUs otherwise), intra-op threads n, inter-op threads 1, model.fit
                      with compile(jit_compile=False/True); Keras's default "auto" is XLA on
  torch               torch.set_num_threads(n), set_num_interop_threads(1), a plain loop
                      (zero_grad, forward, CrossEntropyLoss on the logits, backward, step)
  torch PASSIVE       the same, OMP_WAIT_POLICY=PASSIVE (2 threads only)
The machine is shared: before each measurement the script waits (up to --quiet-wait s)
for other processes to use at most --max-other-load of it; a worker measures what they used
during its timed epochs, and a measurement above the threshold is taken again (--retries).
Each worker checks that its loss is finite and that the loss after training is below
the loss before, and fails otherwise. Keras and tandem compute the accuracy metric per
step as well (compile(metrics=["accuracy"])); the PyTorch loop computes only the loss.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from pybench_host import (WORKER_HELPERS, add_measurement_options, cpu_name, positive, positive_list,
                          wait_for_quiet, write_json_atomically)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Common to every worker: argv[1] is a JSON object of options; the last stdout line is
# "RESULT {json}" with the per-epoch ms/step of the timed epochs.
PRELUDE = WORKER_HELPERS + r"""
opts = json.loads(sys.argv[1])
STEPS, BATCH, EPOCHS, THREADS = opts["steps"], 128, opts["epochs"], opts["threads"]
WIDTHS = (4096, 2048, 512, 64)

def data():
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.random((STEPS * BATCH, 784), dtype=np.float32)     # (steps*128, 784)
    labels = rng.integers(0, 10, STEPS * BATCH)
    y = np.zeros((STEPS * BATCH, 10), np.float32)              # (steps*128, 10) one-hot
    y[np.arange(len(labels)), labels] = 1
    return x, y, labels
"""

TANDEM = PRELUDE + r"""
import tandem
tandem.set_num_threads(THREADS)
import tandem.keras as keras
x, y, _ = data()
tandem.set_random_seed(1)
inputs = keras.Input(shape=(784,))
h = inputs
for w in WIDTHS:
    h = keras.layers.Dense(w, activation="relu")(h)
model = keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(h))
model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
timer = keras_timer(keras.callbacks.Callback)
hist = model.fit(x, y, batch_size=BATCH, epochs=1 + EPOCHS, shuffle=False, verbose=0,
                 callbacks=[timer])
fit_window = window(timer.timed_from, snapshot(), EPOCHS * STEPS)
losses = hist.history["loss"]
check(losses[0], losses[-1], "tandem fit")
# train_on_batch over the same batches: one warm-up pass, then EPOCHS timed passes.
tob = []
for e in range(1 + EPOCHS):
    if e == 1:
        tob_from = snapshot()
    start = time.perf_counter()
    for i in range(STEPS):
        loss = model.train_on_batch(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
    if e:
        tob.append((time.perf_counter() - start) / STEPS * 1e3)
loss = loss[0] if isinstance(loss, (list, tuple)) else loss
if not math.isfinite(loss):
    raise SystemExit(f"tandem train_on_batch: loss {loss}")
tob_window = window(tob_from, snapshot(), EPOCHS * STEPS)
report(timer.seconds[1:], losses[0], losses[-1], **fit_window, train_on_batch_ms_per_step=tob,
       train_on_batch_other_share=tob_window["other_share"],
       train_on_batch_cpu_ms_per_step=tob_window["cpu_ms_per_step"])
"""

KERAS_TF = PRELUDE + r"""
import os
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(THREADS)
tf.config.threading.set_inter_op_parallelism_threads(opts["inter_op"])
import keras
x, y, _ = data()
keras.utils.set_random_seed(1)
model = keras.Sequential([keras.Input(shape=(784,))] +
                         [keras.layers.Dense(w, activation="relu") for w in WIDTHS] +
                         [keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer=keras.optimizers.RMSprop(), loss="categorical_crossentropy",
              metrics=["accuracy"], jit_compile=opts["jit"])
timer = keras_timer(keras.callbacks.Callback)
hist = model.fit(x, y, batch_size=BATCH, epochs=1 + EPOCHS, shuffle=False, verbose=0,
                 callbacks=[timer])
losses = hist.history["loss"]
check(losses[0], losses[-1], "keras-tf fit")
onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
report(timer.seconds[1:], losses[0], losses[-1],
       **window(timer.timed_from, snapshot(), EPOCHS * STEPS), versions={"tensorflow": tf.__version__,
       "keras": keras.__version__}, tf_enable_onednn_opts=onednn,
       jit_compile=model.jit_compile)
"""

TORCH = PRELUDE + r"""
import torch
torch.set_num_threads(THREADS)
torch.set_num_interop_threads(1)
x, _, labels = data()
torch.manual_seed(1)
layers, width = [], 784
for w in WIDTHS:
    layers += [torch.nn.Linear(width, w), torch.nn.ReLU()]
    width = w
model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))  # softmax inside the loss
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.9, eps=1e-7)
loss_fn = torch.nn.CrossEntropyLoss()
xs = torch.from_numpy(x)
ys = torch.from_numpy(labels)
seconds, epoch_losses = [], []
for e in range(1 + EPOCHS):
    if e == 1:
        timed_from = snapshot()
    start = time.perf_counter()
    total = 0.0
    for i in range(STEPS):
        xb, yb = xs[i * BATCH:(i + 1) * BATCH], ys[i * BATCH:(i + 1) * BATCH]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item()
    seconds.append(time.perf_counter() - start)
    epoch_losses.append(total / STEPS)
check(epoch_losses[0], epoch_losses[-1], "torch loop")
report(seconds[1:], epoch_losses[0], epoch_losses[-1],
       **window(timed_from, snapshot(), EPOCHS * STEPS), versions={"torch": torch.__version__}, mkl=torch.backends.mkl.is_available(),
       mkldnn=torch.backends.mkldnn.is_available())
"""


def configs(threads):
    """(name, framework, threads, worker, options, extra environment)."""
    out = []
    for n in threads:
        out.append((f"tandem fit, {n} thread(s)", "tandem", n, TANDEM, {}, {}))
        for jit in (False, True):
            out.append((f"keras-tf jit={'on' if jit else 'off'}, {n} thread(s)", "keras-tf", n,
                        KERAS_TF, {"jit": jit, "inter_op": 1},
                        {"TF_ENABLE_ONEDNN_OPTS": "1", "KERAS_BACKEND": "tensorflow",
                         "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}))
        out.append((f"torch, {n} thread(s)", "torch", n, TORCH, {}, {}))
        if n > 1:
            out.append((f"torch PASSIVE, {n} thread(s)", "torch", n, TORCH, {},
                        {"OMP_WAIT_POLICY": "PASSIVE"}))
    return out


class BenchError(RuntimeError):
    pass


def run_worker(python, source, opts, env_extra, what):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "TF_ENABLE_ONEDNN_OPTS"):
        env.pop(k, None)
    env.update(env_extra)
    p = subprocess.run([python, "-c", source, json.dumps(opts)], capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        raise BenchError(f"{what}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if not lines:
        raise BenchError(f"{what}: no RESULT line\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=positive, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--threads", type=positive_list, default=[1, 2], help="default 1,2")
    p.add_argument("--steps", type=positive, default=20, help="batches per epoch (default 20)")
    p.add_argument("--epochs", type=positive, default=3,
                   help="timed epochs per measurement, after one warm-up epoch (default 3)")
    p.add_argument("--only", default=None,
                   help="run only the configurations whose name contains this text")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    add_measurement_options(p, ROOT, time_budget=30, quiet_window=5)
    return p.parse_args(argv)  # unknown flags: usage and exit status 2


def main(argv=None):
    a = parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    todo = [c for c in configs(a.threads) if a.only is None or a.only in c[0]]
    print(f"{started}; CPU: {cpu_name()}, {os.cpu_count()} cores; {len(todo)} configurations "
          f"x {a.rounds} rounds", flush=True)
    samples = {c[0]: [] for c in todo}  # per round: ms, cpu_ms, noisy
    tob = {c[0]: [] for c in todo if c[1] == "tandem"}
    info = {}
    noisy_runs = 0
    deadline = time.monotonic() + a.time_budget * 60
    rounds_run = 0
    for r in range(a.rounds):
        if r >= 3 and time.monotonic() > deadline:
            print(f"time budget of {a.time_budget} min spent: {r} rounds, not {a.rounds}")
            break
        rounds_run = r + 1
        for name, framework, n, source, opts, env in todo:
            python = a.python if framework == "tandem" else a.peers_python
            attempts = []
            while True:  # a measurement that others disturbed is taken again
                wait = min(a.quiet_wait, max(0.0, deadline - time.monotonic()))
                before = wait_for_quiet(a.max_other_load, wait, a.quiet_window)
                res = run_worker(python, source, {"steps": a.steps, "epochs": a.epochs,
                                                  "threads": n, **opts}, env,
                                 f"{name} round {r + 1}")
                res["other_share_before"] = before
                res["noisy"] = res["other_share"] > a.max_other_load
                attempts.append(res)
                if (not res["noisy"] or len(attempts) > a.retries
                        or time.monotonic() > deadline):
                    break
                print(f"round {r + 1}/{a.rounds} {name}: others used "
                      f"{res['other_share']:.1%} of the machine, again", flush=True)
            ms = statistics.median(res["ms_per_step"])
            keep = {"ms": ms, "cpu_ms": res["cpu_ms_per_step"], "noisy": res["noisy"]}
            samples[name].append(keep)
            if name in tob:
                tob[name].append({"ms": statistics.median(res["train_on_batch_ms_per_step"]),
                                  "cpu_ms": res["train_on_batch_cpu_ms_per_step"],
                                  "noisy": res["train_on_batch_other_share"] > a.max_other_load})
            info.setdefault(name, {"framework": framework, "threads": n, "options": opts,
                                   "environment": env, "runs": []})
            info[name]["runs"].append({"round": r + 1, **res, "discarded_attempts": attempts[:-1]})
            noisy_runs += res["noisy"]
            print(f"round {r + 1}/{a.rounds} {name}: {ms:.2f} ms/step, cpu "
                  f"{res['cpu_ms_per_step']:.2f} ms/step (loss {res['first_loss']:.4f} -> "
                  f"{res['last_loss']:.4f}, others {res['other_share']:.1%})"
                  f"{'  NOISY' if res['noisy'] else ''}", flush=True)

    def stats(runs):
        ms = [x["ms"] for x in runs]
        quiet = [x["ms"] for x in runs if not x["noisy"]]
        return {"ms_per_step_median": statistics.median(ms), "ms_per_step_min": min(ms),
                "ms_per_step_max": max(ms), "ms_per_step_rounds": ms,
                "quiet_rounds": len(quiet),
                "quiet_ms_per_step_median": statistics.median(quiet) if quiet else None,
                "cpu_ms_per_step_median": statistics.median(x["cpu_ms"] for x in runs),
                "cpu_ms_per_step_rounds": [x["cpu_ms"] for x in runs]}

    table = {k: stats(v) for k, v in samples.items()}
    table.update({k.replace("fit", "train_on_batch"): stats(v) for k, v in tob.items()})
    med = {k: v["ms_per_step_median"] for k, v in table.items()}
    print(f"\nseed step, batch 128, RMSprop, {a.steps} batches of random float32 data; median "
          f"of {rounds_run} interleaved rounds (each the median of {a.epochs} timed epochs); "
          f"quiet: rounds where others used <= {a.max_other_load:.0%} of the machine; cpu: "
          f"the process's CPU time (all threads) per step")
    print(f"CPU: {cpu_name()}")
    rows = []
    for n in a.threads:
        base = med.get(f"tandem fit, {n} thread(s)")
        print(f"\n{n} thread(s)                         ms/step  min-max          vs tandem"
              f"  quiet  quiet ms  cpu ms")
        for k in [k for k in table if k.endswith(f", {n} thread(s)")]:
            t = table[k]
            ratio = t["ms_per_step_median"] / base if base else None
            qm = t["quiet_ms_per_step_median"]
            print(f"  {k:34s} {t['ms_per_step_median']:7.2f}  {t['ms_per_step_min']:7.2f}-"
                  f"{t['ms_per_step_max']:<7.2f}  {'' if ratio is None else f'{ratio:.2f}x':>8s}"
                  f"  {t['quiet_rounds']:>2d}/{len(t['ms_per_step_rounds'])}"
                  f"  {'' if qm is None else f'{qm:8.2f}':>8s}  {t['cpu_ms_per_step_median']:6.1f}")
            rows.append({"config": k, "threads": n, **t, "vs_tandem": ratio})
    best = {}
    for n in a.threads:
        for fw in ("tandem", "keras-tf", "torch"):
            cands = [(med[k], k) for k in samples if info[k]["framework"] == fw
                     and info[k]["threads"] == n]
            if cands:
                best[f"{fw}, {n} thread(s)"] = {"ms_per_step": min(cands)[0],
                                                 "config": min(cands)[1]}
    print("\nbest of each framework (ratio = its ms/step / tandem fit's; > 1: tandem ahead)")
    for n in a.threads:
        t = best.get(f"tandem, {n} thread(s)")
        for fw in ("keras-tf", "torch"):
            b = best.get(f"{fw}, {n} thread(s)")
            if t and b:
                b["vs_tandem"] = b["ms_per_step"] / t["ms_per_step"]
                print(f"  {n} thread(s): {b['config']:34s} {b['ms_per_step']:8.2f} ms/step, "
                      f"{b['vs_tandem']:.2f}x tandem's {t['ms_per_step']:.2f}")
    if a.json:
        write_json_atomically(a.json, {
            "benchmark": "python_vs_peers", "command": " ".join(sys.argv), "started": started,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpu": cpu_name(),
            "cores": os.cpu_count(), "rounds": rounds_run, "rounds_asked": a.rounds,
            "time_budget_min": a.time_budget, "steps": a.steps,
            "timed_epochs": a.epochs, "batch_size": 128, "max_other_load": a.max_other_load,
            "noisy_measurements_kept": noisy_runs, "python": a.python,
            "peers_python": a.peers_python, "table": rows, "best": best, "configs": info})


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"python_vs_peers: {e}", file=sys.stderr)
        sys.exit(1)
