#!/usr/bin/env bash
# Two tandem binaries on one model's training step, interleaved: the second epoch's
# seconds per step (--metrics-json) on DEVICES devices (default 1) of one thread each under
# STRATEGY (default mirrored) with OPTIMIZER (default sgd), on RANKS MPI ranks (default 1: no
# mpirun; more: mpirun -np RANKS, each rank with DEVICES devices), ROUNDS rounds, then each
# batch's median, range and old/new ratio. Rounds alternate which binary runs first; run it
# with the same binary twice to see the machine's own spread. MODEL: a built-in model or a
# saved one (train --model), or dense:W,W,... for an MLP of those hidden widths (--layers).
#   bench/ab_convnet_step.sh OLD_TANDEM NEW_TANDEM [MODEL] [ROUNDS] [BATCHES...]
set -euo pipefail
old="$1" new="$2" model="${3:-mnist-convnet}" rounds="${4:-5}"
devices="${DEVICES:-1}" strategy="${STRATEGY:-mirrored}" ranks="${RANKS:-1}"
optimizer="${OPTIMIZER:-sgd}"
batches=("${@:5}")
((${#batches[@]})) || batches=(64 128)
model_args=(--model "$model")
[[ "$model" == dense:* ]] && model_args=(--layers "${model#dense:}")
launch=()
if ((ranks > 1)); then
  launch=(mpirun --oversubscribe -np "$ranks")
  ((EUID)) || launch+=(--allow-run-as-root)
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  order=(old new)
  ((round % 2)) || order=(new old)  # alternate who runs first: no order bias
  for b in "${batches[@]}"; do
    for which in "${order[@]}"; do
      "${launch[@]}" "${!which}" train "${model_args[@]}" --dataset synthetic --epochs 2 --optimizer "$optimizer" \
        --batch-size "$b" --devices "$devices" --strategy "$strategy" --threads-per-device 1 \
        --metrics-json "$tmp/m.json" \
        >/dev/null
      python3 - "$tmp/m.json" "$which" "$b" >>"$tmp/times.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
steps = j["train_steps"] // len(j["epochs"])
print(sys.argv[2], sys.argv[3], j["epochs"][-1]["seconds"] / steps * 1e3)
PY
    done
  done
done
python3 - "$tmp/times.txt" "$model" "$devices" "$strategy" "$ranks" "$optimizer" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    which, batch, ms = line.split()
    t[(which, int(batch))].append(float(ms))
print(f"{sys.argv[2]}, {sys.argv[5]} rank(s) x {sys.argv[3]} device(s) x 1 thread, {sys.argv[4]}, {sys.argv[6]}, ms per step: median (min-max) of {len(t[next(iter(t))])}")
for b in sorted({b for _, b in t}):
    o, n = t[("old", b)], t[("new", b)]
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"batch {b}: old {mo:.2f} ({min(o):.2f}-{max(o):.2f})  new {mn:.2f} "
          f"({min(n):.2f}-{max(n):.2f})  old/new {mo / mn:.2f}")
PY
