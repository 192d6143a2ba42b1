#!/usr/bin/env bash
# Fuzzes every file reader: configures the clang build with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/ (TANDEM_FUZZ_BUILD_DIR overrides), builds the
# harnesses (tests/fuzz) and runs each for SECONDS (default 30) from its committed corpus,
# TANDEM_FUZZ_JOBS (default: the cores) at a time. Fails on any crash, leak, timeout,
# sanitizer report or allocation over the memory limit; the input that caused it is left in
# <build>/fuzz-artifacts/ (add it to tests/fuzz/corpus/<reader>/ with the fix).
# Usage: scripts/fuzz.sh [SECONDS_PER_READER] [READER...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
readers=("$@")
if [ ${#readers[@]} -eq 0 ]; then
  readers=(idx_plain idx_gz npz model weights checkpoint hardware_profile history keras_config)
fi
build="${TANDEM_FUZZ_BUILD_DIR:-build-fuzz}"
cxx="${TANDEM_FUZZ_CXX:-clang++-14}"
command -v "$cxx" > /dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang-14)"; exit 1; }

mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DTANDEM_FUZZ=ON -DTANDEM_SANITIZE=address,undefined -DTANDEM_WITH_MPI=OFF \
  -DTANDEM_BUILD_BENCH=OFF -DTANDEM_BUILD_EXAMPLES=OFF -DTANDEM_INSTALL=OFF > "$build/configure.log" ||
  { cat "$build/configure.log"; exit 1; }
targets=()
for r in "${readers[@]}"; do targets+=("tandem_fuzz_$r"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

# Longest input per reader: a few times its largest seed, small enough to stay fast.
max_len() {
  case "$1" in
    model | weights | checkpoint) echo 16384 ;;
    keras_config) echo 32768 ;;
    npz | hardware_profile) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

# Any UB report is a finding; the inputs are files, so a leak is one too.
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=0"
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"
jobs="${TANDEM_FUZZ_JOBS:-$(nproc)}"  # harnesses fuzzed at once (each is one process)

fuzz_one() {  # fuzz_one READER: runs it, its exit status in $build/fuzz-logs/READER.rc
  local r="$1" work="$build/fuzz-corpus/$1" log="$build/fuzz-logs/$1.log" rc=0
  mkdir -p "$work"  # new inputs go here, not into the committed corpus
  "$build/tests/fuzz/tandem_fuzz_$r" -max_total_time="$seconds" -rss_limit_mb=1024 \
    -malloc_limit_mb=1024 -timeout=10 -max_len="$(max_len "$r")" -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$r-" "$work" "tests/fuzz/corpus/$r" > "$log" 2>&1 ||
    rc=$?
  echo "$rc" > "$build/fuzz-logs/$r.rc"
}

echo "== fuzzing ${readers[*]} for ${seconds}s each, $jobs at a time"
running=0
for r in "${readers[@]}"; do
  rm -f "$build/fuzz-logs/$r.rc"
  fuzz_one "$r" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

summary=()
status=0
for r in "${readers[@]}"; do
  log="$build/fuzz-logs/$r.log"
  rc="$(cat "$build/fuzz-logs/$r.rc" 2> /dev/null || echo missing)"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  peak=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  if [ "$rc" != 0 ]; then
    status=1
    echo "== $r failed (exit $rc); the end of $log:"
    tail -40 "$log"
    summary+=("$(printf '%-18s FAILED (exit %s): see %s' "$r" "$rc" "$log")")
  else
    summary+=("$(printf '%-18s ok  %5ss %10s runs  cov %-6s peak rss %s MB' "$r" "$seconds" \
      "${runs:-?}" "${cov:-?}" "${peak:-?}")")
  fi
done
echo
echo "== fuzzing totals"
printf '%s\n' "${summary[@]}"
exit "$status"
