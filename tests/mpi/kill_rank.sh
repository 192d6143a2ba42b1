#!/usr/bin/env bash
# One rank is killed (SIGKILL) mid-training: the job ends non-zero within 60 s, saying
# which rank died; then --resume from the checkpoints finishes the training, and in
# deterministic mode its final weights equal an uninterrupted run's, bit for bit.
source "$(dirname "$0")/common.sh"
common=(train --limit-train 2048 --limit-test 100 --epochs 3 --batch-size 64 --seed 5
        --deterministic)
ckpt=(--checkpoint-dir "$WORK/ckpt" --checkpoint-every 8steps)

"$TANDEM" "${common[@]}" --verbose 0 --threads-per-device 1 --save "$WORK/reference.tandem" > /dev/null

"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" "${ckpt[@]}" --verbose 0 > "$WORK/out" 2> "$WORK/err" &
job=$!
wait_for_file "$WORK/ckpt/ckpt-*.tandem" 120
signal_one_rank $job KILL
expect_in "$WORK/err" "exited on signal 9"
newest=$(ls "$WORK/ckpt" | sort | tail -1)
[ "$newest" != "ckpt-000000096.tandem" ] || fail "the run finished before the kill"

"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" "${ckpt[@]}" --resume --verbose 2 \
  --save "$WORK/resumed.tandem" > "$WORK/out" 2> "$WORK/err" || { cat "$WORK/err"; fail "resume failed"; }
expect_in "$WORK/out" "Resuming from $WORK/ckpt/ckpt-"
"$WEIGHTS_DIFF" "$WORK/reference.tandem" "$WORK/resumed.tandem" 0 ||
  fail "resumed weights differ from the uninterrupted run's"
echo "PASS"
