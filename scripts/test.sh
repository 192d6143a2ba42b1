#!/usr/bin/env bash
# Builds and runs every test: the Release build with ctest, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer and the parallel ones (with 2 MPI ranks) under
# ThreadSanitizer, each file reader fuzzed for 30 s (scripts/fuzz.sh), then the Python
# package (pip install . into .venv) with pytest, Keras 3 (.venv-keras) beside it for the
# Keras-file tests. Ends with each stage's totals.
# TANDEM_NO_SKIP=1 (as .ci/run sets) makes a test that would skip fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs="$(nproc)"
logs=build/test-logs
totals=()

# Runs a test stage, keeping its output to read its totals from.
stage() {
  local name="$1"
  shift
  mkdir -p "$logs"
  "$@" 2>&1 | tee "$logs/$name.log"
}
ctest_totals() {  # "100% tests passed, 0 tests failed out of 324" -> "324 0"
  sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 \1/p' "$logs/$1.log" |
    tail -1
}

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
stage release ctest --test-dir build --output-on-failure -j "$jobs"
totals+=("release $(ctest_totals release)")

if [ "${TANDEM_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTANDEM_BUILD_BENCH=OFF \
    -DTANDEM_SANITIZE=address,undefined
  cmake --build build-asan -j "$jobs" --target tandem_tests
  # oneDNN's JIT and OpenMP runtime are not instrumented; leaks from them are not ours.
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    stage asan ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit
  totals+=("asan+ubsan $(ctest_totals asan)")

  # The parallel code (devices, communicator, reducer, strategies) under ThreadSanitizer,
  # and 2 MPI ranks on loopback: the communication thread and the hierarchical reducer.
  # This build is also the one without Keras-file support (-DTANDEM_WITH_KERAS_FILES=OFF,
  # which none of its tests need), so that configuration is compiled and linked too.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTANDEM_BUILD_BENCH=OFF \
    -DTANDEM_SANITIZE=thread -DTANDEM_WITH_KERAS_FILES=OFF
  cmake --build build-tsan -j "$jobs" --target tandem_tests tandem_mpi_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
    stage tsan ctest --test-dir build-tsan --output-on-failure -j "$jobs" \
    -R '^(SharedMemoryCommunicator|DeviceGroup|Shapes/AllreduceSizes|Strategies|Deterministic|SynchronizedBatchNormalization|mpi\.world_2_ranks$)'
  grep -q 'mpi\.world_2_ranks .*Passed' "$logs/tsan.log" ||
    { echo "test.sh: the MPI test did not run under ThreadSanitizer"; exit 1; }
  totals+=("tsan $(ctest_totals tsan)")

  # Every file reader fuzzed 30 s (libFuzzer, clang, ASan + UBSan) from its committed corpus;
  # the corpora are also replayed by the ctest stages above (fuzz_replay.*).
  stage fuzz scripts/fuzz.sh 30
  totals+=("fuzz $(grep -cE '^[a-z_]+ +ok ' "$logs/fuzz.log") 0")
fi

# The Python package, installed as a user installs it (pip install . into .venv); `pip
# wheel .` makes the same package as a wheel (the build is reused); then its tests (pytest).
EXTRA=pytest scripts/python_env.sh
scripts/keras_env.sh  # Keras 3 on JAX, in its own venv: the reference for the Keras-file tests
rm -rf build/wheels
.venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps -w build/wheels .
.venv/bin/python - <<'PY'
import glob, zipfile
wheels = glob.glob("build/wheels/tandem-*.whl")
assert len(wheels) == 1, wheels
names = zipfile.ZipFile(wheels[0]).namelist()
assert any(n.startswith("tandem/_tandem") and n.endswith(".so") for n in names), names
assert "tandem/keras/models.py" in names, names
print("pip wheel:", wheels[0], len(names), "files")
PY
stage pytest bash -c "cd python/tests && ../../.venv/bin/python -m pytest -q -p no:cacheprovider"
# "83 passed, 1 skipped in 9.1s" -> "83 0" (failures end the script before this line)
totals+=("pytest $(sed -n 's/^\([0-9]*\) passed.*/\1 0/p' "$logs/pytest.log" | tail -1)")

echo
echo "== totals (tests run, failed) =="
passed=0
failed_all=0
for line in "${totals[@]}"; do
  read -r name run failed <<< "$line"
  printf '%-12s %5d run, %d failed\n' "$name" "$run" "$failed"
  passed=$((passed + run - failed))
  failed_all=$((failed_all + failed))
done
echo "totals: $passed passed, $failed_all failed"
