#!/usr/bin/env bash
# The repository speaks of itself only: no document, comment or message cites files a
# reader of this repository cannot see (the team's design notes, its issue tracker, the
# original report's folder). Usage: self_contained.sh SOURCE_DIR
set -euo pipefail
cd "$1"
pattern='DESIGN\.md|STYLE\.md|shared/seed|\.\./shared|[Ii]ssue [0-9]+\b'
hits=$(git ls-files -z | grep -zv '^tests/repo/self_contained.sh$' |
  xargs -0 grep -nIE "$pattern" -- 2> /dev/null || true)
if [ -n "$hits" ]; then
  echo "FAIL: references to things outside the repository:"
  echo "$hits"
  exit 1
fi
echo "PASS: no references outside the repository"
