# Median |step error| of the 2-device sharded steps at batch 32 over recomputed runs (--json of
# bench validate --recompute RUN), and each one.
import json, statistics, sys
errs = []
for f in sys.argv[1:]:
    j = json.load(open(f))
    for r in j["rows"]:
        if r["config"] == "2 devices mirrored (sharded)" and r["batch"] == 32 and r["ranks"] == 1:
            e = r["predicted_seconds"] / r["measured_seconds"] - 1
            errs.append(abs(e))
            print(f"  {f.split('/')[-1]} {r['model']:<40} {e:+.1%}")
print(f"median |step error| over {len(errs)}: {statistics.median(errs):.1%}")
