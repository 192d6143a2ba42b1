#!/bin/bash
# held_out_flushed_xeon: three runs by ede0d84's build (copied to /tmp/s56/set/).
cd "$(dirname "$0")"
B=/tmp/s56/set
for k in 1 2 3; do
  echo "run $k calibrate start $(date -u +%H:%M:%S)" >> times.log
  $B/tandem calibrate --allow-disturbed --out p$k.json > calibrate$k.log 2>&1
  rc=$?
  echo "run $k validate start $(date -u +%H:%M:%S) calibrate rc=$rc" >> times.log
  $B/tandem bench validate --hardware p$k.json --bucket-mb 1,25 --json cpu_run$k.json > validate$k.log 2>&1
  rc=$?
  echo "run $k end $(date -u +%H:%M:%S) validate rc=$rc" >> times.log
done
echo "done $(date -u +%H:%M:%S)" >> times.log
