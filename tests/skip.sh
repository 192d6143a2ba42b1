# Sourced by the shell tests: `skip REASON` marks the test skipped (exit 77, ctest's
# SKIP_RETURN_CODE) on a developer's machine; with TANDEM_NO_SKIP=1 (.ci/run sets it) a test
# that would skip fails instead, so CI cannot pass by skipping.
skip() {
  if [ "${TANDEM_NO_SKIP:-0}" = 1 ]; then
    echo "FAILED: would skip, and TANDEM_NO_SKIP=1 forbids it: $*"
    exit 1
  fi
  echo "SKIPPED: $*"
  exit 77
}
