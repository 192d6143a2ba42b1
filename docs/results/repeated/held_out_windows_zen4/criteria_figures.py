# criteria.md 1-3 from this set's files: each run's profile (pK.json, as bench validate
# recorded it in cpu_runK.json) judged as calibrate judges it (disturbed_windows: a window whose
# slowest kept hand-off is over 3x the fastest of every window on as many devices, or whose
# steal is over 5%), its shards' update at 256 KiB and 1 MiB, and placement.json's samples.
# Run from this directory.
#   python3 criteria_figures.py
import json, statistics

APART, STEAL = 3.0, 0.05


def windows(profile):
    d = profile["device"]
    out = []
    if "update_contention_window" in d:
        out.append((d["update_contention_devices"], "update at once", d["update_contention_window"]))
    for rate in d.get("dense_rates", []):
        for w in rate.get("weight_grad_gemms", []):
            if "window" in w:
                name = "steps of " + "-".join(map(str, rate["widths"]))
                out.append((w["devices"], name, w["window"]))
    return out


for k in (1, 2, 3):
    profile = json.load(open(f"p{k}.json"))
    ws = windows(profile)
    disturbed = []
    for devices, name, w in ws:
        fastest = min(x["best_handoff"] for n, _, x in ws if n == devices)
        if w["handoff"] > APART * fastest or w["steal"] > STEAL:
            disturbed.append(f"{name} ({w['handoff'] * 1e9:.0f} ns against {fastest * 1e9:.0f})")
    redone = sum(w["redone"] for _, _, w in ws)
    kept = sum(w["kept"] for _, _, w in ws)
    shard = {u["bytes"]: u["shard"] for u in profile["device"]["update_contention"]}
    inside = all(2.0 <= shard[b] <= 5.0 for b in (256 << 10, 1 << 20))
    print(f"run {k}: 1. {len(ws)} windows, {kept} units kept, {redone} timed again; disturbed: "
          f"{', '.join(disturbed) or 'none'}; 2. shards' update {shard[256 << 10]:.2f}x at 256 KiB, "
          f"{shard[1 << 20]:.2f}x at 1 MiB: {'inside' if inside else 'OUTSIDE'} 2.0-5.0")

placement = json.load(open("placement.json"))
samples = placement["samples"]
apart = [s for s in samples if s["apart"]]
near = [s for s in samples if not s["apart"]]
longest = run = 0
for s in samples:
    run = run + 1 if s["apart"] else 0
    longest = max(longest, run)
print(f"3. placement: {len(samples)} samples, {len(apart)} apart ({len(apart) / len(samples):.1%}), "
      f"longest run {longest}; fastest {placement['fastest_handoff'] * 1e9:.0f} ns; near "
      f"{min(s['handoff'] for s in near) * 1e9:.0f}-{max(s['handoff'] for s in near) * 1e9:.0f} ns; "
      f"shards' update {statistics.median(s['shard_ratio'] for s in near):.2f}x near, "
      + (f"{statistics.median(s['shard_ratio'] for s in apart):.2f}x apart" if apart else "none apart"))
