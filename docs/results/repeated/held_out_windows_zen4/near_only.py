# criteria.md 3 and 4 from this set's runs: where each run's repetitions ran (a repetition is
# apart when the slower hand-off at its window's edges is over 3x the run's fastest,
# concurrency_probes.best_handoff: window_check.h's kApartHandoff), and the model's misses when
# each configuration's step is the median of its near repetitions only (all of them where none
# is near), its speedup against its model and batch's 1-device step so recomputed, against the
# predictions each run made. A configuration misses when it misses in more than half the runs,
# as `tandem bench validate --recompute` counts. Run from this directory.
#   python3 near_only.py [cpu_run1.json cpu_run2.json cpu_run3.json]
import json, statistics, sys
from collections import defaultdict

APART = 3.0
files = sys.argv[1:] or [f"cpu_run{k}.json" for k in (1, 2, 3)]


def rows_of(path):
    run = json.load(open(path))
    best = run["concurrency_probes"]["best_handoff"]
    tol = run["tolerances"]
    rows = [r for r in run["rows"] if r["ranks"] == 1]
    return best, tol, rows


def key(r):
    return (r["model"], r["batch"], r["config"])


def judge(rows, tol, step_of):
    """Missed keys, with each row's step from step_of(row)."""
    base = {(r["model"], r["batch"]): step_of(r) for r in rows if r["config"] == "1 device"}
    missed = set()
    for r in rows:
        step = step_of(r)
        speedup = base[(r["model"], r["batch"])] / step
        step_error = r["predicted_seconds"] / step - 1
        speedup_error = r["predicted_speedup"] / speedup - 1
        if abs(step_error) > tol["step"] or (r["devices"] > 1 and abs(speedup_error) > tol["speedup"]):
            missed.add(key(r))
    return missed


def most(missed_by_run):
    counts = defaultdict(int)
    for m in missed_by_run:
        for k in m:
            counts[k] += 1
    return {k for k, c in counts.items() if 2 * c > len(missed_by_run)}


all_missed, near_missed, apart_share = [], [], defaultdict(list)
for path in files:
    best, tol, rows = rows_of(path)
    reps = apart = 0
    for r in rows:
        hands = r["handoff_per_repetition"]
        flags = [h > APART * best for h in hands]
        reps += len(flags)
        apart += sum(flags)
        apart_share[key(r)].append(sum(flags) / len(flags))

    def near_step(r):
        near = [t for t, h in zip(r["per_repetition"], r["handoff_per_repetition"]) if h <= APART * best]
        return statistics.median(near or r["per_repetition"])

    all_missed.append(judge(rows, tol, lambda r: r["measured_seconds"]))
    near_missed.append(judge(rows, tol, near_step))
    print(f"{path}: {apart} of {reps} repetitions apart ({apart / reps:.1%}), fastest hand-off "
          f"{best * 1e9:.0f} ns; misses {len(all_missed[-1])}, from near repetitions {len(near_missed[-1])}")

model, near = most(all_missed), most(near_missed)
print(f"missed in most runs: {len(model)} as measured, {len(near)} from near repetitions only")
for k in sorted(model | near):
    share = statistics.mean(apart_share[k])
    tag = "both" if k in model and k in near else ("as measured only" if k in model else "near only")
    print(f"  {k[0]}, batch {k[1]}, {k[2]}: {tag}; repetitions apart {share:.0%} (mean over runs)")
