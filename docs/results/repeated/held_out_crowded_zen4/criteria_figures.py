# The figures of criteria.md 1-4 and 6 from this set's files (5, the configurations missed in
# most runs, comes from `tandem bench validate --recompute cpu_run1.json cpu_run2.json
# cpu_run3.json` itself). 1: placement.json's samples, near (a hand-off within 3x the run's
# fastest) and crowded (a cache reading over 1.4x the run's fastest) or not. 2: each run's
# calibration (pK.json) and refits (the windows in cpu_runK.json's profile), each judged as
# calibrate judges a profile's (a slowest kept hand-off over 3x the fastest of the windows on
# as many devices in the same file, steal over 5%, or a slowest kept cache reading over 1.4x the
# fastest of those windows that have one). 3: every kept repetition's window in cpu_runK.json,
# against the run's fastest hand-off and cache reading (concurrency_probes). 4: 784-256-256-10's
# 2-device configurations at 32 over the three runs. 6: times.log. Run from this directory.
#   python3 criteria_figures.py
import json, os, statistics

APART, STEAL, CROWDED, POLL = 3.0, 0.05, 1.4, 0.25
SMALL = "784-256-256-10"

p = json.load(open("placement.json"))
fast_h, fast_c = p["fastest_handoff"], p["fastest_cache"]
near = [s for s in p["samples"] if s["handoff"] <= APART * fast_h]
crowded = [s for s in near if s["cache"] > CROWDED * fast_c]
quiet = [s for s in near if s["cache"] <= CROWDED * fast_c]
med = lambda v: statistics.median(v) if v else float("nan")
two_c, two_q = med([s["two_devices"] for s in crowded]), med([s["two_devices"] for s in quiet])
one_c, one_q = med([s["one_device"] for s in crowded]), med([s["one_device"] for s in quiet])
n = len(p["samples"])
print(f"1. placement: {n} samples, {n - len(near)} apart, {len(crowded)} crowded "
      f"({len(crowded) / n:.1%}), {len(quiet)} near and not crowded; fastest hand-off "
      f"{fast_h * 1e9:.0f} ns, cache {fast_c * 1e6:.2f} us")
print(f"   2 devices at 32: crowded {two_c * 1e3:.3f} ms, not {two_q * 1e3:.3f} ms: "
      f"{two_c / two_q - 1:+.1%} ({'holds' if two_c >= 1.10 * two_q else 'FAILS'} at +10%); "
      f"1 device: {one_c * 1e3:.3f} against {one_q * 1e3:.3f} ms ({one_c / one_q - 1:+.1%})")
print("   shards' update: crowded %.2fx, not %.2fx, apart %.2fx" % (
    med([s["shard_ratio"] for s in crowded]), med([s["shard_ratio"] for s in quiet]),
    med([s["shard_ratio"] for s in p["samples"] if s["handoff"] > APART * fast_h])))


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
        caches = [x["best_cache"] for n, _, x in ws if n == devices and "best_cache" in x]
        why = []
        if w["handoff"] > APART * fastest:
            why.append(f"{w['handoff'] * 1e9:.0f} ns against {fastest * 1e9:.0f}")
        if w["steal"] > STEAL:
            why.append(f"steal {w['steal']:.1%}")
        if "cache" in w and w["cache"] > CROWDED * min(caches):
            why.append(f"cache {w['cache'] * 1e6:.1f} us against {min(caches) * 1e6:.1f}")
        if why:
            disturbed.append(f"{name} ({', '.join(why)})")
        if w.get("waits", 0) > 0:
            waited.append(f"{name} {w['waits'] * POLL:.2f} s, {w['redone']} again")
    kept = sum(w["kept"] for _, _, w in ws)
    redone = sum(w["redone"] for _, _, w in ws)
    print(f"   {where}: {len(ws)} windows, {kept} units kept, {redone} timed again; "
          f"disturbed: {', '.join(disturbed) or 'none'}; waited: {'; '.join(waited) or 'none'}")
    return len(disturbed)


runs = {}
present = [k for k in (1, 2, 3) if os.path.exists(f"cpu_run{k}.json")]
for k in present:
    print(f"run {k}:")
    kept_disturbed = judge("2. calibration", windows(json.load(open(f"p{k}.json"))))
    run = runs[k] = json.load(open(f"cpu_run{k}.json"))
    refits = [w for w in windows(run["profile"]) if w[1] != "update at once"]
    kept_disturbed += judge("2. refits", refits)
    cp = run["concurrency_probes"]
    bh, bc = cp["best_handoff"], cp["best_cache"]
    reps = apart = taken = crowd = 0
    for r in run["rows"]:
        for h, s, c in zip(r["handoff_per_repetition"], r["steal_per_repetition"],
                           r["cache_per_repetition"]):
            reps += 1
            apart += h > APART * bh
            taken += s > STEAL
            crowd += c > CROWDED * bc
    disturbed = sum(1 for r in run["rows"] for h, s, c in zip(
        r["handoff_per_repetition"], r["steal_per_repetition"], r["cache_per_repetition"])
        if h > APART * bh or s > STEAL or c > CROWDED * bc)
    redone = sum(r["redone"] for r in run["rows"])
    waits = sum(w["window"]["waits"] for w in run["measured_windows"])
    print(f"   3. repetitions: {disturbed} of {reps} kept disturbed ({disturbed / reps:.1%}: "
          f"{apart} apart, {taken} taken, {crowd} crowded; "
          f"{'holds' if disturbed < 0.10 * reps else 'FAILS'} under 10%); {redone} timed again, "
          f"{waits * POLL:.2f} s of polls; fastest hand-off {bh * 1e9:.0f} ns, cache {bc * 1e6:.2f} us")
    for w in run["measured_windows"]:
        x = w["window"]
        print(f"      {w['model']}: kept {x['kept']}, again {x['redone']}, polls {x['waits']}")
    print(f"   2. windows kept disturbed in run {k}: {kept_disturbed}")

print("4. " + SMALL + "'s 2-device steps at 32 (ms, each run; largest over smallest):")
holds = True
for r1 in runs[1]["rows"] if len(present) > 1 else []:
    if r1["model"] != SMALL or r1["batch"] != 32 or r1["devices"] != 2 or r1["ranks"] != 1:
        continue
    ms = [next(r["measured_seconds"] for r in runs[k]["rows"] if r["model"] == SMALL and
               r["batch"] == 32 and r["config"] == r1["config"]) for k in present]
    ratio = max(ms) / min(ms)
    holds &= ratio <= 1.2
    print(f"   {r1['config']}: {', '.join(f'{m * 1e3:.3f}' for m in ms)}: {ratio:.2f}x")
print(f"   {'holds' if holds else 'FAILS'} at 1.2x" if len(present) > 1 else
      f"   not judged: {len(present)} run")
print("6. times.log:")
print(open("times.log").read().rstrip())
