# Shared by the multi-process tests: usage `script.sh TANDEM WEIGHTS_DIFF MPIEXEC`.
# A missing dependency skips the test (tests/skip.sh), or fails it in CI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../skip.sh"
TANDEM=$1
WEIGHTS_DIFF=$2
MPIRUN=("$3" --allow-run-as-root --oversubscribe)
DATA=/usr/share/datasets/fashion-mnist
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  skip "needs $DATA (apt-get install dataset-fashion-mnist)"
fi
WORK=$(mktemp -d /tmp/tandem_mpi_test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_in FILE TEXT: FILE contains TEXT.
expect_in() {
  grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "expected '$2' in $1"; }
}

# wait_for_file GLOB SECONDS: until a file matching GLOB exists.
wait_for_file() {
  local deadline=$((SECONDS + $2))
  until compgen -G "$1" > /dev/null; do
    [ $SECONDS -lt $deadline ] || fail "no $1 after $2 s"
    sleep 0.05
  done
}

# rank_pids MPIRUN_PID: the pids of the job's tandem processes (mpirun's children).
rank_pids() {
  pgrep -P "$1" -x tandem || true
}

# wait_with_limit PID SECONDS: waits for PID; its exit status; 124 when it outlived SECONDS.
wait_with_limit() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2> /dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      kill -9 "$1" 2> /dev/null || true
      return 124
    fi
    sleep 0.1
  done
  local status=0
  wait "$1" || status=$?
  return $status
}

# signal_one_rank JOB SIGNAL: sends SIGNAL (KILL, STOP) to the second rank of the job whose
# mpirun is JOB and waits at most 60 s for the job to end, which it must, non-zero. Sets
# VICTIMS (the ranks' pids) and STATUS (mpirun's exit status).
signal_one_rank() {
  VICTIMS=($(rank_pids "$1"))
  [ ${#VICTIMS[@]} -eq 2 ] || fail "expected 2 rank processes, found '${VICTIMS[*]:-}'"
  kill "-$2" "${VICTIMS[1]}"
  local start=$SECONDS
  STATUS=0
  wait_with_limit "$1" 60 || STATUS=$?
  [ $STATUS -ne 124 ] || fail "the job still ran 60 s after SIG$2 to a rank"
  [ $STATUS -ne 0 ] || fail "the job exited 0 after SIG$2 to a rank (did it finish first?)"
  echo "job ended $((SECONDS - start)) s after SIG$2 to a rank, exit status $STATUS"
}
