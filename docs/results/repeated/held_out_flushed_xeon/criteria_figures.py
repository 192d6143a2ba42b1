# The figures of criteria.md 2-6 from this set's files (1, the configurations missed in most
# runs, comes from `tandem bench validate --recompute cpu_run1.json cpu_run2.json
# cpu_run3.json`; 7 from tests/advise/validation_run_test.cpp). 2: every kept repetition's
# window in cpu_runK.json against the run's fastest hand-off (concurrency_probes). 3: times.log.
# 4, 5: 784-256-256-10's 2-device configurations at 32 and 512 over the three runs. 6: the
# edges' group's floor over the seed's repetitions against the seed's refit floor. Run from
# this directory:
#   python3 criteria_figures.py
import json, os
from datetime import datetime

APART, STEAL, CROWDED = 3.0, 0.05, 1.4
SEED, SMALL = "784-4096-2048-512-64-10", "784-256-256-10"

present = [k for k in (1, 2, 3) if os.path.exists(f"cpu_run{k}.json")]
runs = {k: json.load(open(f"cpu_run{k}.json")) for k in present}
holds2, ratios = [], []
for k, run in runs.items():
    cp = run["concurrency_probes"]
    bh, bc = cp["best_handoff"], cp["best_cache"]
    reps = disturbed = crowd = 0
    for r in run["rows"]:
        for h, s, c in zip(r["handoff_per_repetition"], r["steal_per_repetition"],
                           r["cache_per_repetition"]):
            reps += 1
            disturbed += h > APART * bh or s > STEAL
            crowd += c > CROWDED * bc
    holds2.append(disturbed < 0.10 * reps)
    print(f"run {k}: 2. {disturbed} of {reps} repetitions disturbed ({disturbed / reps:.1%}); "
          f"{crowd} crowded against {bc * 1e6:.2f} us")
    edges = min(c for r in run["rows"] if r["model"] == SEED for c in r["cache_per_repetition"])
    refit = None
    for rate in run["calibrations"]:
        if "-".join(map(str, rate["widths"])) == SEED:
            for g in rate["weight_grad_gemms"]:
                if g["devices"] == 2 and "window" in g:
                    refit = g["window"]["best_cache"]
    ratio = edges / refit
    ratios.append(ratio)
    print(f"   6. the edges' floor over the seed's repetitions {edges * 1e6:.2f} us, the seed's "
          f"refit {refit * 1e6:.2f} us: {ratio:.2f}x")
print(f"2. {'holds' if all(holds2) and len(present) == 3 else 'FAILS or not all runs'}")

print("3. times.log:")
stamps = {}
for line in open("times.log"):
    w = line.split()
    if w[0] == "run":
        stamps.setdefault(int(w[1]), []).append(datetime.strptime(w[4] if w[2] != "end" else w[3], "%H:%M:%S"))
ok3 = True
for k, t in sorted(stamps.items()):
    if len(t) == 3:
        minutes = ((t[2] - t[0]).seconds) / 60
        ok3 &= minutes <= 30
        print(f"   run {k}: {minutes:.1f} min (calibrate {(t[1] - t[0]).seconds / 60:.1f})")
print(f"   {'holds' if ok3 and len(stamps) == 3 else 'FAILS or not all runs'}")

for n, batch in ((4, 32), (5, 512)):
    ok = True
    configs = sorted({r["config"] for run in runs.values() for r in run["rows"]
                      if r["model"] == SMALL and r["batch"] == batch and r["devices"] == 2})
    for c in configs:
        m = [r["measured_seconds"] for run in runs.values() for r in run["rows"]
             if r["model"] == SMALL and r["batch"] == batch and r["config"] == c]
        spread = max(m) / min(m)
        ok &= spread <= 1.2
        print(f"{n}. {SMALL} at {batch}, {c}: " + ", ".join(f"{x * 1e3:.3f}" for x in m) +
              f" ms: {spread:.2f}x")
    print(f"{n}. {'holds' if ok and len(runs) == 3 else 'FAILS or not all runs'}")

over = sum(r >= 1.2 for r in ratios)
under = sum(r < 1.1 for r in ratios)
print(f"6. F: {over} of {len(ratios)} runs at 1.2x or more, {under} under 1.1x: " +
      ("replicates" if over >= 2 else "fails to replicate" if under >= 2 else "unsettled"))
