"""What the Python benchmarks share: the CPU's name, and how much of the machine other
processes used while a measurement ran (the machine is shared: a compile or a test run
next to a benchmark halves what it gets, and interleaving alone does not undo that).

The share is read from /proc/stat (every process's CPU time, in clock ticks) minus this
process's and its children's CPU time (getrusage), over the measurement's wall time times
the cores. A measurement whose share is above a threshold is flagged "noisy"."""
import argparse
import json
import os
import resource
import time

_TICKS = os.sysconf("SC_CLK_TCK")
_CORES = os.cpu_count() or 1


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _machine_busy_seconds():
    """CPU seconds every process on the machine has used (user, nice, system, irq, softirq,
    steal) since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq + steal) / _TICKS


def _own_seconds():
    """CPU seconds of this process and of its children that have ended."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


class OtherLoad:
    """with OtherLoad() as m: ...  then m.share: the fraction of the machine (all cores)
    that processes other than this one and its children used meanwhile. Children must have
    ended (been waited for) by the end of the block."""

    def __enter__(self):
        self._wall, self._busy, self._own = time.perf_counter(), _machine_busy_seconds(), \
            _own_seconds()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self._wall
        self.own_cpu_s = _own_seconds() - self._own
        busy = _machine_busy_seconds() - self._busy
        self.other_cpu_s = max(0.0, busy - self.own_cpu_s)
        self.share = self.other_cpu_s / max(self.wall_s * _CORES, 1e-9)
        return False

    def as_dict(self):
        return {"wall_s": self.wall_s, "own_cpu_s": self.own_cpu_s,
                "other_cpu_s": self.other_cpu_s, "other_share": self.share}


def wait_for_quiet(threshold, max_wait_s, window_s=2.0):
    """Waits until other processes used at most `threshold` of the machine over one
    window, or max_wait_s has passed; returns the last window's share."""
    deadline = time.monotonic() + max_wait_s
    while True:
        with OtherLoad() as m:
            time.sleep(window_s)
        if m.share <= threshold or time.monotonic() >= deadline:
            return m.share


def write_json_atomically(path, value):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2)
    os.replace(tmp, path)  # never a half-written file under the real name


def positive(text):
    """argparse type: a whole number >= 1."""
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return v


def positive_list(text, what="numbers"):
    """argparse type: comma-separated whole numbers >= 1 ("1,2")."""
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what} like 1,2, got {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{what} must be >= 1, got {text!r}")
    return values


def add_measurement_options(p, root, time_budget, quiet_window):
    """The options every framework-comparison benchmark takes: how noisy a measurement may
    be, how long to wait and retry, the time budget, and the two interpreters."""
    import sys
    p.add_argument("--max-other-load", type=float, default=0.05,
                   help="a measurement is noisy when other processes used more than this "
                   "share of the machine during its timed epochs (default 0.05)")
    p.add_argument("--time-budget", type=float, default=time_budget,
                   help="minutes after which no new round starts once 3 have run "
                   f"(default {time_budget:g})")
    p.add_argument("--retries", type=int, default=2,
                   help="times a noisy measurement is taken again (default 2); the last is kept")
    p.add_argument("--quiet-window", type=float, default=quiet_window,
                   help="seconds the machine must have been quiet before a run "
                   f"(default {quiet_window:g})")
    p.add_argument("--quiet-wait", type=float, default=60,
                   help="seconds to wait for a quiet machine before each measurement (default 60)")
    venv = os.path.join(root, ".venv", "bin", "python")
    peers = os.path.join(root, ".venv-peers", "bin", "python")
    p.add_argument("--python", default=venv if os.path.exists(venv) else sys.executable,
                   help="python with tandem installed (default .venv)")
    p.add_argument("--peers-python", default=peers,
                   help="python with tensorflow-cpu (Keras 3) and torch (default .venv-peers)")


# What every framework-comparison worker (a fresh interpreter) starts with, before its own
# constants (STEPS among them, read when report() runs): the loss check, the result line,
# the machine snapshots around the timed epochs, and a Keras callback that times epochs
# (marks: EPOCH_BEGIN/EPOCH_END lines, for attributing oneDNN's verbose output).
WORKER_HELPERS = r"""
import json, math, sys, time

def check(first, last, what):
    if not (math.isfinite(first) and math.isfinite(last)):
        raise SystemExit(f"{what}: loss not finite ({first}, {last})")
    if not last < first:
        raise SystemExit(f"{what}: loss did not fall ({first} -> {last})")

def report(epoch_seconds, first_loss, last_loss, **extra):
    ms = [s / STEPS * 1e3 for s in epoch_seconds]
    print("RESULT " + json.dumps({"ms_per_step": ms, "first_loss": first_loss,
                                  "last_loss": last_loss, **extra}), flush=True)

def snapshot():
    # (wall, CPU seconds of every process on the machine, CPU seconds of this process)
    import os, resource
    with open("/proc/stat") as f:
        v = [int(t) for t in f.readline().split()[1:9]]
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (time.perf_counter(), (sum(v[:3]) + sum(v[5:8])) / os.sysconf("SC_CLK_TCK"),
            r.ru_utime + r.ru_stime)

def window(a, b, steps):
    # between two snapshots: the share of the machine (all cores) other processes used, and
    # this process's CPU time (all its threads) per step, which others disturb far less than
    # the wall time when it runs on one thread
    import os
    wall, cpu = b[0] - a[0], b[2] - a[2]
    return {"other_share": max(0.0, (b[1] - a[1]) - cpu) / max(wall * os.cpu_count(), 1e-9),
            "cpu_ms_per_step": cpu / steps * 1e3}

def keras_timer(base, marks=False):
    # marks: EPOCH_BEGIN/EPOCH_END lines on stdout, flushed at once so that they land between
    # oneDNN's verbose lines (which it flushes line by line) in the order things happened
    class EpochTimer(base):
        def __init__(self):
            super().__init__()
            self.seconds = []
        def on_epoch_begin(self, epoch, logs=None):
            if marks:
                print(f"EPOCH_BEGIN {epoch}", flush=True)
            if epoch == 1:
                self.timed_from = snapshot()  # the timed epochs start after the warm-up
            self.start = time.perf_counter()
        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self.start)
            if marks:
                print(f"EPOCH_END {epoch}", flush=True)
    return EpochTimer()
"""
