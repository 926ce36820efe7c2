"""Weighted histograms with exact sums (weighted_histogram.cu): the shared
memory each block keeps, and the launches.

A bin's sum is one integer (oracles._weighted's, whose 32-bit chunk span is
defined there and passed as defines), held by the kernel in 16-bit digits,
each in an int64 slot: a float32 weight is one add, a float64 weight two.
Each block keeps, in shared memory, copies of every digit of every bin (whole
rows), else of a window of the digits that everyday weights reach (the rest
of a weight goes to the global row), else nothing (every add global); as
many copies as fit, up to one per lane, so that lanes adding to one bin add
to different words.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import (
    BLOCK_WEIGHTS,
    FAST_BLOCK,
    GLOBAL_LAUNCH_WEIGHTS,
    MAX_LAUNCH_WEIGHTS,
    WARP,
    WHOLE_ADD_BITS,
)
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import Keys, blocks_for
from histkit.oracles._weighted import CHUNK_SPAN, SPECIAL_FLAGS

SOURCE = "weighted_histogram.cu"
# The window of 16-bit digits kept in shared memory when whole rows do not
# fit: (first absolute digit, digits). A float32 weight of magnitude 2^e adds
# to digit (e + 1051) >> 4 (its exponent field, less one if normal, plus 925,
# over 16): digits 64 .. 67 take -27 <= e <= 36. A float64 weight adds to
# digits d and d + 2 with d = (e + 1022) >> 4: 62 .. 67 take -30 <= e <= 33.
WINDOWS = {"f": (64, 4), "d": (62, 6)}
# Whole rows are kept while at least this many copies of them fit (else a
# window, of which more copies fit).
MIN_ROW_COPIES = 8


class Weights(NamedTuple):
    """Weights on the device, one per key: a contiguous float32 or float64 array."""

    ptr: int
    dtype: np.dtype


class SharedPlan(NamedTuple):
    first_digit: int  # absolute
    digits: int  # 0: every add goes to the global rows
    copies: int  # a power of two, 1 ... 32
    label: str

    def bytes(self, num_bins: int) -> int:
        """Shared memory: each copy's bins (digits, then flags), padded to an
        odd count of int64 slots (weighted_histogram.cu's copy_stride)."""
        if not self.digits:
            return 0
        return self.copies * ((num_bins * (self.digits + 1)) | 1) * 8


def weight_kind(dtype: np.dtype) -> str:
    """The oracle's name of a weight dtype ("f" float32, "d" float64)."""
    kind = np.dtype(dtype).char
    if kind not in CHUNK_SPAN:
        raise TypeError(f"GPU weights must be float32 or float64; got {np.dtype(dtype)}")
    return kind


def digit_span(kind: str) -> tuple[int, int]:
    """(first, last) absolute 16-bit digit of a row: the oracle's 32-bit chunks,
    two digits each."""
    lo, top = CHUNK_SPAN[kind]
    return 2 * lo, 2 * top + 1


def row_slots(dtype: np.dtype) -> int:
    """int64 slots of a bin's global row: its digits, then the flags."""
    lo, top = digit_span(weight_kind(dtype))
    return top - lo + 2


def _most_copies(plan: SharedPlan, num_bins: int, max_shared: int, cap: int) -> SharedPlan:
    """plan with the most copies (a power of two up to cap) that fit, or 0."""
    copies = cap
    while copies and plan._replace(copies=copies).bytes(num_bins) > max_shared:
        copies //= 2
    return plan._replace(copies=copies)


def shared_plan(max_shared: int, dtype: np.dtype, num_bins: int, layout: str = "auto",
                copies: int = WARP) -> SharedPlan:
    """Which digits a block keeps in shared memory, in how many copies (the
    module's docstring); copies caps them, and layout ("rows", "window" or
    "global": the conformance suite's variants) forces one where it fits."""
    kind = weight_kind(dtype)
    lo, top = digit_span(kind)
    rows = _most_copies(SharedPlan(lo, top - lo + 1, 1, "rows"), num_bins, max_shared, copies)
    window = _most_copies(SharedPlan(*WINDOWS[kind], 1, "window"), num_bins, max_shared,
                          copies)
    none = SharedPlan(lo, 0, 1, "global")
    if layout != "auto":
        plan = {"rows": rows, "window": window, "global": none}[layout]
        return plan if plan.copies else none
    if rows.copies and (rows.copies >= min(MIN_ROW_COPIES, copies)
                        or rows.copies >= window.copies):
        return rows
    return window if window.copies else none


def runs_for(plan: SharedPlan) -> bool:
    """Whether a thread sums its weights of one bin in registers before adding
    them (contract.NO_RUNS_FROM_COPIES): not where the block keeps enough
    shared copies that lanes of one bin rarely add to one word."""
    return not plan.digits or plan.copies < contract.NO_RUNS_FROM_COPIES


def defines(dtype: np.dtype, plan: SharedPlan, runs: bool, key_dtype: np.dtype,
            min_span: int = 1, num_bins: int = 1) -> dict[str, str]:
    kind = weight_kind(dtype)
    lo, top = CHUNK_SPAN[kind]
    lone = runs and num_bins >= contract.LONE_RUN_FROM_BINS
    return {**contract.key_defines(key_dtype), "WEIGHT_DOUBLE": str(int(kind == "d")),
            **({"LONE_RUN": "1"} if lone else {}),
            "CHUNK_LO": str(lo), "CHUNK_TOP": str(top),
            **{name: str(bit) for name, bit in SPECIAL_FLAGS.items()},
            "SHARED_LO": str(plan.first_digit), "SHARED_SLOTS": str(plan.digits),
            "COPIES": str(plan.copies), **({} if runs else {"RUN_SLOTS": "0"}),
            # every add global: small ones whole (launches of GLOBAL_LAUNCH_WEIGHTS)
            **({} if plan.digits else {"WHOLE_ADD_BITS": str(WHOLE_ADD_BITS)}),
            **({} if min_span == 1 else {"MIN_SPAN": str(min_span)})}


def weighted_histogram(rt: Runtime, keys: Keys, weights: Weights, num_bins: int,
                       sums: DeviceArray, first_bad: DeviceArray, grid: int | None = None,
                       layout: str = "auto", runs: bool | None = None, copies: int = WARP,
                       min_span: int = 1, launch_weights: int = MAX_LAUNCH_WEIGHTS
                       ) -> list[Geometry]:
    """sums[b] (float64 bits, num_bins of them) = the exact sum of the weights
    of the keys equal to b, rounded once; keys outside [0, num_bins) are
    skipped and the first is noted in first_bad. grid, layout, runs (False:
    every weight added on its own), copies (at most this many), min_span
    (each warp walks at least this many consecutive weights) and
    launch_weights force the launch's shape (the conformance suite's
    variants: every path at small K, long runs and several launches at
    small N); runs=None chooses by the shared plan (runs_for)."""
    slots = row_slots(weights.dtype)

    def build(max_shared: int):
        plan = shared_plan(max_shared, weights.dtype, num_bins, layout, copies)
        with_runs = runs_for(plan) if runs is None else runs
        made = defines(weights.dtype, plan, with_runs, keys.dtype, min_span, num_bins)
        return plan, with_runs, made, rt.kernel(SOURCE, "accumulate_weights", made)

    plan, with_runs, build_defines, accumulate = build(rt.max_shared_per_block)
    if plan.bytes(num_bins) > rt.max_dynamic_shared(accumulate):
        plan, with_runs, build_defines, accumulate = build(
            rt.max_dynamic_shared(accumulate))
    shared = plan.bytes(num_bins)
    rows = rt.empty(num_bins * slots, np.int64)
    rt.memset(rows.ptr, 0, num_bins * slots * 8)
    geometries = []
    resident = rt.resident_blocks(accumulate, FAST_BLOCK, shared)
    if grid is None:
        full = blocks_for(keys.n, FAST_BLOCK * contract.WEIGHTS_PER_THREAD,
                          rt.sm_count * resident)
    else:
        full = grid
    # No block adds more than BLOCK_WEIGHTS weights a launch (its slots' room),
    # nor a launch more than its global slots have room for.
    most = MAX_LAUNCH_WEIGHTS if plan.digits else GLOBAL_LAUNCH_WEIGHTS
    per_launch = max(1, min(launch_weights, most, full * BLOCK_WEIGHTS))
    for start in range(0, keys.n, per_launch):
        count = min(per_launch, keys.n - start)
        if start:  # every slot back below 2^32 before the next launch adds
            carry = rt.kernel(SOURCE, "carry_rows", build_defines)
            shape = Geometry("carry_rows", blocks_for(num_bins, 256, rt.sm_count * 8), 256)
            rt.launch(carry, shape, rows.ptr, np.uint64(num_bins))
            geometries.append(shape)
        blocks = grid if grid is not None else blocks_for(
            count, FAST_BLOCK * contract.WEIGHTS_PER_THREAD, rt.sm_count * resident)
        shape = Geometry(f"accumulate_weights[{plan.label}, COPIES={plan.copies}"
                         f"{'' if with_runs else ', no runs'}]", blocks, FAST_BLOCK, shared)
        rt.launch(accumulate, shape, keys.ptr + start * keys.dtype.itemsize,
                  weights.ptr + start * weights.dtype.itemsize, np.int64(count),
                  np.int64(start), np.uint64(num_bins), rows.ptr, first_bad.ptr)
        geometries.append(shape)
    round_rows = rt.kernel(SOURCE, "round_rows", build_defines)
    shape = Geometry("round_rows", blocks_for(num_bins, 128, rt.sm_count * 8), 128)
    rt.launch(round_rows, shape, rows.ptr, np.uint64(num_bins), sums.ptr)
    geometries.append(shape)
    return geometries  # rows is freed stream-ordered, after round_rows
