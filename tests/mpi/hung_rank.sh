#!/usr/bin/env bash
# One rank stops answering (SIGSTOP): the other gives up after --comm-timeout with a
# message naming itself, its host and the operation, and the whole job ends non-zero
# (well within 60 s), the stopped rank included.
source "$(dirname "$0")/common.sh"
"${MPIRUN[@]}" -np 2 "$TANDEM" train --limit-train 4096 --limit-test 100 --epochs 5 \
  --batch-size 64 --verbose 0 --comm-timeout 5 --checkpoint-dir "$WORK/ckpt" \
  --checkpoint-every 4steps > "$WORK/out" 2> "$WORK/err" &
job=$!
wait_for_file "$WORK/ckpt/ckpt-*.tandem" 120
trap 'kill -9 ${VICTIMS[*]:-} 2> /dev/null || true; rm -rf "$WORK"' EXIT
signal_one_rank $job STOP
expect_in "$WORK/err" "tandem: error: rank 0 of 2 on $(hostname): no answer from the other ranks for 5 s"
# mpirun's abort takes both ranks down, the stopped one too, within a few seconds.
for pid in "${VICTIMS[@]}"; do
  for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  ! kill -0 "$pid" 2> /dev/null || fail "rank process $pid outlived the job by 10 s"
done
echo "PASS"
