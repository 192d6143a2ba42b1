# The figures of criteria.md 1 and 3-7 from this set's files (2, the configurations missed in
# most runs, and 8, H's, come from `tandem bench validate --recompute cpu_run1.json
# cpu_run2.json cpu_run3.json` by the build and by the build with H applied). 1: placement.json's
# samples, near (a hand-off within 3x the run's fastest) and crowded (a cache reading over 1.4x
# the run's fastest) or not. 3: every kept repetition's window in cpu_runK.json, against the
# run's fastest hand-off and cache reading (concurrency_probes). 4: each run's calibration
# (pK.json) and refits (the windows in cpu_runK.json's profile), a slowest kept hand-off over 3x
# the fastest of the windows on as many devices in the same file, or steal over 5%. 5:
# times.log. 6: 784-256-256-10's 2-device configurations at 32 over the three runs. 7: S as
# criteria.md defines it. Run from this directory:
#   python3 criteria_figures.py
import json, os, statistics
from datetime import datetime

APART, STEAL, CROWDED, POLL = 3.0, 0.05, 1.4, 0.25
SMALL = "784-256-256-10"
med = lambda v: statistics.median(v) if v else float("nan")

p = json.load(open("placement.json"))
fast_h, fast_c = p["fastest_handoff"], p["fastest_cache"]
near = [s for s in p["samples"] if s["handoff"] <= APART * fast_h]
apart = [s for s in p["samples"] if s["handoff"] > APART * fast_h]
crowded = [s for s in near if s["cache"] > CROWDED * fast_c]
quiet = [s for s in near if s["cache"] <= CROWDED * fast_c]
n = len(p["samples"])
print(f"1. placement: {n} samples, {len(apart)} apart ({len(apart) / n:.1%}), {len(crowded)} "
      f"near and crowded ({len(crowded) / n:.1%}), {len(quiet)} near and not; fastest hand-off "
      f"{fast_h * 1e9:.0f} ns, cache {fast_c * 1e6:.2f} us")
for name, group in (("crowded", crowded), ("not crowded", quiet), ("apart", apart)):
    print(f"   {name}: 2 devices {med([s['two_devices'] for s in group]) * 1e3:.3f} ms, "
          f"1 device {med([s['one_device'] for s in group]) * 1e3:.3f} ms, shards' update "
          f"{med([s['shard_ratio'] for s in group]):.2f}x, hand-off "
          f"{med([s['handoff'] for s in group]) * 1e9:.0f} ns")
if len(crowded) < 50 or len(quiet) < 50:
    print("   not judged: fewer than 50 samples in a state")
else:
    two_c = med([s["two_devices"] for s in crowded])
    two_q = med([s["two_devices"] for s in quiet])
    print(f"   crowded over not: {two_c / two_q - 1:+.1%}: "
          f"{'holds' if two_c >= 1.10 * two_q else 'FAILS'} at +10%")


def windows(profile):
    d = profile["device"]
    out = []
    if "update_contention_window" in d:
        out.append((d["update_contention_devices"], "update at once", d["update_contention_window"]))
    for rate in d.get("dense_rates", []):
        for w in rate.get("weight_grad_gemms", []):
            if "window" in w:
                out.append((w["devices"], "steps of " + "-".join(map(str, rate["widths"])), w["window"]))
    return out


def judge(where, ws):
    disturbed, waited = [], []
    for devices, name, w in ws:
        fastest = min(x["best_handoff"] for n, _, x in ws if n == devices)
        why = []
        if w["handoff"] > APART * fastest:
            why.append(f"{w['handoff'] * 1e9:.0f} ns against {fastest * 1e9:.0f}")
        if w["steal"] > STEAL:
            why.append(f"steal {w['steal']:.1%}")
        if why:
            disturbed.append(f"{name} ({', '.join(why)})")
        if w.get("waits", 0) > 0:
            waited.append(f"{name} {w['waits'] * POLL:.2f} s, {w['redone']} again")
    kept = sum(w["kept"] for _, _, w in ws)
    crowd = sum(max(w.get("crowded", -1), 0) for _, _, w in ws)
    redone = sum(w["redone"] for _, _, w in ws)
    print(f"   {where}: {len(ws)} windows, {kept} units kept ({crowd} crowded), {redone} timed "
          f"again; disturbed: {', '.join(disturbed) or 'none'}; waited: {'; '.join(waited) or 'none'}")
    return len(disturbed)


def tolerance_missed(row, tol):
    se = row["predicted_seconds"] / row["measured_seconds"] - 1
    sp = row["predicted_speedup"] / row["measured_speedup"] - 1
    return abs(se) > tol["step"] or (row["devices"] > 1 and abs(sp) > tol["speedup"])


