#!/usr/bin/env bash
# Ranks started with different batch sizes, or different data, fail fast at start-up with
# a message naming the rank, its host and what differs; the job exits non-zero.
source "$(dirname "$0")/common.sh"
common=(train --limit-test 100 --epochs 1 --layers 32 --verbose 0 --seed 1)

status=0
"${MPIRUN[@]}" -np 1 "$TANDEM" "${common[@]}" --limit-train 512 --batch-size 128 : \
  -np 1 "$TANDEM" "${common[@]}" --limit-train 512 --batch-size 64 > "$WORK/out" 2> "$WORK/err" || status=$?
[ "$status" -ne 0 ] || fail "mismatched batch sizes were accepted"
expect_in "$WORK/err" "do not run the same training"
expect_in "$WORK/err" "rank 1 on $(hostname): batch size is 64, rank 0's is 128"
expect_in "$WORK/err" "of 2 on $(hostname)"

status=0
"${MPIRUN[@]}" -np 1 "$TANDEM" "${common[@]}" --limit-train 512 : \
  -np 1 "$TANDEM" "${common[@]}" --limit-train 500 > "$WORK/out" 2> "$WORK/err" || status=$?
[ "$status" -ne 0 ] || fail "different data was accepted"
expect_in "$WORK/err" "rank 1 on $(hostname): training samples is"
expect_in "$WORK/err" "training data (x) differs from rank 0's"

# A rank that fails before training (a bad flag) ends the job at once, not after a timeout.
start=$SECONDS
status=0
"${MPIRUN[@]}" -np 1 "$TANDEM" "${common[@]}" : -np 1 "$TANDEM" "${common[@]}" --epochs 0 \
  > "$WORK/out" 2> "$WORK/err" || status=$?
[ "$status" -ne 0 ] || fail "a rank with a bad flag did not fail the job"
[ $((SECONDS - start)) -lt 30 ] || fail "the job took $((SECONDS - start)) s to end"
echo "PASS"
