# The figures of criteria.md 1-3 and 5b-5c from this set's files. 1-3: each run's calibration
# (pK.json) and its refits (the windows in cpu_runK.json's profile, which bench validate's
# refits wrote), each window judged as calibrate judges a profile's (a window whose slowest kept
# hand-off is over 3x the fastest of the windows on as many devices in the same file, or whose
# steal is over 5%); the waits; the shards' update at 256 KiB and 1 MiB. 5b-5c: the host steps
# of the runs recomputed by each build, DIR/BUILD_K.json for BUILD in model and H, each written
# by `tandem bench validate --recompute cpu_runK.json --json DIR/BUILD_K.json` by dca6e5d's
# build (H: with host_copies_rule.patch applied). Counts of configurations missed in most runs
# come from `tandem bench validate --recompute` itself. Run from this directory.
#   python3 criteria_figures.py DIR
import json, statistics, sys

APART, STEAL, POLL = 3.0, 0.05, 0.25
HOST = "2 devices host"
SMALL = "784-256-256-10"


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
        if w["handoff"] > APART * fastest or w["steal"] > STEAL:
            disturbed.append(f"{name} ({w['handoff'] * 1e9:.0f} ns against {fastest * 1e9:.0f})")
        if w.get("waits", 0) > 0:
            waited.append(f"{name} {w['waits'] * POLL:.2f} s, {w['redone']} again")
    kept = sum(w["kept"] for _, _, w in ws)
    redone = sum(w["redone"] for _, _, w in ws)
    print(f"   {where}: {len(ws)} windows, {kept} units kept, {redone} timed again; "
          f"disturbed: {', '.join(disturbed) or 'none'}; waited: {'; '.join(waited) or 'none'}")
    return len(disturbed)


kept_disturbed = 0
for k in (1, 2, 3):
    print(f"run {k}:")
    profile = json.load(open(f"p{k}.json"))
    kept_disturbed += judge("calibration", windows(profile))
    run = json.load(open(f"cpu_run{k}.json"))
    refits = [w for w in windows(run["profile"]) if w[1] != "update at once"]
    kept_disturbed += judge("refits", refits)
    shard = {u["bytes"]: u["shard"] for u in profile["device"]["update_contention"]}
    inside = all(2.0 <= shard[b] <= 5.0 for b in (256 << 10, 1 << 20))
    print(f"   3. shards' update {shard[256 << 10]:.2f}x at 256 KiB, {shard[1 << 20]:.2f}x at "
          f"1 MiB: {'inside' if inside else 'OUTSIDE'} 2.0-5.0")
    host = profile["device"].get("host_exchange", [])
    print("   host_exchange (us copy/sum): " +
          ", ".join(f"{e['bytes'] >> 10} KiB {e['copy'] * 1e6:.1f}/{e['sum'] * 1e6:.1f}" for e in host))
print(f"1. windows kept disturbed, all runs: {kept_disturbed}")

if len(sys.argv) > 1:
    directory = sys.argv[1]

    def host_errors(build, model=None):
        out = []
        for k in (1, 2, 3):
            for r in json.load(open(f"{directory}/{build}_{k}.json"))["rows"]:
                if r["config"] == HOST and (model is None or r["model"] == model):
                    out.append(r["predicted_seconds"] / r["measured_seconds"] - 1)
        return out

    def summary(e):
        return f"{statistics.median(map(abs, e)):.1%} (signed {statistics.median(e):+.1%}) of {len(e)}"

    for build in ("model", "H"):
        print(f"5b/5c. {build}: host steps {summary(host_errors(build))}; "
              f"{SMALL}'s {summary(host_errors(build, SMALL))}")
    print(f"   {SMALL}'s host step, measured exchange phase / H's copies (us), per run and batch:")
    for k in (1, 2, 3):
        cells = []
        for r in json.load(open(f"{directory}/H_{k}.json"))["rows"]:
            if r["config"] == HOST and r["model"] == SMALL:
                p = r["predicted_phases"]
                cells.append(f"{r['batch']}: {r['measured_phases']['allreduce'] * 1e6:.0f}/"
                             f"{(p['weights_to_devices'] + p['gradients_to_host']) * 1e6:.0f}")
        print(f"   run {k}: {', '.join(cells)}")
