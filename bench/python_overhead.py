#!/usr/bin/env python3
"""What the Python front end adds to a seed run: model.fit through tandem.keras against the
same fit through the CLI (`tandem train`), same seed, same devices, interleaved.

    bench/python_overhead.py [--epochs 1] [--repeats 5] [--devices 1,2] [--json out.json]
                             [--cli build/tandem] [--python .venv/bin/python]

The seed model (784 -> 4096 -> 2048 -> 512 -> 64 relu -> 10 softmax, RMSprop,
categorical_crossentropy, accuracy), batch 128, on Fashion-MNIST's 60 000 training images.
Python: images from tandem.keras.datasets.fashion_mnist.load_data() scaled /255 as float32,
model.fit timed with time.perf_counter, one fresh interpreter per run. CLI: `tandem train
... --verbose 2`, its printed `fit: X s` (also only the fit). Both print one line per epoch.

First a verification: both train 10 steps (--limit-train 1280 / x[:1280]) per device count;
the run fails unless both losses are finite and agree (the CLI scales bytes by 1/255 in
float32, numpy divides by 255, so the inputs differ in the last bit). Then rounds; each runs,
per device count, a Python fit and a CLI fit (a pair), alternating which goes first (P C,
then C P) so that neither always runs on a machine just left by the other. The machine is
shared: before each run the script waits (up to --quiet-wait s) until other processes use
at most --max-other-load of it, and measures what they used during the run; a pair with a
noisy run does not count, and rounds go on until every device count has --repeats quiet
pairs or --max-rounds rounds have run. Every timed run must report a finite loss.
Reported, over the quiet pairs: median fit seconds of each, the ratio of the medians, and
the median and min-max of the per-pair ratios python / cli (all pairs are in the JSON).
"""
import argparse
import json
import math
import os
import pty
import re
import statistics
import subprocess
import sys
import tempfile
import time

from pybench_host import (OtherLoad, cpu_name, positive, positive_list, wait_for_quiet,
                          write_json_atomically)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs in a fresh interpreter: argv[1] is a JSON object of options; the last stdout line is
# "RESULT {json}". Only model.fit is timed.
WORKER = r"""
import json, sys, time
opts = json.loads(sys.argv[1])
import numpy as np
import tandem
import tandem.keras as keras
if opts["threads"]:
    tandem.set_num_threads(opts["threads"])

(x, y), _ = keras.datasets.fashion_mnist.load_data()
if opts["limit_train"]:
    x, y = x[:opts["limit_train"]], y[:opts["limit_train"]]
x = x.reshape(-1, 784).astype("float32") / 255  # (60000, 784)
y = keras.utils.to_categorical(y, 10)           # (60000, 10)
tandem.set_random_seed(opts["seed"])
inputs = keras.Input(shape=(784,))
h = inputs
for width in (4096, 2048, 512, 64):
    h = keras.layers.Dense(width, activation="relu")(h)
model = keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(h))
model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
print("FIT_START", flush=True)  # the parent reads this process's CPU time here and at RESULT
start = time.perf_counter()
history = model.fit(x, y, batch_size=128, epochs=opts["epochs"], verbose=opts["verbose"],
                    devices=opts["devices"], seed=opts["seed"])
seconds = time.perf_counter() - start
sys.stdout.flush()
print("RESULT " + json.dumps({"fit_s": seconds, "loss": history.history["loss"],
                              "accuracy": history.history["accuracy"]}))
"""

FIT_LINE = re.compile(r"^fit: ([0-9.]+) s", re.MULTILINE)


class BenchError(RuntimeError):
    pass


def process_cpu_seconds(pid):
    """CPU time (user + system, all threads) process pid has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(cmd, what, start_marker, end_marker):
    """Runs cmd with its output on a pseudo-terminal (so that it arrives line by line) and
    returns (output, cpu_s): cpu_s is the CPU time the process used between the first line
    that starts with start_marker and the next that starts with end_marker (None if either
    is missing). Under load the wall time of a multi-threaded fit swells far more than its
    CPU time, so cpu_s is a second, steadier view of the same work."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    lines, pending, marks = [], b"", {}
    try:
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace").rstrip("\r")
                lines.append(line)
                key = "start" if "start" not in marks else "end" if "end" not in marks else None
                marker = start_marker if key == "start" else end_marker
                if key and line.startswith(marker):
                    try:
                        marks[key] = process_cpu_seconds(p.pid)
                    except OSError:
                        pass
    finally:
        rc = p.wait()
        os.close(master)
    out = "\n".join(lines + [pending.decode(errors="replace")])
    if rc != 0:
        raise BenchError(f"{what}: exit {rc}: {' '.join(cmd[:3])} ...\n{out[-3000:]}")
    cpu = marks["end"] - marks["start"] if len(marks) == 2 else None
    return out, cpu


