"""What every launch family shares: keys on the device and the chapter's
launch shape."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import CHAPTER_BLOCK
from histkit.gpu.device import Runtime


class Keys(NamedTuple):
    """Keys already on the device: a contiguous 1-d array (a named tuple: one
    is made per public call, and a tuple is the cheapest to make)."""

    ptr: int
    n: int
    dtype: np.dtype

    def defines(self, **extra: str) -> dict[str, str]:
        return {**contract.key_defines(self.dtype), **extra}


class Gate(NamedTuple):
    """A gated launch (common.cuh's HK_GATE): its kernels are built to take
    the word where method="auto"'s choosing kernel leaves its choice, and
    return at once unless it is `choice` (a contract AUTO_* code); with
    unless, return at once if it is (HK_GATE_UNLESS)."""

    word: int  # device pointer of the choice (uint32)
    choice: int
    unless: bool = False

    def defines(self) -> dict[str, str]:
        return {"HK_GATE_UNLESS" if self.unless else "HK_GATE": str(self.choice)}


def gate_defines(gate: Gate | None) -> dict[str, str]:
    """The defines of a launch gated by gate (none: ungated)."""
    return {} if gate is None else gate.defines()


def gate_choice(gate: Gate | None) -> tuple[int, bool] | None:
    """What a launch plan is keyed by: the choice it runs on (the word's
    pointer changes every call; none when ungated)."""
    return None if gate is None else (gate.choice, gate.unless)


def gate_args(gate: Gate | None) -> tuple:
    """The gated kernels' last argument (none when ungated)."""
    return () if gate is None else (gate.word,)


def key_args(keys: Keys, num_bins: int):
    """(keys, n, num_bins) as the kernels take them."""
    return (keys.ptr, np.int64(keys.n), np.uint64(num_bins))


def zero_counts(rt: Runtime, hist, num_bins: int) -> None:
    """Zero a histogram's counts on rt's stream before kernels add into them.

    Every histogram launcher leaves hist holding the exact counts whatever it
    held before (the public calls do not zero it, and the conformance suite
    hands launchers poisoned counts), so a launcher whose kernels add calls
    this first; one whose kernel stores every bin skips it."""
    rt.memset(hist.ptr, 0, num_bins * hist.dtype.itemsize)


def blocks_for(items: int, block: int, cap: int) -> int:
    """Blocks of `block` items each for `items`, at least 1, at most cap."""
    return max(1, min(-(-items // block), cap))


def grid_stride_blocks(rt: Runtime, n: int, grid: int | None) -> int:
    """The chapter's grid (one key per thread, capped at 8 blocks per SM), or a forced one."""
    return grid if grid is not None else blocks_for(n, CHAPTER_BLOCK, rt.sm_count * 8)


# num_bins and first_bad as a full-width (RADIX_KEYS) build is handed them:
# never read (every key is valid, none is noted as bad).
EVERY_KEY = 2**64 - 1
NOT_READ = 0
