#!/usr/bin/env bash
# kill -9, again and again: a run with step checkpoints is killed at random moments at least
# 20 times (one process, then one rank of 2), each time started again with --resume; the run
# that finally completes ends with weights bitwise equal to an uninterrupted run's
# (deterministic mode), and no temporary file is left behind.
source "$(dirname "$0")/common.sh"
KILLS=${KILLS:-20}
common=(train --limit-train 8192 --limit-test 100 --epochs 16 --batch-size 256 --layers 1024,1024
        --seed 3 --deterministic --threads-per-device 1)
ckpt_every=(--checkpoint-every 4steps)

"$TANDEM" "${common[@]}" --verbose 0 --save "$WORK/reference.tandem" > /dev/null

# kill_loop NAME LAUNCHER...: until KILLS kills, start the run (with --resume) and SIGKILL it
# (or one of its ranks) soon after it checkpointed; then let it finish.
kill_loop() {
  local name=$1
  shift
  local dir="$WORK/ckpt_$name" kills=0 launches=0
  while [ $kills -lt "$KILLS" ]; do
    launches=$((launches + 1))
    [ $launches -le $((KILLS * 3)) ] || fail "$name: only $kills kills in $launches launches"
    "$@" "$TANDEM" "${common[@]}" --verbose 0 --checkpoint-dir "$dir" "${ckpt_every[@]}" \
      --resume > "$WORK/out" 2> "$WORK/err" &
    local job=$!
    # Kill once this start has written a checkpoint (or 20 s passed), at a random moment
    # up to 0.4 s after: each start makes a little progress, at any point of a step or write.
    local before newest deadline=$((SECONDS + 20))
    before=$(ls "$dir" 2> /dev/null | grep '^ckpt-' | tail -1 || true)
    while kill -0 $job 2> /dev/null && [ $SECONDS -lt $deadline ]; do
      newest=$(ls "$dir" 2> /dev/null | grep '^ckpt-' | tail -1 || true)
      [ "$newest" = "$before" ] || break
      sleep 0.02
    done
    sleep "$(printf '0.%03d' $((RANDOM % 400)))"
    if ! kill -0 $job 2> /dev/null; then
      wait $job || { cat "$WORK/err"; fail "$name: a run ended with an error before its kill"; }
      fail "$name: the run finished after $kills kills; make it longer"
    fi
    if [ "$name" = ranks ]; then
      local pids=($(rank_pids $job))
      [ ${#pids[@]} -ge 1 ] || { sleep 0.2; continue; }  # mpirun still starting them
      kill -9 "${pids[-1]}"
    else
      kill -9 $job
    fi
    wait_with_limit $job 60 || true
    kills=$((kills + 1))
  done
  "$@" "$TANDEM" "${common[@]}" --checkpoint-dir "$dir" "${ckpt_every[@]}" --resume \
    --save "$WORK/$name.tandem" --verbose 2 > "$WORK/out" 2> "$WORK/err" ||
    { cat "$WORK/err"; fail "$name: the final resume failed"; }
  expect_in "$WORK/out" "Resuming from $dir/ckpt-"
  "$WEIGHTS_DIFF" "$WORK/reference.tandem" "$WORK/$name.tandem" 0 ||
    fail "$name: after $kills kills the weights differ from the uninterrupted run's"
  if compgen -G "$dir/.*tandem-tmp*" > /dev/null; then
    fail "$name: temporary files left: $(ls -a "$dir")"
  fi
  echo "$name: $kills kills in $launches launches, final weights bitwise equal"
}

kill_loop process env
kill_loop ranks "${MPIRUN[@]}" -np 2
echo "PASS"
