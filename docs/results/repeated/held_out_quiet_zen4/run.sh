#!/bin/bash
# held_out_quiet_zen4: three runs by dca6e5d's build (copied to /tmp/s52/set/tandem).
cd "$(dirname "$0")"
T=/tmp/s52/set/tandem
for k in 1 2 3; do
  echo "run $k calibrate start $(date -u +%H:%M:%S)" >> times.log
  $T calibrate --allow-disturbed --out p$k.json > calibrate$k.log 2>&1
  echo "run $k validate start $(date -u +%H:%M:%S)" >> times.log
  $T bench validate --hardware p$k.json --bucket-mb 1,25 --json cpu_run$k.json > validate$k.log 2>&1
  echo "run $k end $(date -u +%H:%M:%S) rc=$?" >> times.log
done
echo "done $(date -u +%H:%M:%S)" >> times.log
