# Median |step error| of the 2-device sharded steps per batch, and their range, over a set's
# runs recomputed by two builds (--json of bench validate --recompute RUN):
#   python3 sharded_per_batch.py OLD1.json,OLD2.json,... NEW1.json,NEW2.json,...
import json, statistics, sys, collections
def errs(files):
    d = collections.defaultdict(list)
    for f in files:
        for r in json.load(open(f))["rows"]:
            if r["config"] == "2 devices mirrored (sharded)" and r["ranks"] == 1:
                d[r["batch"]].append(r["predicted_seconds"] / r["measured_seconds"] - 1)
    return d
old, new = errs(sys.argv[1].split(",")), errs(sys.argv[2].split(","))


def summary(e):
    """Median |error| and the range."""
    return f"{statistics.median(map(abs, e)):5.1%} [{min(e):+.0%},{max(e):+.0%}]"


for b in sorted(old):
    print(f"  batch {b:5d}: old med|e| {summary(old[b])}  new {summary(new[b])}")
