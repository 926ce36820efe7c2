"""How many threads the oracles may use right now.

On a shared machine another process may hold a core. OpenMP threads sharing
a core with it wait for its time slice, and the whole call waits for them at
the end of each parallel pass (measured on the 2-core machine with one core
spinning: a 2^24-key histogram took 14 ms on two threads, 5 ms on one). So
the oracles count the CPUs that are idle at the call: those this process may
run on, less the runnable threads of other processes (the kernel's
instantaneous count in /proc/loadavg, less this process's own running threads).
Where that cannot be read, every CPU is taken.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

# Below this many keys the oracles run on one thread anyway: no need to look.
LOOK_FROM_KEYS = 1 << 17

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


def _running_here() -> int:
    running = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        running += stat[stat.rindex(")") + 2] == "R"
    return running


def idle_cpus(n: int) -> int:
    """CPUs free for an oracle over n keys (1 when n is small), within any cap
    a caller set with at_most()."""
    cap = _THREAD_CAP.get()
    cpus = _cpus() if cap is None else min(cap, _cpus())
    if n < LOOK_FROM_KEYS or cpus == 1:
        return cpus
    try:
        runnable = int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
        others = max(0, runnable - _running_here())
    except (OSError, ValueError, IndexError):
        return cpus
    return max(1, cpus - others)
