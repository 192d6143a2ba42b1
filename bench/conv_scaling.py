#!/usr/bin/env python3
"""Convnets on CPU devices: samples per second of `tandem train` on 1 device x 1 core,
2 devices x 1 core each, and 1 device x 2 cores, interleaved, on random images.

    bench/conv_scaling.py [--models minigooglenet,mnist-convnet] [--rounds 3]
                          [--batch 128] [--samples 512] [--json out.json] [--cli build/tandem]

Each run is a fresh `tandem train --model M --dataset synthetic --epochs 2` (same seed,
SGD with momentum, global batch --batch for every configuration: the same work, split
differently); its --metrics-json gives the second epoch's seconds (the first pays for
creating oneDNN's primitives), from which samples per second. Rounds rotate the order of
the three configurations. Before each run the script waits (up to --quiet-wait s) for other
processes to use at most --max-other-load of the machine and measures what they used during
it; a noisy run is retried once, then kept and flagged. Reported per model: the median of
each configuration over the rounds, the ratios of the medians (2x1 / 1x1 and 2x1 / 1x2),
and the per-round ratios' min-max.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from pybench_host import (OtherLoad, cpu_name, positive, wait_for_quiet,
                          write_json_atomically)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = {"minigooglenet": "32,32,3", "small-resnet": "32,32,3", "mnist-convnet": "28,28,1"}
CONFIGS = [("1x1", 1, 1), ("2x1", 2, 1), ("1x2", 1, 2)]  # name, devices, threads per device


class BenchError(RuntimeError):
    pass


def one_run(a, model, devices, threads):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.json")
        cmd = [a.cli, "train", "--model", model, "--dataset", "synthetic", "--input-shape",
               INPUTS[model], "--synthetic-train", str(a.samples), "--synthetic-test", "64",
               "--epochs", "2", "--batch-size", str(a.batch), "--optimizer", "sgd", "--seed",
               "1", "--devices", str(devices), "--threads-per-device", str(threads),
               "--verbose", "0", "--metrics-json", metrics]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise BenchError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
        with open(metrics) as f:
            m = json.load(f)
    epoch = m["epochs"][1]
    if not (epoch["loss"] == epoch["loss"]):  # NaN
        raise BenchError(f"{model} {devices}x{threads}: loss is NaN")
    return {"seconds": epoch["seconds"], "samples_per_second": a.samples / epoch["seconds"],
            "loss": epoch["loss"]}


def timed(a, model, devices, threads):
    for attempt in range(2):
        before = wait_for_quiet(a.max_other_load, a.quiet_wait)
        with OtherLoad() as load:
            r = one_run(a, model, devices, threads)
        r.update(other_share_before=before, **load.as_dict(), noisy=load.share > a.max_other_load)
        if not r["noisy"]:
            break
    return r


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="minigooglenet,mnist-convnet")
    p.add_argument("--rounds", type=positive, default=3)
    p.add_argument("--batch", type=positive, default=128)
    p.add_argument("--samples", type=positive, default=512)
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "tandem"))
    p.add_argument("--json")
    p.add_argument("--max-other-load", type=float, default=0.10)
    p.add_argument("--quiet-wait", type=float, default=120.0)
    a = p.parse_args(argv)
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in INPUTS:
            p.error(f"--models: unknown model {m!r} (known: {', '.join(INPUTS)})")
    if a.samples < 2 * a.batch:
        p.error("--samples must hold at least two batches")
    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "batch": a.batch,
              "samples": a.samples, "rounds": a.rounds, "command": " ".join(sys.argv),
              "models": {}}
    for model in models:
        runs = {name: [] for name, _, _ in CONFIGS}
        for r in range(a.rounds):
            order = CONFIGS[r % 3:] + CONFIGS[:r % 3]
            for name, devices, threads in order:
                res = timed(a, model, devices, threads)
                runs[name].append(res)
                print(f"{model} round {r + 1} {name}: {res['samples_per_second']:.1f} samples/s"
                      f"{' (noisy)' if res['noisy'] else ''}", flush=True)
        med = {n: statistics.median(x["samples_per_second"] for x in v) for n, v in runs.items()}
        per_round = lambda num, den: [x["samples_per_second"] / y["samples_per_second"]
                                      for x, y in zip(runs[num], runs[den])]
        summary = {
            "median_samples_per_second": med,
            "speedup_2x1_vs_1x1": med["2x1"] / med["1x1"],
            "speedup_2x1_vs_1x2": med["2x1"] / med["1x2"],
            "per_round_2x1_vs_1x1": per_round("2x1", "1x1"),
            "per_round_2x1_vs_1x2": per_round("2x1", "1x2"),
            "noisy_runs": sum(x["noisy"] for v in runs.values() for x in v),
            "runs": runs,
        }
        result["models"][model] = summary
        print(f"{model}: 1x1 {med['1x1']:.1f}, 2x1 {med['2x1']:.1f}, 1x2 {med['1x2']:.1f} "
              f"samples/s; 2x1 / 1x1 = {summary['speedup_2x1_vs_1x1']:.2f} "
              f"({min(summary['per_round_2x1_vs_1x1']):.2f}-"
              f"{max(summary['per_round_2x1_vs_1x1']):.2f}), 2x1 / 1x2 = "
              f"{summary['speedup_2x1_vs_1x2']:.2f}", flush=True)
    if a.json:
        write_json_atomically(a.json, result)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"conv_scaling: {e}")
