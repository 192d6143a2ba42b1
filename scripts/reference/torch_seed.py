#!/usr/bin/python3
"""PyTorch reference for tandem's seed model on Fashion-MNIST.

Model (Keras 2 defaults):
    Input(784) -> Dense(4096, relu) -> Dense(2048, relu) -> Dense(512, relu)
               -> Dense(64, relu) -> Dense(10, softmax)
    kernels glorot_uniform (xavier_uniform_), biases zero,
    RMSprop(lr=0.001, rho/alpha=0.9, eps=1e-7), categorical cross-entropy
    (log_softmax + nll, mean over the batch), batch 128.

Modes:
    accuracy --seed S --epochs 5 [--threads 1] [--json out.json]
        Train on Fashion-MNIST (inputs uint8/255, reshuffled every epoch with a
        seeded generator, last partial batch included).  Per epoch: train loss
        (batch-size-weighted mean of the per-batch losses seen during training,
        as Keras reports it), train accuracy (same batches), test loss and test
        accuracy (after the epoch), epoch seconds (training only).
    step --threads N --batch 128 --repeats R [--json out.json]
        Time forward+backward+RMSprop on one fixed random batch: 5 warm-up
        steps, then R repetitions of 10 steps; median and min ms/step and
        GFLOP/s (8.92 GFLOP per step at batch 128, scaled linearly with batch).
    summarize --inputs a.json b.json ... --out summary.json
        Combine `accuracy` JSON files (one per seed) into one summary with the
        median over seeds of the final test accuracy.

Run with Debian's /usr/bin/python3 (python3-torch, torch 1.13).  Debian's torch
calls sgemm through libblas.so.3 (with libopenblas0-pthread installed that is
OpenBLAS, whose pthread pool torch.set_num_threads does not control), so this
script also sets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS before importing torch
and calls openblas_set_num_threads when OpenBLAS is the loaded BLAS.

With --threads 2, torch's libgomp workers busy-wait after each elementwise
parallel region while OpenBLAS's own pthreads run the GEMMs, so the two pools
fight over the 2 cores; OMP_WAIT_POLICY=PASSIVE removes most of that (see
docs/reference/torch_step.json, "supplementary").  OPENBLAS_CORETYPE=SKYLAKEX
overrides OpenBLAS 0.3.21's runtime detection (Cooperlake on this AMD EPYC).
"""

import argparse
import ctypes
import gzip
import json
import os
import platform
import statistics
import struct
import sys
import time

