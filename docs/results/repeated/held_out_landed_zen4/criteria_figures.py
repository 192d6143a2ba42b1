# The figures of criteria.md 3-5 from this set's runs recomputed by each build:
# DIR/BUILD_K.json for BUILD in model, seconds_alone, ratio_alone, cold and K in 1 2 3, each
# written by `tandem bench validate --recompute cpu_runK.json --json DIR/BUILD_K.json` by the
# build of b4a1e06 with the patch of that name applied (none for `model`; `cold` is
# ../held_out_allreduce_xeon/cold_allreduce_rule.patch). Counts of
# configurations missed in most runs come from `tandem bench validate --recompute` itself.
#   python3 criteria_figures.py DIR
import functools, glob, json, os, statistics, sys

directory = sys.argv[1]
SHARDED = "2 devices mirrored (sharded)"
ALLREDUCE = "2 devices mirrored (allreduce)"
SMALL, WIDE, SEED = "784-256-256-10", "784-8192-10", "784-4096-2048-512-64-10"


@functools.lru_cache(maxsize=None)
def runs(build):
    files = sorted(glob.glob(os.path.join(directory, f"{build}_[123].json")))
    if len(files) != 3:
        sys.exit(f"expected {build}_1..3.json in {directory}, found {files}")
    return [[r for r in json.load(open(f))["rows"] if r["ranks"] == 1] for f in files]


def step_errors(build, config_prefix, batch=None):
    return [r["predicted_seconds"] / r["measured_seconds"] - 1 for rows in runs(build) for r in rows
            if r["config"].startswith(config_prefix) and (batch is None or r["batch"] == batch)]


def summary(e):
    return (f"median |err| {statistics.median(map(abs, e)):.1%} (signed {statistics.median(e):+.1%}, "
            f"{min(e):+.0%} to {max(e):+.0%}) of {len(e)}")


print("3. the 2-device sharded steps (48):")
for build in ("model", "seconds_alone", "ratio_alone"):
    print(f"   {build:14s} {summary(step_errors(build, SHARDED))}")
    for batch in (32, 128, 512, 2048):
        print(f"      at {batch:4d}: {summary(step_errors(build, SHARDED, batch))}")
print("4. the 2-device all-reduce steps (144), and the 36 at 32:")
for build in ("model", "cold"):
    print(f"   {build:6s} {summary(step_errors(build, ALLREDUCE))}")
    print(f"   {build:6s} at 32: {summary(step_errors(build, ALLREDUCE, 32))}")
def row(rows, model_name, batch, config):
    return next(r for r in rows
                if r["model"] == model_name and r["batch"] == batch and r["config"] == config)


print("5. recorded")
model = runs("model")
print("   784-256-256-10's optimizer phase, measured ms (sharded / deterministic / host / all-reduce):")
for k, rows in enumerate(model, 1):
    for batch in (32, 128, 512, 2048):
        cells = []
        for config in (SHARDED, "2 devices mirrored deterministic", "2 devices host", ALLREDUCE):
            r = row(rows, SMALL, batch, config)
            cells.append(f"{r['measured_phases'].get('optimizer', 0) * 1e3:.3f}")
        print(f"      run {k} at {batch:4d}: {' / '.join(cells)}")


def compute_ratio(rows, model_name, batch, config):
    r = row(rows, model_name, batch, config)
    m = r["measured_phases"]
    return (m["forward"] + m["backward"]) * 1e3, r["predicted_phases"]["compute"] * 1e3, \
        r["predicted_seconds"] / r["measured_seconds"] - 1


for name, batch, config in ((SEED, 32, "2 devices mirrored deterministic"), (WIDE, 32, SHARDED),
                            (WIDE, 32, ALLREDUCE), (SMALL, 32, "2 devices host")):
    print(f"   {name} {config} at {batch}: forward+backward measured / compute predicted (ms), step error")
    for k, rows in enumerate(model, 1):
        measured, predicted, step = compute_ratio(rows, name, batch, config)
        print(f"      run {k}: {measured:.3f} / {predicted:.3f} (measured over predicted "
              f"{measured / predicted:.3f}), step {step:+.1%}")