def python_fit(a, devices, epochs, limit_train=0):
    opts = {"devices": devices, "epochs": epochs, "seed": a.seed, "verbose": a.verbose,
            "limit_train": limit_train, "threads": a.threads}
    out, cpu = run([a.python, "-c", WORKER, json.dumps(opts)], f"python fit ({devices} devices)",
                   "FIT_START", "RESULT ")
    lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
    if not lines:
        raise BenchError(f"python fit ({devices} devices): no RESULT line in\n{out[-2000:]}")
    r = json.loads(lines[-1][len("RESULT "):])
    return {"fit_s": r["fit_s"], "fit_cpu_s": cpu, "loss": r["loss"][-1],
            "accuracy": r["accuracy"][-1]}


def cli_fit(a, devices, epochs, limit_train=0):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "metrics.json")
        cmd = [a.cli, "train", "--dataset", "fashion-mnist", "--epochs", str(epochs),
               "--batch-size", "128", "--seed", str(a.seed), "--verbose", str(a.verbose),
               "--devices", str(devices), "--limit-test", str(a.limit_test),
               "--metrics-json", metrics]
        if limit_train:
            cmd += ["--limit-train", str(limit_train)]
        if a.threads:
            cmd += ["--threads", str(a.threads)]
        # With --verbose 2 the CLI prints the model summary right before model.fit.
        out, cpu = run(cmd, f"cli fit ({devices} devices)", "Non-trainable params", "fit: ")
        m = FIT_LINE.search(out)
        if not m:
            raise BenchError(f"cli fit ({devices} devices): no 'fit: X s' line in\n{out[-2000:]}")
        with open(metrics) as f:
            last = json.load(f)["epochs"][-1]
    return {"fit_s": float(m.group(1)), "fit_cpu_s": cpu, "loss": last["loss"],
            "accuracy": last["accuracy"]}


def check_finite(r, what):
    if not math.isfinite(r["loss"]):
        raise BenchError(f"{what}: loss is {r['loss']} (not finite): it did not train")


def verify(a):
    """Both front ends train the same model: finite and equal losses after 10 steps."""
    out = []
    for d in a.devices:
        p, c = python_fit(a, d, 1, 1280), cli_fit(a, d, 1, 1280)
        check_finite(p, f"verify python {d} devices")
        check_finite(c, f"verify cli {d} devices")
        rel = abs(p["loss"] - c["loss"]) / abs(c["loss"])
        print(f"verify {d} device(s), 10 steps: loss python {p['loss']:.6f} cli {c['loss']:.6f} "
              f"(relative difference {rel:.2e})", flush=True)
        if rel > a.loss_tolerance:
            raise BenchError(f"verify {d} devices: losses differ by {rel:.2e} (relative), more "
                             f"than --loss-tolerance {a.loss_tolerance}: the two runs do not "
                             "train the same model")
        out.append({"devices": d, "python_loss": p["loss"], "cli_loss": c["loss"],
                    "relative_difference": rel})
    return out


