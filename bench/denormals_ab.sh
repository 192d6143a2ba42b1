#!/usr/bin/env bash
# Denormal floats kept (`tandem train --keep-denormals`) against flushed (the default), one
# binary, interleaved: each epoch's milliseconds per step (--metrics-json) while an MLP of
# hidden widths LAYERS trains on Fashion-MNIST (scaled to [0, 1], as `tandem train` does)
# with OPTIMIZER (default rmsprop), on DEVICES devices (default 1) under mirrored, ROUNDS
# rounds (rounds alternate which runs first). Prints each epoch's median and range, and
# kept/flushed.
#   bench/denormals_ab.sh TANDEM [LAYERS] [BATCH] [EPOCHS] [ROUNDS]
# Extra `tandem train` options go in ARGS (e.g. ARGS="--limit-train 12800").
set -euo pipefail
tandem="$1" layers="${2:-256,256}" batch="${3:-32}" epochs="${4:-5}" rounds="${5:-3}"
devices="${DEVICES:-1}" optimizer="${OPTIMIZER:-rmsprop}"
# shellcheck disable=SC2206
extra=(${ARGS:-})
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  order=(flushed kept)
  ((round % 2)) || order=(kept flushed)
  for which in "${order[@]}"; do
    flag=()
    [[ "$which" == kept ]] && flag=(--keep-denormals)
    "$tandem" train --layers "$layers" --batch-size "$batch" --epochs "$epochs" --seed 1 \
      --devices "$devices" --optimizer "$optimizer" --limit-test 1000 --verbose 0 \
      --metrics-json "$tmp/m.json" \
      "${flag[@]}" "${extra[@]}" >/dev/null
    python3 - "$tmp/m.json" "$which" >>"$tmp/times.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
steps = j["train_steps"] // len(j["epochs"])
print(sys.argv[2], *(e["seconds"] / steps * 1e3 for e in j["epochs"]))
PY
  done
done
python3 - "$tmp/times.txt" "$layers" "$batch" "$devices" "$optimizer" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    which, *ms = line.split()
    t[which].append([float(m) for m in ms])
runs = len(t["kept"])
print(f"784-{sys.argv[2].replace(',', '-')}-10, batch {sys.argv[3]}, {sys.argv[4]} device(s), "
      f"{sys.argv[5]}, ms per step: median (min-max) of {runs} runs")
for e in range(len(t["kept"][0])):
    k = [r[e] for r in t["kept"]]
    f = [r[e] for r in t["flushed"]]
    mk, mf = statistics.median(k), statistics.median(f)
    print(f"epoch {e + 1}: kept {mk:.3f} ({min(k):.3f}-{max(k):.3f})  flushed {mf:.3f} "
          f"({min(f):.3f}-{max(f):.3f})  kept/flushed {mk / mf:.2f}")
PY
