#!/bin/bash
# A lead after held_out_windows_xeon (not held out): a shortened bench validate (the seed and
# 784-256-256-10 at 32 and 512, against run 1's profile) by 10937c1's tandem (A, copied to
# /tmp/s54/set/tandem) and by the same with the set's shared_buffers.patch applied (B, every
# device group streaming one pair of cache-reading buffers per device; copied to
# /tmp/s54/tandem_B), interleaved. A1 was run by hand before this script, with the same command.
cd "$(dirname "$0")"
P=../p1.json
for x in B1 A2 B2; do
  v=${x:0:1}; if [ $v = A ]; then T=/tmp/s54/set/tandem; else T=/tmp/s54/tandem_B; fi
  echo "$x start $(date -u +%H:%M:%S)" >> times.log
  $T bench validate --hardware $P --models "4096,2048,512,64;256,256" --batches 32,512 --json $x.json > $x.log 2>&1
  echo "$x end $(date -u +%H:%M:%S) rc=$?" >> times.log
done