def device_list(text):
    return positive_list(text, "device counts")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=positive, default=1, help="epochs per fit (default 1)")
    p.add_argument("--repeats", type=positive, default=5,
                   help="interleaved rounds (default 5)")
    p.add_argument("--devices", type=device_list, default=[1, 2],
                   help="device counts, comma-separated (default 1,2)")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "tandem"),
                   help="the tandem CLI (default build/tandem)")
    venv_python = os.path.join(ROOT, ".venv", "bin", "python")
    p.add_argument("--python", default=venv_python if os.path.exists(venv_python)
                   else sys.executable, help="python with tandem installed (default .venv)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--verbose", type=int, choices=(0, 2), default=2,
                   help="verbose of both fits (default 2: one line per epoch)")
    p.add_argument("--limit-test", type=positive, default=1000,
                   help="test samples the CLI predicts and evaluates after its fit (untimed)")
    p.add_argument("--loss-tolerance", type=float, default=1e-3,
                   help="relative loss difference allowed in the verification (default 1e-3)")
    p.add_argument("--max-other-load", type=float, default=0.05,
                   help="a run is noisy when other processes used more than this share of "
                   "the machine meanwhile (default 0.05); noisy pairs are rerun")
    p.add_argument("--limit-train", type=positive, default=0,
                   help="train on the first N images only (default: all 60000)")
    p.add_argument("--threads", type=positive, default=0,
                   help="CPU threads for both (tandem.set_num_threads / --threads; default: "
                   "every core). With 1 thread the fit's CPU time hardly depends on what else "
                   "runs on the machine, so the cpu ratio measures the front end's own work")
    p.add_argument("--time-budget", type=float, default=40,
                   help="minutes after which no new round starts (default 40)")
    p.add_argument("--max-rounds", type=positive, default=None,
                   help="stop after this many rounds even without --repeats quiet pairs "
                   "(default 2 x --repeats)")
    p.add_argument("--quiet-window", type=float, default=5,
                   help="seconds the machine must have been quiet before a run (default 5)")
    p.add_argument("--quiet-wait", type=float, default=120,
                   help="seconds to wait for a quiet machine before each run (default 120)")
    a = p.parse_args(argv)  # unknown flags: usage and exit status 2
    if a.max_rounds is None:
        a.max_rounds = 2 * a.repeats
    return a


def timed(a, who, devices, what):
    """One timed fit, after waiting (at most --quiet-wait s) for the machine to be quiet;
    flagged noisy if other processes used more than --max-other-load of it meanwhile."""
    wait = min(a.quiet_wait, max(0.0, a.deadline - time.monotonic()))
    before = wait_for_quiet(a.max_other_load, wait, a.quiet_window)
    with OtherLoad() as load:
        res = (python_fit if who == "python" else cli_fit)(a, devices, a.epochs, a.limit_train)
    check_finite(res, what)
    return {**res, "other_share_before": before, **load.as_dict(),
            "noisy": load.share > a.max_other_load}


def summarize(pairs):
    py = [p["python"]["fit_s"] for p in pairs]
    cli = [p["cli"]["fit_s"] for p in pairs]
    ratios = [p["ratio"] for p in pairs]
    cpu = [p["cpu_ratio"] for p in pairs if p["cpu_ratio"] is not None]
    return {"pairs": len(pairs), "cpu_ratio_median": statistics.median(cpu) if cpu else None,
            "cpu_ratio_min": min(cpu, default=None), "cpu_ratio_max": max(cpu, default=None),
            "python_fit_cpu_s": [p["python"]["fit_cpu_s"] for p in pairs],
            "cli_fit_cpu_s": [p["cli"]["fit_cpu_s"] for p in pairs],
            "python_fit_s_min": min(py), "cli_fit_s_min": min(cli),
            "ratio_of_minima": min(py) / min(cli),
            "cpu_ratio_of_minima": (min(x["python"]["fit_cpu_s"] for x in pairs) /
                                    min(x["cli"]["fit_cpu_s"] for x in pairs)) if cpu else None,
            "python_fit_s_median": statistics.median(py),
            "cli_fit_s_median": statistics.median(cli),
            "ratio_of_medians": statistics.median(py) / statistics.median(cli),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "python_fit_s": py, "cli_fit_s": cli, "ratios": ratios}


