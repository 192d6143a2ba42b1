#!/usr/bin/env bash
# include_direction.sh must fail on what it exists to catch: an include of a higher layer,
# one of another folder of the same layer, a folder with no layer; and pass a clean tree.
set -euo pipefail
check="$(dirname "$0")/include_direction.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

tree() {  # a fresh tree with one file per folder, each including only the public API
  rm -rf "$tmp/repo"
  for f in core data backend model parallel train cli; do
    mkdir -p "$tmp/repo/src/$f"
    printf '#include "tandem/error.h"\n#include "core/x.h"\n' > "$tmp/repo/src/$f/a.cpp"
  done
  mkdir -p "$tmp/repo/python/src"
  printf '#include "train/fit_run.h"\n' > "$tmp/repo/python/src/m.cpp"
}

expect() {  # expect pass|fail DESCRIPTION PATTERN
  local want="$1" what="$2" pattern="$3" out rc=0
  out="$(bash "$check" "$tmp/repo" 2>&1)" || rc=$?
  if [ "$want" = pass ] && [ "$rc" -ne 0 ]; then
    echo "FAIL: $what: expected a pass, got exit $rc:"; echo "$out"; exit 1
  fi
  if [ "$want" = fail ] && { [ "$rc" -eq 0 ] || ! grep -q -- "$pattern" <<< "$out"; }; then
    echo "FAIL: $what: expected a failure naming '$pattern', got exit $rc:"; echo "$out"; exit 1
  fi
  echo "ok: $what"
}

tree
expect pass "a clean tree" ""
tree
printf '\n#include "train/checkpoint.h"\n' >> "$tmp/repo/src/model/a.cpp"
expect fail "model including train" "src/model/a.cpp:4: model (layer 3) includes train (layer 5)"
tree
printf '#include "parallel/strategy.h"\n' >> "$tmp/repo/src/model/a.cpp"
expect fail "model including parallel (the old cycle)" "src/model/a.cpp:3: model (layer 3) includes parallel"
tree
printf '#include "backend/backend.h"\n' >> "$tmp/repo/src/data/a.cpp"
expect fail "data including backend (same layer)" "src/data/a.cpp:3: data includes backend, another folder of its layer"
tree
printf '#  include "cli/args.h"\n' >> "$tmp/repo/src/train/a.cpp"
expect fail "an indented include of the CLI" "src/train/a.cpp:3: train (layer 5) includes cli (layer 7)"
tree
mkdir -p "$tmp/repo/src/extra"
expect fail "a folder with no layer" "src/extra/ has no layer"
tree
printf '#include "nowhere/x.h"\n' >> "$tmp/repo/src/core/a.cpp"
expect fail "an include of an unknown folder" "a folder with no layer"
tree
printf '#include "core/x.h"\n' > "$tmp/repo/src/core/b.h"
printf '#include "model/graph.h"\n' >> "$tmp/repo/src/core/b.h"
expect fail "a header including upward" "src/core/b.h:2: core (layer 0) includes model"
