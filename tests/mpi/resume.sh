#!/usr/bin/env bash
# Checkpoints and --resume in one process and across ranks: a run stopped after 2 of 4
# epochs (epoch checkpoints) and resumed equals the uninterrupted run bit for bit
# (deterministic mode), in one process and with 2 ranks; the newest 3 are kept; --resume
# without a checkpoint starts from the beginning; a checkpoint from another model is
# refused with a message naming both.
source "$(dirname "$0")/common.sh"
common=(train --limit-train 1024 --limit-test 100 --batch-size 64 --seed 9 --layers 128,64
        --deterministic --verbose 0)

"$TANDEM" "${common[@]}" --epochs 4 --threads-per-device 1 --save "$WORK/reference.tandem" \
  > /dev/null
for np in 1 2; do
  dir="$WORK/ckpt$np"
  "${MPIRUN[@]}" -np $np "$TANDEM" "${common[@]}" --epochs 2 --checkpoint-dir "$dir" \
    --checkpoint-every 1 --metrics-json "$WORK/m$np.json" > /dev/null
  [ "$(ls "$dir")" = "$(printf 'ckpt-000000016.tandem\nckpt-000000032.tandem')" ] ||
    fail "unexpected checkpoints: $(ls "$dir")"
  "${MPIRUN[@]}" -np $np "$TANDEM" "${common[@]}" --epochs 4 --checkpoint-dir "$dir" \
    --checkpoint-every 1 --resume --save "$WORK/resumed$np.tandem" > "$WORK/out" 2> "$WORK/err"
  "$WEIGHTS_DIFF" "$WORK/reference.tandem" "$WORK/resumed$np.tandem" 0 ||
    fail "$np rank(s): resumed weights differ from the uninterrupted run's"
  [ "$(ls "$dir" | wc -l)" -eq 3 ] || fail "expected the newest 3 checkpoints kept: $(ls "$dir")"
done

# Resume with no checkpoint yet: a note, then a normal run from the start.
"$TANDEM" "${common[@]}" --epochs 1 --checkpoint-dir "$WORK/empty" --resume > "$WORK/out" \
  2> "$WORK/err"
expect_in "$WORK/err" "no intact checkpoint in $WORK/empty; starting from the beginning"

# Another model's checkpoint: refused, naming the file and what differs.
status=0
"$TANDEM" "${common[@]/128,64/128,32}" --epochs 4 --checkpoint-dir "$WORK/ckpt1" --resume \
  > "$WORK/out" 2> "$WORK/err" || status=$?
[ $status -eq 2 ] || fail "resuming another model's checkpoint: exit $status, expected 2"
expect_in "$WORK/err" "cannot resume from $WORK/ckpt1/ckpt-000000064.tandem: its architecture differs"
echo "PASS"
