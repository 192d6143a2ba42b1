#!/usr/bin/env bash
# tandem calibrate under mpirun: every rank measures the all-reduce link between them, rank 0
# alone measures one device and writes the profile, with rank_rank and its source; advise
# then predicts MPI ranks from it, and bench validate under mpirun measures 2 ranks (float32,
# bf16, deterministic) against one device. No timing is asserted: only that figures were
# measured and compared (tolerances of 1e9; the exit code on a miss is checked without MPI
# in tests/cli).
source "$(dirname "$0")/common.sh"

"${MPIRUN[@]}" -np 2 "$TANDEM" calibrate --allow-disturbed --quiet-wait 0 --out "$WORK/p.json" --layers 256 --rows 16,2048 \
  --steps 1 --repeats 1 > "$WORK/out" 2> "$WORK/err" || { cat "$WORK/err"; fail "calibrate failed"; }
expect_in "$WORK/out" "2 ranks: all-reduce link"
[ "$(grep -c "wrote the profile" "$WORK/out")" -eq 1 ] || fail "not exactly one rank wrote"
python3 - "$WORK/p.json" <<'PY' || fail "the profile lacks the link between ranks"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["rank_rank"]["bandwidth"] > 0 and p["rank_rank"]["latency"] >= 0, p["rank_rank"]
assert "MPI ranks" in p["sources"]["rank_rank"], p["sources"]["rank_rank"]
sweep = p["measurements"]["allreduce_sweep"]
assert len(sweep) == 8 and all(s["seconds"] > 0 and s["bf16_seconds"] > 0 for s in sweep), sweep
assert all(s["deterministic_seconds"] > 0 and s["deterministic_cold_seconds"] > 0 for s in sweep), sweep
assert p["measurements"]["allreduce_sweep_ranks"] == 2, p["measurements"]
PY
expect_in "$WORK/out" "ms deterministic ("
expect_in "$WORK/out" "caches emptied first:"
"$TANDEM" advise --hardware "$WORK/p.json" --layers 256 --strategy mirrored --devices 1 \
  --ranks 2 > "$WORK/advise" 2>&1 || { cat "$WORK/advise"; fail "advise could not read it"; }
expect_in "$WORK/advise" "simulated as: MPI hierarchical (2 ranks"

"${MPIRUN[@]}" -np 2 "$TANDEM" bench validate --hardware "$WORK/p.json" --models 256 \
  --batches 64 --steps 1 --repeats 1 --calibration-rows 16,2048 --quiet-wait 0 --speedup-tolerance 1e9 --step-tolerance 1e9 \
  --bucket-mb 0.5 --json "$WORK/v.json" > "$WORK/out" 2> "$WORK/err" || { cat "$WORK/err"; fail "validate failed"; }
expect_in "$WORK/out" "2 ranks bf16"
expect_in "$WORK/out" "2 ranks 0.5 MB buckets"
expect_in "$WORK/out" "all 5 configurations within tolerance"
expect_in "$WORK/out" "advice a bucket size over the default"
expect_in "$WORK/out" "with 2 ranks computing at once:"
python3 - "$WORK/v.json" <<'PY' || fail "the validation run lacks its rank rows"
import json, sys
run = json.load(open(sys.argv[1]))
rows = run["rows"]
# The model's steps measured again alone and with both ranks at once, both kept as curves.
curve = [c for c in run["profile"]["device"]["dense_rates"] if c["widths"] == [784, 256, 10]]
assert len(curve) == 1 and curve[0]["ranks"] == 2, curve
for points in (curve[0]["points"], curve[0]["ranks_points"]):
    assert [p["rows"] for p in points] == [16, 2048] and all(p["compute_seconds"] > 0 for p in points), curve
assert len(run["calibrations"][0]["steps_ranks_at_once"]) == 2, run["calibrations"]
assert [(r["ranks"], r["bf16"], r["deterministic"], r["bucket_mb"]) for r in rows] == [
    (1, False, False, 0), (2, False, False, 0), (2, True, False, 0), (2, False, True, 0),
    (2, False, False, 0.5)], rows
assert rows[2]["algorithm"] == "MPI hierarchical", rows[2]
PY
"$TANDEM" bench validate --recompute "$WORK/v.json" --speedup-tolerance 1e9 \
  --step-tolerance 1e9 > "$WORK/out" 2>&1 || { cat "$WORK/out"; fail "recompute failed"; }
expect_in "$WORK/out" "2 ranks deterministic"
# Without the link between ranks a profile cannot predict them.
"${MPIRUN[@]}" -np 2 "$TANDEM" calibrate --allow-disturbed --quiet-wait 0 --out "$WORK/one.json" --layers 256 --rows 16,2048 \
  --steps 1 --repeats 1 > /dev/null 2>&1 || fail "calibrate failed"
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); del p['rank_rank']; json.dump(p, open(sys.argv[1], 'w'))" "$WORK/one.json"
status=0
"${MPIRUN[@]}" -np 2 "$TANDEM" bench validate --hardware "$WORK/one.json" --models 256 \
  --batches 64 > "$WORK/out" 2> "$WORK/err" || status=$?
[ "$status" -ne 0 ] || fail "validate ran ranks without a rank_rank link"
expect_in "$WORK/err" "has no rank_rank link"

# A plan that cannot be measured fails on every rank before anything is measured.
status=0
"${MPIRUN[@]}" -np 2 "$TANDEM" calibrate --out "$WORK/q.json" --rows 64,64 \
  > "$WORK/out" 2> "$WORK/err" || status=$?
[ "$status" -ne 0 ] || fail "a bad --rows was accepted"
expect_in "$WORK/err" "--rows needs at least two different row counts"
[ ! -e "$WORK/q.json" ] || fail "a failed calibration wrote its profile"
echo "PASS"
