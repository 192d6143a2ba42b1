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
victims=($(rank_pids $job))
[ ${#victims[@]} -eq 2 ] || fail "expected 2 rank processes, found '${victims[*]:-}'"
kill -9 "${victims[1]}"
start=$SECONDS
status=0
wait_with_limit $job 60 || status=$?
[ $status -ne 124 ] || fail "the job still ran 60 s after a rank was killed"
[ $status -ne 0 ] || fail "the job exited 0 after a rank was killed (did it finish first?)"
echo "job ended $((SECONDS - start)) s after the kill, exit status $status"
expect_in "$WORK/err" "exited on signal 9"
newest=$(ls "$WORK/ckpt" | sort | tail -1)
[ "$newest" != "ckpt-000000096.tandem" ] || fail "the run finished before the kill"

"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" "${ckpt[@]}" --resume --verbose 2 \
  --save "$WORK/resumed.tandem" > "$WORK/out" 2> "$WORK/err" || { cat "$WORK/err"; fail "resume failed"; }
expect_in "$WORK/out" "Resuming from $WORK/ckpt/ckpt-"
"$WEIGHTS_DIFF" "$WORK/reference.tandem" "$WORK/resumed.tandem" 0 ||
  fail "resumed weights differ from the uninterrupted run's"
echo "PASS"