DATA_DIR = "/usr/share/datasets/fashion-mnist"
LAYERS = [784, 4096, 2048, 512, 64, 10]
GFLOP_PER_STEP_128 = 8.92


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)

    a = sub.add_parser("accuracy", help="train on Fashion-MNIST")
    a.add_argument("--seed", type=int, required=True)
    a.add_argument("--epochs", type=int, default=5)
    a.add_argument("--batch", type=int, default=128)
    a.add_argument("--threads", type=int, default=1)
    a.add_argument("--data-dir", default=DATA_DIR)
    a.add_argument("--json", default=None)

    s = sub.add_parser("step", help="time the training step")
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--batch", type=int, default=128)
    s.add_argument("--repeats", type=int, default=5)
    s.add_argument("--steps-per-repeat", type=int, default=10)
    s.add_argument("--warmup", type=int, default=5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", default=None)

    m = sub.add_parser("summarize", help="combine accuracy JSON files")
    m.add_argument("--inputs", nargs="+", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--commands", nargs="*", default=[],
                   help="command lines to record in the summary")
    return p.parse_args()


ARGS = parse_args()

if ARGS.mode in ("accuracy", "step"):
    # Must happen before torch (and thus libgomp / OpenBLAS) is loaded.
    os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


# --------------------------------------------------------------------------
# Environment / BLAS reporting

def loaded_libs(substr):
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and substr in parts[-1] and parts[-1] not in out:
                    out.append(parts[-1])
    except OSError:
        pass
    return out


def openblas_handle():
    try:
        lib = ctypes.CDLL("libblas.so.3")
        lib.openblas_get_config.restype = ctypes.c_char_p
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib
    except (OSError, AttributeError):
        return None


def setup_threads(n):
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    lib = openblas_handle()
    if lib is not None:
        lib.openblas_set_num_threads(n)


def blas_info():
    info = {
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "python": sys.executable + " " + platform.python_version(),
        "torch_num_threads": torch.get_num_threads(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        "loaded_blas_libs": loaded_libs("blas") + loaded_libs("mkl"),
    }
    lib = openblas_handle()
    if lib is not None:
        info["openblas_config"] = lib.openblas_get_config().decode()
        info["openblas_corename"] = lib.openblas_get_corename().decode()
        info["openblas_num_threads"] = lib.openblas_get_num_threads()
    show = torch.__config__.show().splitlines()
    par = torch.__config__.parallel_info().splitlines()
    keys = ("BLAS", "LAPACK", "MKL", "CPU capability", "OpenMP")
    info["torch_config_show"] = [l.strip() for l in show if any(k in l for k in keys)]
    # Build settings is one long line; pull the BLAS-related fields out of it.
    for l in show:
        if "Build settings" in l:
            fields = [f.strip() for f in l.split(":", 1)[1].split(",")]
            info["torch_build_blas"] = [f for f in fields
                                        if any(k in f for k in ("BLAS", "LAPACK", "MKL", "OPENMP"))]
    info["torch_parallel_info"] = [l.strip() for l in par if l.strip()]
    return info


def print_blas_info(info):
    print("# torch %s, numpy %s, %s" % (info["torch_version"], info["numpy_version"], info["python"]))
    for l in info["torch_config_show"]:
        if not l.startswith("- Build settings"):
            print("# config:", l)
    print("# build:", ", ".join(info.get("torch_build_blas", [])))
    for l in info["torch_parallel_info"]:
        print("# parallel:", l)
    print("# loaded BLAS:", ", ".join(info["loaded_blas_libs"]) or "(none)")
    if "openblas_config" in info:
        print("# openblas: %s | core %s | threads %d" % (
            info["openblas_config"], info["openblas_corename"], info["openblas_num_threads"]))
    print("# OPENBLAS_CORETYPE=%s" % info["OPENBLAS_CORETYPE"])
    sys.stdout.flush()


# --------------------------------------------------------------------------
# Model

def build_model():
    layers = []
    for i in range(len(LAYERS) - 1):
        lin = nn.Linear(LAYERS[i], LAYERS[i + 1])
        nn.init.xavier_uniform_(lin.weight)   # glorot_uniform
        nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i < len(LAYERS) - 2:
            layers.append(nn.ReLU())
    # The final softmax is folded into the loss (log_softmax + nll).
    return nn.Sequential(*layers)


def make_optimizer(model):
    # Keras 2 RMSprop: lr=0.001, rho=0.9, epsilon=1e-7 (added after the sqrt,
    # as in torch), no momentum, not centered.
    return torch.optim.RMSprop(model.parameters(), lr=0.001, alpha=0.9, eps=1e-7,
                               momentum=0.0, centered=False, weight_decay=0.0)


def loss_fn(logits, y):
    return F.nll_loss(F.log_softmax(logits, dim=1), y, reduction="mean")


# --------------------------------------------------------------------------
# Data

def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    assert zero == 0 and dtype == 0x08, "expected unsigned byte IDX: " + path
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims)


def load_fashion_mnist(d):
    def x(name):
        a = read_idx(os.path.join(d, name))
        return torch.from_numpy(a.reshape(a.shape[0], -1).astype(np.float32) / 255.0)

    def y(name):
        return torch.from_numpy(read_idx(os.path.join(d, name)).astype(np.int64))

    return (x("train-images-idx3-ubyte.gz"), y("train-labels-idx1-ubyte.gz"),
            x("t10k-images-idx3-ubyte.gz"), y("t10k-labels-idx1-ubyte.gz"))


# --------------------------------------------------------------------------
# Modes

def evaluate(model, x, y, batch=1000):
    model.eval()
    tot_loss, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            xb, yb = x[i:i + batch], y[i:i + batch]
            logits = model(xb)
            tot_loss += loss_fn(logits, yb).item() * xb.shape[0]
            correct += (logits.argmax(1) == yb).sum().item()
    model.train()
    return tot_loss / x.shape[0], correct / x.shape[0]


def run_accuracy(a):
    setup_threads(a.threads)
    info = blas_info()
    print_blas_info(info)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)

    t0 = time.perf_counter()
    xtr, ytr, xte, yte = load_fashion_mnist(a.data_dir)
    print("# data: train %s, test %s, load %.1fs" % (tuple(xtr.shape), tuple(xte.shape),
                                                    time.perf_counter() - t0))

    model = build_model()
    opt = make_optimizer(model)
    shuffle_gen = torch.Generator().manual_seed(a.seed)
    n = xtr.shape[0]
    epochs = []
    print("epoch  train_loss  train_acc  test_loss  test_acc  epoch_s  eval_s")
    for ep in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        perm = torch.randperm(n, generator=shuffle_gen)
        loss_sum, correct = 0.0, 0
        for i in range(0, n, a.batch):           # last partial batch included
            idx = perm[i:i + a.batch]
            xb, yb = xtr[idx], ytr[idx]
            logits = model(xb)
            loss = loss_fn(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * xb.shape[0]
            correct += (logits.detach().argmax(1) == yb).sum().item()
        epoch_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        test_loss, test_acc = evaluate(model, xte, yte)
        eval_s = time.perf_counter() - t1
        rec = {"epoch": ep, "train_loss": loss_sum / n, "train_acc": correct / n,
               "test_loss": test_loss, "test_acc": test_acc,
               "epoch_s": epoch_s, "eval_s": eval_s}
        epochs.append(rec)
        print("%5d  %10.4f  %9.4f  %9.4f  %8.4f  %7.1f  %6.1f" % (
            ep, rec["train_loss"], rec["train_acc"], test_loss, test_acc, epoch_s, eval_s))
        sys.stdout.flush()

    if a.json:
        out = {"mode": "accuracy", "seed": a.seed, "epochs": a.epochs, "batch": a.batch,
               "threads": a.threads, "command": command_line(),
               "model": "784-4096r-2048r-512r-64r-10softmax, glorot_uniform, zero bias, "
                        "RMSprop(lr=1e-3, alpha=0.9, eps=1e-7), CCE mean, batch 128",
               "env": info, "per_epoch": epochs,
               "final_test_acc": epochs[-1]["test_acc"] if epochs else None}
        write_json(a.json, out)


def run_step(a):
    setup_threads(a.threads)
    info = blas_info()
    print_blas_info(info)
    torch.manual_seed(a.seed)
    model = build_model()
    opt = make_optimizer(model)
    x = torch.rand(a.batch, LAYERS[0])
    y = torch.randint(0, LAYERS[-1], (a.batch,))

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    per_rep_ms = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.steps_per_repeat):
            step()
        per_rep_ms.append((time.perf_counter() - t0) * 1000.0 / a.steps_per_repeat)
    gflop = GFLOP_PER_STEP_128 * a.batch / 128.0
    med, mn = statistics.median(per_rep_ms), min(per_rep_ms)
    res = {"mode": "step", "threads": a.threads, "batch": a.batch, "repeats": a.repeats,
           "steps_per_repeat": a.steps_per_repeat, "warmup_steps": a.warmup,
           "gflop_per_step": gflop, "ms_per_step_each_repeat": per_rep_ms,
           "median_ms": med, "min_ms": mn,
           "gflops_at_median": gflop / (med / 1000.0), "gflops_at_min": gflop / (mn / 1000.0),
           "command": command_line(),
           "env": info}
    print("threads %d batch %d: median %.2f ms/step (%.1f GFLOP/s), min %.2f ms/step "
          "(%.1f GFLOP/s); repeats %s" % (a.threads, a.batch, med, res["gflops_at_median"], mn,
                                          res["gflops_at_min"],
                                          ", ".join("%.2f" % v for v in per_rep_ms)))
    if a.json:
        write_json(a.json, res)


