#!/usr/bin/env bash
# Builds and runs every test: the Release build with ctest, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer and the parallel ones under ThreadSanitizer,
# then the Python package (pip install . into .venv) with pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs="$(nproc)"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${TANDEM_SKIP_SANITIZERS:-0}" != 1 ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTANDEM_BUILD_BENCH=OFF \
    -DTANDEM_SANITIZE=address,undefined
  cmake --build build-asan -j "$jobs" --target tandem_tests
  # oneDNN's JIT and OpenMP runtime are not instrumented; leaks from them are not ours.
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit

  # The parallel code (devices, communicator, reducer, strategies) under ThreadSanitizer.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTANDEM_BUILD_BENCH=OFF \
    -DTANDEM_SANITIZE=thread
  cmake --build build-tsan -j "$jobs" --target tandem_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" \
    -R '^(SharedMemoryCommunicator|DeviceGroup|Shapes/AllreduceSizes|Strategies|Deterministic)'
fi

# The Python package, installed as a user installs it (pip install . into .venv), then its
# tests (pytest). In CI (CI=true) a test that would skip for a missing dependency fails.
EXTRA=pytest scripts/python_env.sh
# `pip wheel .` makes the same package as a wheel (the build above is reused).
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
(cd python/tests && ../../.venv/bin/python -m pytest -q -p no:cacheprovider)
