#!/usr/bin/env python3
"""Convnets on CPU devices: samples per second of `tandem train` on 1 device x 1 core,
2 devices x 1 core each, and 1 device x 2 cores, interleaved, on random images; with
--validate, the cost model's predictions for them, calibrated from one 1-device run only.

    bench/conv_scaling.py [--models minigooglenet,mnist-convnet] [--rounds 3]
                          [--batches 64,128] [--samples N] [--json out.json]
                          [--validate this-machine-cpu [--profile-out p.json] [--check]]
                          [--cli build/tandem]

Each run is a fresh `tandem train --model M --dataset synthetic --epochs 2` (same seed,
--samples images, by default enough for an epoch of a second or more on one core;
SGD, global batch B for every configuration: the same work, split differently); its
--metrics-json gives the second epoch's seconds (the first pays for creating oneDNN's
primitives), from which samples per second and seconds per step. Rounds rotate the order
of the configurations. Before each run the script waits (up to --quiet-wait s) for other
processes to use at most --max-other-load of the machine and measures what they used during
it; a noisy run is retried once, then kept and flagged. Reported per model and batch: the
median of each configuration over the rounds, the ratios of the medians (2x1 / 1x1 and
2x1 / 1x2), and the per-round ratios' min-max.

--validate PROFILE: the profile (profiles/PROFILE.json, or a path). One from `tandem calibrate
--conv-model M` (each convolution shape's primitives timed alone, and M's 1-device steps with
every kernel timed: conv_step_scale, pool_scale) is used as it is; any other gets a
convolution calibration from one measurement only: the first model's 1x1 median step at the
largest batch (written to --profile-out with its source). `tandem advise --model M --hardware <that profile>
--strategy mirrored --optimizer sgd` then predicts, for every model and batch, the 1-device
step, the 2-device step and the speedup (and, with two batches B < 2B measured, the
per-device-batch speedup: 2 devices at 2B against 1 at B, the blog post's rule), printed
beside the measurements with the error. Every cell but the calibrating model's 1-device step
at the calibrating batch is held out.
--check exits 1 when a speedup is off by more than 15% or a step time by more than 20%.
1 device x 2 cores is measured, not predicted: a profile's device is one core.
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
# Training images per epoch by default: an epoch of at least a second or so on one core, so
# that per-epoch costs (shuffle, callbacks) stay small against the steps.
SAMPLES = {"minigooglenet": 512, "small-resnet": 1024, "mnist-convnet": 8192}
CONFIGS = [("1x1", 1, 1), ("2x1", 2, 1), ("1x2", 1, 2)]  # name, devices, threads per device


class BenchError(RuntimeError):
    pass


def one_run(a, model, batch, devices, threads):
    samples = a.samples or SAMPLES[model]
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.json")
        cmd = [a.cli, "train", "--model", model, "--dataset", "synthetic", "--input-shape",
               INPUTS[model], "--synthetic-train", str(samples), "--synthetic-test", "64",
               "--epochs", "2", "--batch-size", str(batch), "--optimizer", "sgd", "--seed",
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
    steps = -(-samples // batch)
    return {"seconds": epoch["seconds"], "samples_per_second": samples / epoch["seconds"],
            "step_seconds": epoch["seconds"] / steps, "loss": epoch["loss"]}


def timed(a, model, batch, devices, threads):
    for attempt in range(2):
        before = wait_for_quiet(a.max_other_load, a.quiet_wait)
        with OtherLoad() as load:
            r = one_run(a, model, batch, devices, threads)
        r.update(other_share_before=before, **load.as_dict(), noisy=load.share > a.max_other_load)
        if not r["noisy"]:
            break
    return r


def advise(a, profile, model, batch_args):
    """tandem advise's mirrored predictions for 1 and 2 devices: (step seconds, speedup)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "a.json")
        cmd = [a.cli, "advise", "--model", model, "--hardware", profile, "--devices", "1,2",
               "--strategy", "mirrored", "--optimizer", "sgd", "--json", out] + batch_args
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise BenchError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
        with open(out) as f:
            preds = {x["devices"]: x for x in json.load(f)["predictions"]}
    return preds[1]["step_seconds"], preds[2]["step_seconds"], preds[2]["speedup"]


def profile_path(name):
    """profiles/NAME.json, or NAME itself when it is a path (a profile from tandem calibrate,
    with its measured convolution shapes)."""
    if name.endswith(".json") or os.sep in name:
        return name
    return os.path.join(ROOT, "profiles", name + ".json")


