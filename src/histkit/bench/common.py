"""What the two benchmarks share: CUDA-event timers around batches of calls,
PyTorch when it is installed, device keys as the launchers take them, and
the rule that only a result equal to the oracle's is timed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np

from histkit.gpu.device import runtime
from histkit.gpu.launch.common import Keys

BATCH = 5
BATCHES = 5


class Timer:
    """Median seconds per call: events around batches of back-to-back calls.

    A call slower than SLOW_CALL_S (a peer collapsing under contention) is
    timed in fewer, single-call batches so one row cannot take minutes.
    """

    SLOW_CALL_S = 0.02

    def __init__(self, cupy, torch):
        self.cupy, self.torch = cupy, torch

    def _median(self, elapsed_s, call) -> float:
        first = elapsed_s(call, 1)  # warm-up, and a first estimate
        batch, batches = (1, 3) if first > self.SLOW_CALL_S else (BATCH, BATCHES)
        return float(np.median([elapsed_s(call, batch) / batch for _ in range(batches)]))

    def ours(self, call) -> float:
        from cuda.core import EventOptions

        rt = runtime()
        options = EventOptions(timing_enabled=True)

        def elapsed_s(call, batch):
            start = rt.stream.record(options=options)
            for _ in range(batch):
                call()
            end = rt.stream.record(options=options)
            end.sync()
            return (end - start) / 1e3

        call()
        rt.sync("warm-up")
        return self._median(elapsed_s, call)

    def cupy_call(self, call) -> float:
        cupy = self.cupy
        start, end = cupy.cuda.Event(), cupy.cuda.Event()

        def elapsed_s(call, batch):
            start.record()
            for _ in range(batch):
                call()
            end.record()
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end) / 1e3

        call()
        cupy.cuda.Device().synchronize()
        return self._median(elapsed_s, call)

    def torch_call(self, call) -> float:
        torch = self.torch

        def elapsed_s(call, batch):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(batch):
                call()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        call()
        torch.cuda.synchronize()
        return self._median(elapsed_s, call)


def optional_torch():
    """PyTorch when installed (a peer in the benchmarks), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def keys_of(array) -> Keys:
    return Keys(int(array.data.ptr), int(array.size), np.dtype(array.dtype))


def skip_note(error: Exception) -> str:
    return f"skipped: {type(error).__name__}: {error}"


def right_result(row: dict, name: str, call, exact, to_host) -> bool:
    """Whether call's result is the oracle's; a wrong or failing one is noted
    in row (and is never timed)."""
    try:
        if np.array_equal(to_host(call()).astype(np.int64), exact):
            return True
        row["notes"][name] = "WRONG RESULT: not timed"
    except Exception as error:  # a peer that fails is reported, never estimated
        row["notes"][name] = skip_note(error)
    return False


def result_stem(kind: str, device_name: str, day: str) -> str:
    """A result file's name without suffix: what was measured, on which
    device, the date and the checkout's short commit when there is one
    ("binning-h200-2026-12-03-8e7fc29"), as bench/results names its files."""
    model = re.search(r"\b[A-Z]+\d{2,4}[A-Z]*\b", device_name)  # "H100" of "NVIDIA H100 80GB HBM3"
    device = (model.group(0) if model else device_name.split()[-1]).lower()
    return "-".join(part for part in (kind, device, day, short_commit()) if part)


# <benchmark>-<yyyy-mm-dd>[-<short commit>[-dirty]].<json, log or png>
RESULT_NAME = re.compile(r"^(?P<benchmark>.+?)-\d{4}-\d{2}-\d{2}(-[0-9a-f]{4,40}(-dirty)?)?"
                         r"\.(json|log|png)$")


def replace_older_results(written: Path) -> list[Path]:
    """Remove the results of the same benchmark that `written` replaces (its
    folder holds the latest result of each benchmark, not an archive);
    returns the files removed."""
    mine = RESULT_NAME.match(written.name)
    if mine is None:
        return []
    removed = []
    for path in written.parent.iterdir():
        other = RESULT_NAME.match(path.name)
        if (other and other["benchmark"] == mine["benchmark"]
                and path.stem != written.stem):
            path.unlink()
            removed.append(path)
    return removed


def short_commit(root: str | None = None) -> str:
    """The short commit of the checkout at `root` (default: the current
    directory), "" outside a git checkout, and with "-dirty" where tracked
    files differ from it: a copy of a tree whose git folder is older than
    its files (a machine the tree was copied to) then names no commit its
    results were not measured at."""
    where = ["-C", root] if root else []
    try:
        commit = subprocess.run(["git", *where, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        if commit and subprocess.run(["git", *where, "diff", "--quiet", "HEAD", "--"],
                                     capture_output=True, timeout=60).returncode == 1:
            commit += "-dirty"
        return commit
    except (OSError, subprocess.SubprocessError):
        return ""
