# The figures of criteria.md 2-4 from this set's runs recomputed by each build:
# DIR/BUILD_K.json for BUILD in model, A, C and K in 1 2 3, each written by
# `tandem bench validate --recompute cpu_runK.json --json DIR/BUILD_K.json` by the build of
# 05340fa with the patch of that name applied (none for `model`; A
# ../held_out_allreduce_xeon/allreduce_rule.patch, C own_exchange_rule.patch). Counts of
# configurations missed in most runs come from `tandem bench validate --recompute` itself. Run
# from this directory.
#   python3 criteria_figures.py DIR [BUILD...]
import functools, glob, json, os, statistics, sys

directory, builds = sys.argv[1], sys.argv[2:] or ["model", "A", "C"]
ALLREDUCE = "2 devices mirrored (allreduce)"


@functools.lru_cache(maxsize=None)
def runs(build):
    files = sorted(glob.glob(os.path.join(directory, f"{build}_[123].json")))
    if len(files) != 3:
        sys.exit(f"expected {build}_1..3.json in {directory}, found {files}")
    return [[r for r in json.load(open(f))["rows"] if r["ranks"] == 1] for f in files]


def errors(build, batch=None, phase=False):
    out = []
    for rows in runs(build):
        for r in rows:
            if not r["config"].startswith(ALLREDUCE):
                continue
            if batch is not None and r["batch"] != batch:
                continue
            if phase:
                out.append(r["predicted_phases"]["allreduce"] / r["measured_phases"]["allreduce"] - 1)
            else:
                out.append(r["predicted_seconds"] / r["measured_seconds"] - 1)
    return out


def summary(e):
    return f"{statistics.median(map(abs, e)):.1%} (signed {statistics.median(e):+.1%}) of {len(e)}"


for build in builds:
    print(f"{build}:")
    print(f"   all-reduce steps {summary(errors(build))}; at 32 {summary(errors(build, 32))}")
    print(f"   all-reduce phase {summary(errors(build, phase=True))}; "
          f"at 32 {summary(errors(build, 32, True))}")
print("4. each run's exchange_own / wait_own (us) as its refits timed them, medians of the rounds:")
for k in (1, 2, 3):
    profile = json.load(open(f"cpu_run{k}.json"))["profile"]
    for c in profile["device"]["dense_rates"]:
        cells = []
        for a in c["weight_grad_gemms"][0]["steps_at_once"]:
            m = a["median"]
            cells.append(f"{a['rows']}: {m['exchange_own'] * 1e6:.0f}/{m['wait_own'] * 1e6:.0f}")
        print(f"   run {k} {'-'.join(map(str, c['widths']))}: {', '.join(cells)}")
print("   the all-reduce phase, measured / model / A / C, ms, medians of the runs and bucket "
      "settings:")
for name in sorted({r["model"] for r in runs("model")[0]}):
    cells = []
    for batch in (32, 128, 512, 2048):
        def phase(build, measured):
            return statistics.median(
                (r["measured_phases"] if measured else r["predicted_phases"])["allreduce"] * 1e3
                for rows in runs(build) for r in rows
                if r["model"] == name and r["batch"] == batch and r["config"].startswith(ALLREDUCE))
        cells.append(f"{batch}: {phase('model', True):.3f}/{phase('model', False):.3f}/"
                     f"{phase('A', False):.3f}/{phase('C', False):.3f}")
    print(f"   {name}: {', '.join(cells)}")
