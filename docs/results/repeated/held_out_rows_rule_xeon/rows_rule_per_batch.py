# The per-batch table of docs/SCALING.md, "The rule by rows, landed": the median |step error| of
# the 2-device sharded steps, their range and signed median, per batch and over all four, of
# runs recomputed by the build before (before_SET_K.json) and by the rule's (now_SET_K.json),
# each written by `tandem bench validate --recompute SET/cpu_runK.json --json OUT`; then each
# set's medians per batch, before/now.
#   python3 rows_rule_per_batch.py DIR SET,SET,...
import collections, glob, json, os, statistics, sys

directory, sets = sys.argv[1], sys.argv[2].split(",")


def errors(build, chosen):
    by_batch = collections.defaultdict(list)
    for name in chosen:
        files = sorted(glob.glob(os.path.join(directory, f"{build}_{name}_*.json")))
        if not files:
            sys.exit(f"no {build}_{name}_*.json in {directory}")
        for f in files:
            for r in json.load(open(f))["rows"]:
                if r["config"] == "2 devices mirrored (sharded)" and r["ranks"] == 1:
                    by_batch[r["batch"]].append(r["predicted_seconds"] / r["measured_seconds"] - 1)
    return by_batch


def summary(e):
    return (f"{statistics.median(map(abs, e)):5.1%} ({min(e):+.0%} to {max(e):+.0%}; "
            f"{statistics.median(e):+.1%}) of {len(e)}")


before, now = errors("before", sets), errors("now", sets)
for batch in sorted(before):
    print(f"{batch:5d}: before {summary(before[batch])} | now {summary(now[batch])}")
print(f"  all: before {summary(sum(before.values(), []))} | now {summary(sum(now.values(), []))}")
for name in sets:
    b, n = errors("before", [name]), errors("now", [name])
    cells = (f"{k}: {statistics.median(map(abs, b[k])):.1%}/{statistics.median(map(abs, n[k])):.1%}"
             for k in sorted(b))
    print(f"  {name:30s} " + "  ".join(cells))
