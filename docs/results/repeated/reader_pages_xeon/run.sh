#!/usr/bin/env bash
# The pairs in criteria.md, A (the tools' buffers) then B (--huge-pages), three times.
set -euo pipefail
bin="${1:?reader_bench binary}"
cd "$(dirname "$0")"
date -u > times.log
for k in 1 2 3; do
  "$bin" --interleave --groups 20 --devices 2 --readings 100 --interval 0.005 \
    --json A$k.json > A$k.log
  "$bin" --interleave --groups 20 --devices 2 --readings 100 --interval 0.005 --huge-pages \
    --json B$k.json > B$k.log
  date -u >> times.log
done
