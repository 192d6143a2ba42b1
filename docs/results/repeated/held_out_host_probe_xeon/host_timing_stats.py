"""Medians of the host step's parts from host_timing.patch's lines (TANDEM_HOST_DEBUG=1 on stderr).

Usage: python3 host_timing_stats.py LOG [LAST_STEPS]
Prints, per step then as medians: the step, the devices' mean task time summed over the three
rounds, the slowest device beyond that mean (summed over the rounds) and the wake and join.
"""
import re
import statistics
import sys

lines = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith("copy ")]
lines = lines[-int(sys.argv[2]) :] if len(sys.argv) > 2 else lines
round_re = re.compile(r"round \d: wake ([\d.]+)/([\d.]+) task ([\d.]+)/([\d.]+) join ([\d.]+)")
steps, means, slowest, wake_join, share = [], [], [], [], []
for line in lines:
    rounds = [tuple(map(float, r)) for r in round_re.findall(line)]
    mean = sum((t0 + t1) / 2 for _, _, t0, t1, _ in rounds)
    extra = sum(max(t0, t1) - (t0 + t1) / 2 for _, _, t0, t1, _ in rounds)
    steps.append(float(re.search(r"step ([\d.]+)", line).group(1)))
    means.append(mean)
    slowest.append(extra)
    wake_join.append(sum(max(w0, w1) + j for w0, w1, _, _, j in rounds))
    share.append(extra / mean)
print(f"{len(lines)} steps; medians: step {statistics.median(steps):.0f} us, rounds' devices' mean "
      f"{statistics.median(means):.0f} us, slowest device beyond it {statistics.median(slowest):.0f} us "
      f"({min(slowest):.0f}-{max(slowest):.0f}; {100 * statistics.median(share):.1f}% of the rounds per step), "
      f"wake and join {statistics.median(wake_join):.0f} us")
