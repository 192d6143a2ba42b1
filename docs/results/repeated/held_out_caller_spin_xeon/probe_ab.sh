#!/usr/bin/env bash
# The micro-shards probe, c6327d0 (before: no sums between passes) against 51f1ffb's
# build (after), interleaved, 6 rounds; each a refit of 784-256-256-10 by bench validate at
# batch 32 against p_ab.json. Run from this directory:
#   probe_ab.sh BEFORE_TANDEM AFTER_TANDEM OUT_DIR
set -euo pipefail
declare -A BIN=([before]="$1" [after]="$2")
out="$3"
for r in 1 2 3 4 5 6; do
  order=(before after)
  ((r % 2)) || order=(after before)
  for which in "${order[@]}"; do
    # Exits 1 when a configuration misses; only the refit's timings are read.
    "${BIN[$which]}" bench validate --hardware p_ab.json --models 256,256 --batches 32 \
      --repeats 1 --json "$out/ab_${which}_$r.json" >/dev/null 2>&1 || true
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows_want = (6, 12, 24, 48)
res = {"before": {}, "after": {}}
det = {"before": [], "after": []}
for which in res:
    for r in range(1, 7):
        j = json.load(open(f"{out}/ab_{which}_{r}.json"))
        for dr in j["profile"]["device"]["dense_rates"]:
            if dr["widths"] != [784, 256, 256, 10]:
                continue
            for s in dr["weight_grad_gemms"][0]["steps_at_once"]:
                if s["rows"] in rows_want:
                    m = s["median"]
                    res[which].setdefault(s["rows"], []).append(
                        (m["forward_micro"] + m["backward_micro"]) / (m["forward_alone"] + m["backward_alone"]))
        for row in j["rows"]:
            if row["deterministic"] and row["batch"] == 32:
                mp = row["measured_phases"]
                det[which].append((row["predicted_phases"]["compute"] * 1e6, (mp["forward"] + mp["backward"]) * 1e6))
print("micro-shards (2 per device) at once over one device alone, 784-256-256-10, median (min-max) of 6 refits")
for rows in rows_want:
    b, a = res["before"][rows], res["after"][rows]
    print(f"{rows:5d} rows: before {statistics.median(b):.2f} ({min(b):.2f}-{max(b):.2f})  "
          f"after {statistics.median(a):.2f} ({min(a):.2f}-{max(a):.2f})")
for w in det:
    p = [x for x, _ in det[w]]
    m = [y for _, y in det[w]]
    print(f"deterministic at 32, compute us: {w}: predicted {statistics.median(p):.0f} ({min(p):.0f}-{max(p):.0f}), "
          f"measured {statistics.median(m):.0f} ({min(m):.0f}-{max(m):.0f})")
PY
