#!/usr/bin/env bash
# Builds and runs every test: the Release build with ctest, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
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