runs = {}
present = [k for k in (1, 2, 3) if os.path.exists(f"cpu_run{k}.json")]
flagged = [0, 0]  # configurations, missed
others = [0, 0]
all_reps = []
for k in present:
    print(f"run {k}:")
    profile = json.load(open(f"p{k}.json"))
    kept_disturbed = judge("4. calibration", windows(profile))
    run = runs[k] = json.load(open(f"cpu_run{k}.json"))
    refits = [w for w in windows(run["profile"]) if w[1] != "update at once"]
    kept_disturbed += judge("4. refits", refits)
    print(f"   4. windows kept disturbed in run {k}: {kept_disturbed}")
    cp = run["concurrency_probes"]
    bh, bc = cp["best_handoff"], cp["best_cache"]
    reps = apart_n = taken = crowd = disturbed = 0
    for r in run["rows"]:
        for h, s, c in zip(r["handoff_per_repetition"], r["steal_per_repetition"],
                           r["cache_per_repetition"]):
            reps += 1
            apart_n += h > APART * bh
            taken += s > STEAL
            crowd += c > CROWDED * bc
            disturbed += h > APART * bh or s > STEAL
    all_reps.append(disturbed < 0.10 * reps)
    redone = sum(r["redone"] for r in run["rows"])
    waits = sum(w["window"]["waits"] for w in run["measured_windows"])
    print(f"   3. repetitions: {disturbed} of {reps} kept disturbed ({disturbed / reps:.1%}: "
          f"{apart_n} apart, {taken} stolen; {'holds' if disturbed < 0.10 * reps else 'FAILS'} "
          f"under 10%); {crowd} crowded ({crowd / reps:.0%}, recorded); {redone} timed again, "
          f"{waits * POLL:.2f} s of polls; fastest hand-off {bh * 1e9:.0f} ns, cache "
          f"{bc * 1e6:.2f} us")
    for w in run["measured_windows"]:
        x = w["window"]
        print(f"      {w['model']}: kept {x['kept']}, crowded {x.get('crowded', -1)}, again "
              f"{x['redone']}, polls {x['waits']}")
    # 7. S.
    refs = [w["best_cache"] for _, _, w in windows(profile) + windows(run["profile"]) if "best_cache" in w]
    ref = min(refs + [bc])
    steps_window = {}
    for rate in run["calibrations"]:
        for g in rate["weight_grad_gemms"]:
            if g["devices"] == 2 and "window" in g:
                steps_window["-".join(map(str, rate["widths"]))] = g["window"]
    lines = []
    for r in run["rows"]:
        if r["devices"] != 2 or r["ranks"] != 1:
            continue
        w = steps_window[r["model"]]
        if w["best_cache"] > CROWDED * ref:
            cal = 1.0
        else:
            cal = max(w.get("crowded", 0), 0) / w["kept"]
        cs = r["cache_per_repetition"]
        meas = sum(c > CROWDED * ref for c in cs) / len(cs)
        missed = tolerance_missed(r, run["tolerances"])
        tally = flagged if abs(meas - cal) >= 0.5 else others
        tally[0] += 1
        tally[1] += missed
        if abs(meas - cal) >= 0.5 or missed:
            lines.append(f"      {r['model']} at {r['batch']}, {r['config']}: cal {cal:.2f}, meas "
                         f"{meas:.2f}{', flagged' if abs(meas - cal) >= 0.5 else ''}"
                         f"{', missed' if missed else ''}")
    print(f"   7. reference {ref * 1e6:.2f} us; flagged or missed:")
    print("\n".join(lines) or "      none")

print(f"3. {'holds' if all(all_reps) and len(present) == 3 else 'FAILS or not all runs'}")
print("5. times.log:")
log = open("times.log").read().rstrip()
print(log)
t = {}
for line in log.splitlines():
    words = line.split()
    if words[0] == "run" and words[2] in ("calibrate", "end"):
        t[(int(words[1]), words[2])] = datetime.strptime(words[4] if words[2] == "calibrate" else words[3], "%H:%M:%S")
minutes = [((t[(k, "end")] - t[(k, "calibrate")]).seconds / 60) for k in present if (k, "end") in t]
print(f"   minutes a run: {', '.join(f'{m:.1f}' for m in minutes)}: "
      f"{'holds' if minutes and max(minutes) <= 30 and len(minutes) == 3 else 'FAILS or not all runs'} at 30")

print("6. " + SMALL + "'s 2-device steps at 32 (ms, each run; largest over smallest):")
holds = True
for r1 in runs[present[0]]["rows"] if len(present) == 3 else []:
    if r1["model"] != SMALL or r1["batch"] != 32 or r1["devices"] != 2 or r1["ranks"] != 1:
        continue
    ms = [next(r["measured_seconds"] for r in runs[k]["rows"] if r["model"] == SMALL and
               r["batch"] == 32 and r["config"] == r1["config"]) for k in present]
    ratio = max(ms) / min(ms)
    holds &= ratio <= 1.2
    print(f"   {r1['config']}: {', '.join(f'{m * 1e3:.3f}' for m in ms)}: {ratio:.2f}x")
print(f"   {'holds' if holds else 'FAILS'} at 1.2x" if len(present) == 3 else
      f"   not judged: {len(present)} runs")

rate = lambda x: x[1] / x[0] if x[0] else float("nan")
print(f"7. S: flagged {flagged[0]}, missed {flagged[1]} ({rate(flagged):.1%}); not flagged "
      f"{others[0]}, missed {others[1]} ({rate(others):.1%})")
if flagged[0] < 6 or len(present) < 3:
    print("   not judged: fewer than 6 flagged, or not all runs")
else:
    print(f"   {'holds' if rate(flagged) >= 2 * rate(others) else 'FAILS'}: flagged at least twice as often")
