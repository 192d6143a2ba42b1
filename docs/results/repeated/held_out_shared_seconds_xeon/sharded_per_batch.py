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
for b in sorted(old):
    o, n = old[b], new[b]
    print(f"  batch {b:5d}: old med|e| {statistics.median(map(abs,o)):5.1%} [{min(o):+.0%},{max(o):+.0%}]  new {statistics.median(map(abs,n)):5.1%} [{min(n):+.0%},{max(n):+.0%}]")
