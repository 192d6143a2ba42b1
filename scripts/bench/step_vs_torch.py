#!/usr/bin/python3
"""The seed training step: tandem (1 and 2 threads) and its GEMM floor against PyTorch,
measured in one run, interleaved round by round, median over rounds.

    scripts/bench/step_vs_torch.py [--rounds 5] [--build build] [--json out.json]

Needs Debian's python3-torch (apt-get install python3-torch libopenblas0-pthread); run
with /usr/bin/python3. Each round runs, in turn: tandem's step_bench (floor and step at 1
and 2 threads), then PyTorch's step at 1 thread and at 2 threads (OMP_WAIT_POLICY=PASSIVE,
without which torch's 2-thread step is slower than 1 thread on this machine), each with and
without OPENBLAS_CORETYPE=SKYLAKEX.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCH = os.path.join(ROOT, "scripts", "reference", "torch_seed.py")

TORCH_CONFIGS = [
    ("torch 1 thread", 1, {}),
    ("torch 1 thread SKYLAKEX", 1, {"OPENBLAS_CORETYPE": "SKYLAKEX"}),
    ("torch 2 threads PASSIVE", 2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ("torch 2 threads PASSIVE SKYLAKEX", 2,
     {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_CORETYPE": "SKYLAKEX"}),
]


def run_json(cmd, env_extra=None):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.update(env_extra or {})
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(cmd + ["--json", f.name], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        return json.load(open(f.name))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--json", default=None)
    a = p.parse_args()
    step_bench = os.path.join(a.build, "bench", "step_bench")
    samples = {}
    for r in range(a.rounds):
        t = run_json([step_bench, "--threads", "1,2", "--repeats", "1", "--steps", "10"])
        for c in t["configs"]:
            samples.setdefault(f"tandem floor {c['threads']} thread(s)", []).append(c["floor_ms"])
            samples.setdefault(f"tandem step {c['threads']} thread(s)", []).append(c["step_ms"])
        for name, threads, env in TORCH_CONFIGS:
            j = run_json([sys.executable, TORCH, "step", "--threads", str(threads),
                          "--repeats", "1", "--steps-per-repeat", "10"], env)
            samples.setdefault(name, []).append(j.get("median_ms", j.get("ms_median")))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in samples.items()}
    best_torch = min(v for k, v in med.items() if k.startswith("torch"))
    print(f"seed step, batch 128, 8.92 GFLOP; median of {a.rounds} interleaved rounds")
    print(f"{'config':36s} {'ms/step':>9s} {'GFLOP/s':>8s} {'vs best torch':>14s}")
    for k, v in med.items():
        print(f"{k:36s} {v:9.2f} {8.92 / v * 1e3:8.1f} {best_torch / v:13.2f}x")
    for t in (1, 2):
        s, f = med[f"tandem step {t} thread(s)"], med[f"tandem floor {t} thread(s)"]
        print(f"tandem {t} thread(s): step / GEMM floor = {s / f:.3f}")
    if a.json:
        json.dump({"rounds": a.rounds, "median_ms": med, "samples_ms": samples,
                   "best_torch_ms": best_torch}, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