def main(argv=None):
    a = parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    print(f"{started}; CPU: {cpu_name()}, {os.cpu_count()} cores; cli {a.cli}; "
          f"python {a.python}", flush=True)
    verification = verify(a)
    pairs = {d: [] for d in a.devices}  # every pair run, quiet or not
    rounds = 0
    a.deadline = time.monotonic() + a.time_budget * 60
    while rounds < a.max_rounds and time.monotonic() < a.deadline and any(
            sum(not p["noisy"] for p in pairs[d]) < a.repeats for d in a.devices):
        rounds += 1
        for d in a.devices:
            if sum(not p["noisy"] for p in pairs[d]) >= a.repeats:
                continue
            order = ("python", "cli") if len(pairs[d]) % 2 == 0 else ("cli", "python")
            got = {who: timed(a, who, d, f"round {rounds} {who} {d} devices") for who in order}
            pc, cc = got["python"]["fit_cpu_s"], got["cli"]["fit_cpu_s"]
            pair = {"round": rounds, "devices": d, "order": list(order), **got,
                    "ratio": got["python"]["fit_s"] / got["cli"]["fit_s"],
                    "cpu_ratio": pc / cc if pc and cc else None,
                    "noisy": got["python"]["noisy"] or got["cli"]["noisy"]}
            pairs[d].append(pair)
            print(f"round {rounds} {d} device(s): python {got['python']['fit_s']:.3f} s (loss "
                  f"{got['python']['loss']:.4f}, others {got['python']['other_share']:.1%}), "
                  f"cli {got['cli']['fit_s']:.3f} s (loss {got['cli']['loss']:.4f}, others "
                  f"{got['cli']['other_share']:.1%}), python/cli {pair['ratio']:.4f}, cpu "
                  f"{pc or float('nan'):.1f} / {cc or float('nan'):.1f} s = "
                  f"{pair['cpu_ratio'] or float('nan'):.4f}"
                  f"{'  NOISY' if pair['noisy'] else ''}", flush=True)

    summary = []
    samples = a.limit_train or 60000
    print(f"\nseed model, batch 128, {a.epochs} epoch(s) of {samples} Fashion-MNIST images; fit "
          f"seconds, median of the quiet interleaved pairs (others <= {a.max_other_load:.0%} "
          f"of the machine); CPU: {cpu_name()}")
    print(f"{'devices':>7s} {'pairs':>9s} {'python s':>9s} {'cli s':>9s} {'ratio of medians':>17s}"
          f" {'median ratio':>13s} {'min-max ratio':>16s} {'goal <= 1.03':>13s}"
          f" {'cpu ratio (min-max)':>26s}")
    for d in a.devices:
        quiet = [p for p in pairs[d] if not p["noisy"]]
        row = {"devices": d, "all_pairs": summarize(pairs[d]) if pairs[d] else None,
               "quiet_pairs": summarize(quiet) if quiet else None,
               "enough_quiet_pairs": len(quiet) >= min(3, a.repeats)}
        s = row["quiet_pairs"] or row["all_pairs"]
        row["goal_met_at_median"] = s["ratio_median"] <= 1.03
        summary.append(row)
        label = f"{len(quiet)}q/{len(pairs[d])}"
        print(f"{d:7d} {label:>9s} {s['python_fit_s_median']:9.3f} {s['cli_fit_s_median']:9.3f} "
              f"{s['ratio_of_medians']:17.4f} {s['ratio_median']:13.4f} "
              f"{s['ratio_min']:7.4f}-{s['ratio_max']:.4f} "
              f"{'met' if row['goal_met_at_median'] else 'NOT met':>13s}"
              + (f" {s['cpu_ratio_median']:9.4f} ({s['cpu_ratio_min']:.4f}-{s['cpu_ratio_max']:.4f})"
                 if s["cpu_ratio_median"] is not None else "")
              + ("" if row["quiet_pairs"] else "  (no quiet pair: all pairs)")
              + f"\n{'':7s} fastest run of each: python {s['python_fit_s_min']:.3f} s, cli "
                f"{s['cli_fit_s_min']:.3f} s, ratio {s['ratio_of_minima']:.4f}"
              + (f"; least CPU: ratio {s['cpu_ratio_of_minima']:.4f}"
                 if s["cpu_ratio_of_minima"] is not None else ""))
    if a.json:
        write_json_atomically(a.json, {
            "benchmark": "python_overhead", "command": " ".join(sys.argv), "started": started,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpu": cpu_name(),
            "cores": os.cpu_count(), "epochs": a.epochs, "train_samples": samples,
            "repeats": a.repeats, "time_budget_min": a.time_budget,
            "rounds_run": rounds, "max_other_load": a.max_other_load, "batch_size": 128,
            "seed": a.seed, "threads": a.threads or "all cores", "verbose": a.verbose,
            "cli": a.cli, "python": a.python,
            "order": "alternating per pair: P C, then C P", "goal": "python / cli <= 1.03",
            "verification": verification, "summary": summary, "pairs": pairs})


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"python_overhead: {e}", file=sys.stderr)
        sys.exit(1)
