# The figures of criteria.md 2-5 from this set's runs recomputed by each build:
# DIR/BUILD_K.json for BUILD in model, A, B, AB (and probe, after the fact) and K in 1 2 3, each
# written by `tandem bench validate --recompute cpu_runK.json --json DIR/BUILD_K.json` by the
# build of 483df40 with the patch of that name applied (none for `model`; A
# probe_wait_rule.patch, B own_steps_rule.patch, AB own_steps_probe_wait_rule.patch, probe
# ../held_out_allreduce_xeon/allreduce_rule.patch). Counts of configurations missed in most runs
# come from `tandem bench validate --recompute` itself. Run from this directory.
#   python3 criteria_figures.py DIR [BUILD...]
import functools, glob, json, os, statistics, sys

directory, builds = sys.argv[1], sys.argv[2:] or ["model", "A", "B", "AB"]
ALLREDUCE, HOST = "2 devices mirrored (allreduce)", "2 devices host"


@functools.lru_cache(maxsize=None)
def runs(build):
    files = sorted(glob.glob(os.path.join(directory, f"{build}_[123].json")))
    if len(files) != 3:
        sys.exit(f"expected {build}_1..3.json in {directory}, found {files}")
    return [[r for r in json.load(open(f))["rows"] if r["ranks"] == 1] for f in files]


def errors(build, config, batch=None, exact=False, compute=False):
    out = []
    for rows in runs(build):
        for r in rows:
            if not (r["config"] == config if exact else r["config"].startswith(config)):
                continue
            if batch is not None and r["batch"] != batch:
                continue
            if compute:
                m = r["measured_phases"]
                out.append(r["predicted_phases"]["compute"] / (m["forward"] + m["backward"]) - 1)
            else:
                out.append(r["predicted_seconds"] / r["measured_seconds"] - 1)
    return out


def summary(e):
    return f"{statistics.median(map(abs, e)):.1%} (signed {statistics.median(e):+.1%}) of {len(e)}"


for build in builds:
    print(f"{build}:")
    print(f"   all-reduce steps {summary(errors(build, ALLREDUCE))}; "
          f"at 32 {summary(errors(build, ALLREDUCE, 32))}")
    print(f"   host steps {summary(errors(build, HOST, exact=True))}; "
          f"at 32 {summary(errors(build, HOST, 32, exact=True))}")
    at_32 = errors(build, ALLREDUCE, 32, compute=True) + errors(build, HOST, 32, True, True)
    print(f"   compute of the all-reduce and host steps at 32 {summary(at_32)}")
print("5. each calibration's own over alone / wait_own (us), medians of the rounds:")
for k in (1, 2, 3):
    profile = json.load(open(f"cpu_run{k}.json"))["profile"]
    for c in profile["device"]["dense_rates"]:
        cells = []
        for a in c["weight_grad_gemms"][0]["steps_at_once"]:
            m = a["median"]
            own = (m["forward_own"] + m["backward_own"]) / (m["forward_alone"] + m["backward_alone"])
            cells.append(f"{a['rows']}: {own:.2f}/{m['wait_own'] * 1e6:.0f}")
        print(f"   run {k} {'-'.join(map(str, c['widths']))}: {', '.join(cells)}")
print("   the all-reduce phase (default buckets), measured / model / A, ms, medians of the runs:")
for name in sorted({r["model"] for r in runs("model")[0]}):
    cells = []
    for batch in (32, 128, 512, 2048):
        def phase(build, measured):
            return statistics.median(
                (r["measured_phases"] if measured else r["predicted_phases"])["allreduce"] * 1e3
                for rows in runs(build) for r in rows
                if r["model"] == name and r["batch"] == batch and r["config"] == ALLREDUCE)
        cells.append(f"{batch}: {phase('model', True):.3f}/{phase('model', False):.3f}/"
                     f"{phase('A', False):.3f}")
    print(f"   {name}: {', '.join(cells)}")