def run_summarize(a):
    runs = []
    for path in a.inputs:
        with open(path) as f:
            runs.append(json.load(f))
    runs.sort(key=lambda r: r["seed"])
    finals = [r["final_test_acc"] for r in runs]
    out = {
        "description": "PyTorch reference for the tandem seed model on Fashion-MNIST "
                       "(scripts/reference/torch_seed.py accuracy)",
        "model": runs[0]["model"],
        "epochs": runs[0]["epochs"], "batch": runs[0]["batch"], "threads": runs[0]["threads"],
        "seeds": [r["seed"] for r in runs],
        "per_seed_test_acc": {str(r["seed"]): [e["test_acc"] for e in r["per_epoch"]]
                              for r in runs},
        "final_test_acc": {str(r["seed"]): r["final_test_acc"] for r in runs},
        "median_final_test_acc": statistics.median(finals),
        "commands": [r["command"] for r in runs] + list(a.commands),
        "runs": runs,
    }
    write_json(a.out, out)
    print("median final test acc over seeds %s: %.4f" % (out["seeds"], out["median_final_test_acc"]))


# Environment variables that change BLAS / OpenMP behaviour; echoed in front of
# the recorded command line when set by the caller.
ENV_PREFIX_VARS = ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def command_line():
    env = ["%s=%s" % (k, os.environ[k]) for k in ENV_PREFIX_VARS if k in os.environ]
    return " ".join(env + [sys.executable] + sys.argv)


def write_json(path, obj):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    {"accuracy": run_accuracy, "step": run_step, "summarize": run_summarize}[ARGS.mode](ARGS)
