"""How many threads the oracles may use right now.

On a shared machine another process may hold a core. OpenMP threads sharing
a core with it wait for its time slice, and the whole call waits for them at
the end of each parallel pass (measured on a 2-core x86-64 VM with one core
spinning: a 2^24-key histogram took 14 ms on two threads, 5 ms on one). So
the oracles count the CPUs that are idle at the call: those this process may
run on, less the runnable threads of other processes (the kernel's
instantaneous count in /proc/loadavg, less this process's own running threads).
Where that cannot be read, every CPU is taken. A look reads a file of /proc
for every thread of this process, 50-150 us: 2-6% of a 2^24-key histogram on
a 2-core x86-64 VM. So a look that finds no other process running is kept
for LOOK_EVERY_SECONDS, far less than the seconds over which another
process's load comes and goes. One that finds some is not kept: a thread
of this process that has just stopped can still be counted runnable in
/proc/loadavg and not in its own stat (after a thread pool's work, one look
in three said so on a 2-core x86-64 VM), and a kept look would hold that
error for every call in the meantime.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Below this many keys the oracles run on one thread anyway: no need to look.
LOOK_FROM_KEYS = 1 << 17

# How long a look at the other processes' runnable threads is kept.
LOOK_EVERY_SECONDS = 0.05

# When (time.monotonic()) a look last found no other process running.
_idle_look_at = float("-inf")

# A cap set by a caller that runs oracles in parallel itself (a Dask task:
# Dask's parallelism is its chunks), per thread of execution.
_THREAD_CAP: ContextVar[int | None] = ContextVar("histkit_oracle_threads", default=None)


@contextmanager
def at_most(threads: int) -> Iterator[None]:
    """Oracle calls inside use at most this many threads (in this thread only)."""
    token = _THREAD_CAP.set(max(1, int(threads)))
    try:
        yield
    finally:
        _THREAD_CAP.reset(token)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _read(path: str) -> bytes:
    # os.read, not Path.read_text: half the time, and these reads are
    # the whole cost of a look
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _running_here() -> int:
    running = 0
    for task in os.listdir("/proc/self/task"):
        try:
            stat = _read(f"/proc/self/task/{task}/stat")
        except OSError:
            continue
        running += stat[stat.rindex(b")") + 2] == ord("R")
    return running


def _others_running() -> int:
    """Runnable threads of other processes (0 where /proc cannot be read);
    a look that found none is taken again once it is LOOK_EVERY_SECONDS old."""
    global _idle_look_at
    now = time.monotonic()
    if now - _idle_look_at < LOOK_EVERY_SECONDS:
        return 0
    try:
        runnable = int(_read("/proc/loadavg").split()[3].split(b"/")[0])
        others = max(0, runnable - _running_here())
    except (OSError, ValueError, IndexError):
        others = 0
    if not others:
        _idle_look_at = now
    return others


def idle_cpus(n: int) -> int:
    """CPUs free for an oracle over n keys (1 when n is small), within any cap
    a caller set with at_most()."""
    cap = _THREAD_CAP.get()
    cpus = _cpus() if cap is None else min(cap, _cpus())
    if n < LOOK_FROM_KEYS or cpus == 1:
        return cpus
    return max(1, cpus - _others_running())
