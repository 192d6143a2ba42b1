#!/bin/bash
# held_out_windows_xeon: the placement sample and three runs by 10937c1's build (copied to
# /tmp/s54/set/).
cd "$(dirname "$0")"
B=/tmp/s54/set
echo "placement start $(date -u +%H:%M:%S)" >> times.log
$B/placement_bench --seconds 600 --interval 0.25 --rounds 3 --steps 20 --json placement.json > placement.log 2>&1
rc=$?
echo "placement end $(date -u +%H:%M:%S) rc=$rc" >> times.log
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
