#!/bin/bash
# One run by b28c957's build (copied to /tmp/s53/lead/tandem), after the set was stopped.
cd "$(dirname "$0")"
T=/tmp/s53/lead/tandem
echo "lead calibrate start $(date -u +%H:%M:%S)" >> times.log
$T calibrate --allow-disturbed --out lead_p.json > lead_calibrate.log 2>&1
rc=$?
echo "lead validate start $(date -u +%H:%M:%S) calibrate rc=$rc" >> times.log
$T bench validate --hardware lead_p.json --bucket-mb 1,25 --json lead_cpu_run.json > lead_validate.log 2>&1
rc=$?
echo "lead end $(date -u +%H:%M:%S) validate rc=$rc" >> times.log
