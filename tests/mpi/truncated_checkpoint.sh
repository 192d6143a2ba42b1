#!/usr/bin/env bash
# The newest checkpoint is truncated (a crash mid-copy, a full disk) and the one before it
# corrupted in the middle: --resume reports each, naming the file and offset, falls back
# to the newest intact one, and still ends with the uninterrupted run's weights.
source "$(dirname "$0")/common.sh"
common=(train --limit-train 1024 --limit-test 100 --batch-size 64 --seed 4 --layers 128,64
        --deterministic --verbose 0 --epochs 2)
dir="$WORK/ckpt"

"$TANDEM" "${common[@]}" --threads-per-device 1 --save "$WORK/reference.tandem" > /dev/null
"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" --checkpoint-dir "$dir" --checkpoint-every 4steps \
  --keep-checkpoints 4 > /dev/null
ls "$dir"
newest="$dir/ckpt-000000032.tandem"
second="$dir/ckpt-000000028.tandem"
third="$dir/ckpt-000000024.tandem"
[ -f "$newest" ] && [ -f "$second" ] && [ -f "$third" ] || fail "checkpoints missing: $(ls "$dir")"
truncate -s $(($(stat -c %s "$newest") / 2)) "$newest"
printf 'garbage' | dd of="$second" bs=1 seek=5000 conv=notrunc status=none

"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" --checkpoint-dir "$dir" --checkpoint-every 4steps \
  --resume --save "$WORK/resumed.tandem" > "$WORK/out" 2> "$WORK/err"
cat "$WORK/err"
expect_in "$WORK/err" "skipping checkpoint $newest (offset"
expect_in "$WORK/err" "falling back to $second"
expect_in "$WORK/err" "skipping checkpoint $second (offset"
expect_in "$WORK/err" "checksum mismatch"
expect_in "$WORK/err" "falling back to $third"
"$WEIGHTS_DIFF" "$WORK/reference.tandem" "$WORK/resumed.tandem" 0 ||
  fail "weights after falling back differ from the uninterrupted run's"
echo "PASS"