def validate(a, result, models, batches):
    """Predicts every measured configuration from a profile calibrated on one device only and
    compares. A profile from `tandem calibrate --conv-model M` (its convolutions and pooling
    timed inside M's 1-device steps) is used as it is; any other gets a convolution
    calibration from one 1-device measurement of this run, the first model's at the largest
    batch."""
    with open(profile_path(a.validate)) as f:
        profile = json.load(f)
    steps = profile.get("measurements", {}).get("conv_steps")
    if profile["device"].get("conv_step_scale") and steps:
        cal_model, cal_batch, step = steps["model"], steps["batch"], steps["step_seconds"]
        how = (f"calibrated by tandem calibrate from {cal_model}'s 1-device steps at batch "
               f"{cal_batch}, every kernel timed")
        path = profile_path(a.validate)
        if a.profile_out:
            write_json_atomically(a.profile_out, profile)
    else:
        cal_model, cal_batch = models[0], max(batches)
        cal = result["models"][cal_model][str(cal_batch)]
        step = cal["median_step_seconds"]["1x1"]
        how = f"calibrated with {cal_model} 1x1 at batch {cal_batch} only"
        profile["device"]["conv_calibration"] = {"model": cal_model, "batch": cal_batch,
                                                 "step_seconds": step}
        profile.setdefault("sources", {})["device.conv_calibration"] = (
            f"Measured: {cal_model} at batch {cal_batch} on 1 device of 1 core, median step "
            f"{step * 1e3:.1f} ms over {a.rounds} rounds (per-round "
            f"{min(cal['per_round_step_seconds']['1x1']) * 1e3:.1f}-"
            f"{max(cal['per_round_step_seconds']['1x1']) * 1e3:.1f} ms), {result['cpu']}: "
            f"{result['command']}")
        path = a.profile_out or os.path.join(
            tempfile.mkdtemp(), os.path.basename(a.validate).removesuffix(".json") + "-conv.json")
        write_json_atomically(path, profile)
    cells, misses = [], []

    def cell(model, what, batch, predicted, measured, tolerance, spread):
        error = predicted / measured - 1
        held_out = not (model == cal_model and batch == cal_batch and what == "1-device step")
        ok = abs(error) <= tolerance or not held_out
        c = {"model": model, "what": what, "batch": batch, "predicted": predicted,
             "measured": measured, "measured_min_max": spread, "error": error,
             "tolerance": tolerance, "held_out": held_out, "ok": ok}
        cells.append(c)
        if not ok:
            misses.append(c)

    for model in models:
        for batch in batches:
            m = result["models"][model][str(batch)]
            one, two, speedup = advise(a, path, model, ["--batch-size", str(batch)])
            rounds = m["per_round_step_seconds"]
            cell(model, "1-device step", batch, one, m["median_step_seconds"]["1x1"], 0.20,
                 [min(rounds["1x1"]), max(rounds["1x1"])])
            cell(model, "2-device step", batch, two, m["median_step_seconds"]["2x1"], 0.20,
                 [min(rounds["2x1"]), max(rounds["2x1"])])
            cell(model, "speedup 2x1 / 1x1", batch, speedup, m["speedup_2x1_vs_1x1"], 0.15,
                 [min(m["per_round_2x1_vs_1x1"]), max(m["per_round_2x1_vs_1x1"])])
            if 2 * batch in batches:
                big = result["models"][model][str(2 * batch)]
                measured = (big["median_samples_per_second"]["2x1"] /
                            m["median_samples_per_second"]["1x1"])
                _, _, per_device = advise(a, path, model, ["--per-device-batch", str(batch)])
                cell(model, f"speedup {batch}/device", batch, per_device, measured, 0.15, None)
    result["validation"] = {"profile": a.validate, "calibrated_profile": profile,
                            "calibration": {"model": cal_model, "batch": cal_batch,
                                            "step_seconds": step, "how": how},
                            "cells": cells, "misses": len(misses)}
    print(f"\nPredictions ({a.validate}, {how}; profile {path})")
    print(f"{'model':<14} {'batch':>5} {'what':<22} {'predicted':>10} {'measured':>10} "
          f"{'error':>7}")
    for c in cells:
        unit = 1e3 if "step" in c["what"] else 1
        suffix = " ms" if unit == 1e3 else "x "
        note = "" if c["held_out"] else "  (calibration)"
        note += "" if c["ok"] else "  MISS"
        print(f"{c['model']:<14} {c['batch']:>5} {c['what']:<22} "
              f"{c['predicted'] * unit:>8.2f}{suffix} {c['measured'] * unit:>8.2f}{suffix} "
              f"{c['error'] * 100:>+6.1f}%{note}")
    return misses


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="minigooglenet,mnist-convnet")
    p.add_argument("--rounds", type=positive, default=3)
    p.add_argument("--batches", default="128", help="global batches, comma-separated")
    p.add_argument("--samples", type=positive,
                   help="training images per epoch (default: " +
                   ", ".join(f"{m} {n}" for m, n in SAMPLES.items()) + ")")
    p.add_argument("--cli", default=os.path.join(ROOT, "build", "tandem"))
    p.add_argument("--json")
    p.add_argument("--validate", metavar="PROFILE")
    p.add_argument("--profile-out", metavar="PATH")
    p.add_argument("--check", action="store_true")
    p.add_argument("--max-other-load", type=float, default=0.10)
    p.add_argument("--quiet-wait", type=float, default=120.0)
    a = p.parse_args(argv)
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in INPUTS:
            p.error(f"--models: unknown model {m!r} (known: {', '.join(INPUTS)})")
    try:
        batches = sorted({int(b) for b in a.batches.split(",")})
    except ValueError:
        p.error(f"--batches {a.batches!r}: expected whole numbers, e.g. 64,128")
    if min(batches) < 1 or min(a.samples or SAMPLES[m] for m in models) < 2 * max(batches):
        p.error("--samples must hold at least two batches of the largest --batches")
    if (a.profile_out or a.check) and not a.validate:
        p.error("--profile-out and --check need --validate")
    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "batches": batches,
              "samples": {m: a.samples or SAMPLES[m] for m in models}, "rounds": a.rounds,
              "command": " ".join(sys.argv),
              "models": {}}
    for model in models:
        result["models"][model] = {}
        for batch in batches:
            runs = {name: [] for name, _, _ in CONFIGS}
            for r in range(a.rounds):
                order = CONFIGS[r % 3:] + CONFIGS[:r % 3]
                for name, devices, threads in order:
                    res = timed(a, model, batch, devices, threads)
                    runs[name].append(res)
                    print(f"{model} batch {batch} round {r + 1} {name}: "
                          f"{res['samples_per_second']:.1f} samples/s"
                          f"{' (noisy)' if res['noisy'] else ''}", flush=True)
            med = {n: statistics.median(x["samples_per_second"] for x in v)
                   for n, v in runs.items()}
            per_round = lambda num, den: [x["samples_per_second"] / y["samples_per_second"]
                                          for x, y in zip(runs[num], runs[den])]
            summary = {
                "median_samples_per_second": med,
                "median_step_seconds": {n: statistics.median(x["step_seconds"] for x in v)
                                        for n, v in runs.items()},
                "per_round_step_seconds": {n: [x["step_seconds"] for x in v]
                                           for n, v in runs.items()},
                "speedup_2x1_vs_1x1": med["2x1"] / med["1x1"],
                "speedup_2x1_vs_1x2": med["2x1"] / med["1x2"],
                "per_round_2x1_vs_1x1": per_round("2x1", "1x1"),
                "per_round_2x1_vs_1x2": per_round("2x1", "1x2"),
                "noisy_runs": sum(x["noisy"] for v in runs.values() for x in v),
                "runs": runs,
            }
            result["models"][model][str(batch)] = summary
            print(f"{model} batch {batch}: 1x1 {med['1x1']:.1f}, 2x1 {med['2x1']:.1f}, "
                  f"1x2 {med['1x2']:.1f} samples/s; 2x1 / 1x1 = "
                  f"{summary['speedup_2x1_vs_1x1']:.2f} "
                  f"({min(summary['per_round_2x1_vs_1x1']):.2f}-"
                  f"{max(summary['per_round_2x1_vs_1x1']):.2f}), 2x1 / 1x2 = "
                  f"{summary['speedup_2x1_vs_1x2']:.2f} "
                  f"({min(summary['per_round_2x1_vs_1x2']):.2f}-"
                  f"{max(summary['per_round_2x1_vs_1x2']):.2f})", flush=True)
    misses = validate(a, result, models, batches) if a.validate else []
    if a.json:
        write_json_atomically(a.json, result)
    if misses and a.check:
        sys.exit(f"conv_scaling: {len(misses)} prediction(s) outside tolerance")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"conv_scaling: {e}")
