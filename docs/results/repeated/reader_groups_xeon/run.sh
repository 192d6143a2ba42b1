#!/usr/bin/env bash
# The set in criteria.md: one sequential reader_bench run, then three interleaved ones.
set -euo pipefail
bin="${1:?reader_bench binary}"
cd "$(dirname "$0")"
date -u > times.log
"$bin" --groups 20 --devices 2 --readings 40 --interval 0.005 --json sequential.json > sequential.log
for k in 1 2 3; do
  "$bin" --interleave --groups 20 --devices 2 --readings 40 --interval 0.005 \
    --json interleaved$k.json > interleaved$k.log
  date -u >> times.log
done
