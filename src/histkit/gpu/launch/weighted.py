"""Weighted histograms with exact sums (weighted_histogram.cu): the shared
memory each block keeps, and the launches.

A bin's sum is one integer (oracles._weighted's, whose 32-bit chunk span is
defined there and passed as defines), held by the kernel in 16-bit digits,
each in an int64 slot: a float32 weight is one add, a float64 weight two.
Each block keeps, in shared memory, copies of every digit of every bin (whole
rows), else of a window of the digits that everyday weights reach (the rest
of a weight goes to the global row), else nothing (every add global); as
many copies as fit, up to one per lane, so that lanes adding to one bin add
to different words. Where not even a window of every bin fits (many bins),
the keys are first partitioned by their bin's high bits, and each partition
is summed in shared memory as a few bins would be.
"""

from __future__ import annotations

from functools import lru_cache
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
from histkit.gpu.launch.common import Gate, Keys, blocks_for, gate_args, gate_defines
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


@lru_cache(maxsize=4096)  # a call asks for several plans: tens of us of Python each
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


@lru_cache(maxsize=4096)
def partition_bits(max_shared: int, dtype: np.dtype, num_bins: int, least: int | None = None,
                   copies: int = WARP) -> int | None:
    """Bits of a partition's bins (2^bits of them) where the keys are
    partitioned (contract.WEIGHTED_PART_MAX_BITS says how they are chosen),
    at least `least` if given; enough that at most MAX_PARTS partitions
    cover num_bins. None where no window of a partition's bins fits a block."""
    floor = max(0, (num_bins - 1).bit_length() - (contract.MAX_PARTS.bit_length() - 1))

    def fits(bits: int) -> SharedPlan:
        return shared_plan(max_shared, dtype, 1 << bits, "auto", copies)

    if least is not None:
        bits = max(least, floor)
        return bits if fits(bits).digits else None
    candidates = range(max(floor, contract.WEIGHTED_PART_MAX_BITS), floor - 1, -1)
    for enough in (min(contract.NO_RUNS_FROM_COPIES, copies), 1):
        for bits in candidates:
            plan = fits(bits)
            if plan.digits and plan.copies >= enough:
                return bits
    return None


class _Build(NamedTuple):
    plan: SharedPlan  # of num_bins bins, or of a partition's
    runs: bool
    defines: dict[str, str]  # round_rows' (never gated)
    gated: dict[str, str]  # the accumulating kernels' and carry_rows': defines, and the gate's
    gate: tuple  # their last arguments (the gate's word, if gated)
    accumulate: object  # the compiled accumulate_weights or accumulate_parts
    part_bits: int | None  # None: the keys are not partitioned


def _build(rt: Runtime, keys: Keys, weights: Weights, num_bins: int, layout: str,
           runs: bool | None, copies: int, min_span: int, part_bits: int | None,
           gate: Gate | None, max_shared: int) -> _Build | None:
    """The kernels for these options within max_shared bytes of shared memory
    a block (the accumulating ones gated by gate, if given); None where the
    keys are to be partitioned and cannot be."""
    bits = None
    if layout == "partitioned":
        bits = partition_bits(max_shared, weights.dtype, num_bins, part_bits, copies)
        if bits is None:
            return None
    plan = shared_plan(max_shared, weights.dtype, num_bins if bits is None else 1 << bits,
                       "auto" if bits is not None else layout, copies)
    with_runs = runs_for(plan) if runs is None else runs
    made = defines(weights.dtype, plan, with_runs, keys.dtype, min_span,
                   num_bins if bits is None else 1 << bits)
    if bits is not None:
        made["PART_BITS"] = str(bits)
    entry = "accumulate_weights" if bits is None else "accumulate_parts"
    gated = {**made, **gate_defines(gate)}
    return _Build(plan, with_runs, made, gated, gate_args(gate),
                  rt.kernel(SOURCE, entry, gated), bits)


def _fitted_build(rt: Runtime, keys: Keys, weights: Weights, num_bins: int, layout: str,
                  runs: bool | None, copies: int, min_span: int, part_bits: int | None,
                  gate: Gate | None = None) -> _Build | None:
    """_build within the shared memory its accumulating kernel may have (the
    device's limit less that kernel's static shared memory)."""
    options = (rt, keys, weights, num_bins, layout, runs, copies, min_span, part_bits, gate)
    built = _build(*options, rt.max_shared_per_block)
    if built is not None:
        shared = built.plan.bytes(num_bins if built.part_bits is None else 1 << built.part_bits)
        if shared > rt.max_dynamic_shared(built.accumulate):
            built = _build(*options, rt.max_dynamic_shared(built.accumulate))
    return built


def weighted_histogram(rt: Runtime, keys: Keys, weights: Weights, num_bins: int,
                       sums: DeviceArray, first_bad: DeviceArray, grid: int | None = None,
                       layout: str = "auto", runs: bool | None = None, copies: int = WARP,
                       min_span: int = 1, launch_weights: int = MAX_LAUNCH_WEIGHTS,
                       part_bits: int | None = None) -> list[Geometry]:
    """sums[b] (float64 bits, num_bins of them) = the exact sum of the weights
    of the keys equal to b, rounded once; keys outside [0, num_bins) are
    skipped and the first is noted in first_bad.

    grid, layout ("rows", "window", "global", "partitioned" or "sampled":
    launch_choice), runs (False: every weight added on its own), copies (at
    most this many), min_span (each warp walks at least this many
    consecutive weights), launch_weights and part_bits (a partition's bins:
    2^part_bits, at least) force the launch's shape (the conformance suite's
    variants: every path at small K, long runs and several launches at small
    N); runs=None chooses by the shared plan (runs_for). Where no window of
    every bin fits a block, "auto" chooses on the device between every add
    global and the keys partitioned, from contract.WEIGHTED_PART_MIN_WEIGHTS
    weights on (launch_choice)."""
    options = (runs, copies, min_span, part_bits)
    built = _fitted_build(rt, keys, weights, num_bins,
                          "global" if layout == "sampled" else layout, *options)
    if built is None:  # a partition's window does not fit either
        built = _fitted_build(rt, keys, weights, num_bins, "global", *options)
    choose = layout == "sampled" or (layout == "auto" and not built.plan.digits
                                     and keys.n >= contract.WEIGHTED_PART_MIN_WEIGHTS)
    if choose and _fitted_build(rt, keys, weights, num_bins, "partitioned", *options) is None:
        choose = False  # a partition's window does not fit: every add global
    slots = row_slots(weights.dtype)
    rows = rt.empty(num_bins * slots, np.int64)
    rt.memset(rows.ptr, 0, num_bins * slots * 8)
    args = (rt, keys, weights, num_bins, rows, first_bad, grid)
    if choose:
        geometries = launch_choice(*args, options, launch_weights)
    elif built.part_bits is None:
        geometries = _accumulate(*args, built, launch_weights)
    else:
        geometries = _accumulate_parts(*args, built, launch_weights)
    round_rows = rt.kernel(SOURCE, "round_rows", built.defines)
    shape = Geometry("round_rows", blocks_for(num_bins, 128, rt.sm_count * 8), 128)
    rt.launch(round_rows, shape, rows.ptr, np.uint64(num_bins), sums.ptr)
    geometries.append(shape)
    return geometries  # rows is freed stream-ordered, after round_rows


def _carry(rt: Runtime, built: _Build, rows: DeviceArray, num_bins: int) -> Geometry:
    """Every slot of the rows back below 2^32 (between launches), a warp a
    row; gated as the accumulating kernels it serves are (a way auto did not
    choose carries nothing)."""
    carry = rt.kernel(SOURCE, "carry_rows", built.gated)
    shape = Geometry("carry_rows", blocks_for(num_bins * WARP, 256, rt.sm_count * 8), 256)
    rt.launch(carry, shape, rows.ptr, np.uint64(num_bins), *built.gate)
    return shape


def _accumulate(rt: Runtime, keys: Keys, weights: Weights, num_bins: int, rows: DeviceArray,
                first_bad: DeviceArray, grid: int | None, built: _Build,
                launch_weights: int) -> list[Geometry]:
    """accumulate_weights over the keys, a launch at a time."""
    plan, accumulate = built.plan, built.accumulate
    shared = plan.bytes(num_bins)
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
            geometries.append(_carry(rt, built, rows, num_bins))
        blocks = grid if grid is not None else blocks_for(
            count, FAST_BLOCK * contract.WEIGHTS_PER_THREAD, rt.sm_count * resident)
        shape = Geometry(f"accumulate_weights[{plan.label}, COPIES={plan.copies}"
                         f"{'' if built.runs else ', no runs'}]", blocks, FAST_BLOCK, shared)
        rt.launch(accumulate, shape, keys.ptr + start * keys.dtype.itemsize,
                  weights.ptr + start * weights.dtype.itemsize, np.int64(count),
                  np.int64(start), np.uint64(num_bins), rows.ptr, first_bad.ptr, *built.gate)
        geometries.append(shape)
    return geometries


def _accumulate_parts(rt: Runtime, keys: Keys, weights: Weights, num_bins: int,
                      rows: DeviceArray, first_bad: DeviceArray, grid: int | None,
                      built: _Build, launch_weights: int) -> list[Geometry]:
    """The keys partitioned by their bin's high bits, then each partition
    summed in shared memory (weighted_histogram.cu), a launch at a time."""
    bits, plan, accumulate = built.part_bits, built.plan, built.accumulate
    num_parts = -(-num_bins // (1 << bits))
    shared = plan.bytes(1 << bits)
    count_parts = rt.kernel(SOURCE, "count_parts", built.gated)
    scatter_parts = rt.kernel(SOURCE, "scatter_parts", built.gated)
    most = rt.sm_count * rt.resident_blocks(accumulate, FAST_BLOCK, shared)
    # count_parts only reads keys: a grid as full as its own residency allows
    # (the accumulating blocks' shared memory would leave it half the loads
    # in flight)
    count_most = rt.sm_count * rt.resident_blocks(count_parts, FAST_BLOCK, 0)
    # scatter_parts stages a tile's weights and bins in shared memory
    scatter_block = contract.SCATTER_THREADS
    scatter_tile = scatter_block * contract.SCATTER_ITEMS
    staged = scatter_tile * (weights.dtype.itemsize + 4)
    scatter_most = rt.sm_count * rt.resident_blocks(scatter_parts, scatter_block, staged)
    blocks = grid if grid is not None else most
    # Each accumulating block adds at most BLOCK_WEIGHTS weights a launch.
    per_launch = max(1, min(launch_weights, contract.WEIGHTED_PART_LAUNCH_WEIGHTS,
                            blocks * BLOCK_WEIGHTS))
    scratch = min(per_launch, keys.n)
    low_bins = rt.empty(scratch, np.uint16)
    moved = rt.empty(scratch, weights.dtype)
    parts = rt.empty(2 * num_parts, np.uint32)  # each partition's total, then its cursor
    label = (f"[PART_BITS={bits}, {plan.label}, COPIES={plan.copies}"
             f"{'' if built.runs else ', no runs'}]")
    geometries = []
    for start in range(0, keys.n, per_launch):
        count = min(per_launch, keys.n - start)
        if start:
            geometries.append(_carry(rt, built, rows, num_bins))
        rt.memset(parts.ptr, 0, 2 * num_parts * 4)
        at_keys = keys.ptr + start * keys.dtype.itemsize
        at_weights = weights.ptr + start * weights.dtype.itemsize
        counting = Geometry("count_parts", grid if grid is not None else blocks_for(
            count, FAST_BLOCK * contract.WEIGHTS_PER_THREAD, count_most), FAST_BLOCK)
        rt.launch(count_parts, counting, at_keys, np.int64(count), np.int64(start),
                  np.uint64(num_bins), np.uint32(num_parts), parts.ptr, first_bad.ptr,
                  *built.gate)
        scattering = Geometry("scatter_parts", grid if grid is not None else blocks_for(
            count, scatter_tile, scatter_most), scatter_block, staged)
        rt.launch(scatter_parts, scattering, at_keys, at_weights, np.int64(count),
                  np.uint64(num_bins), np.uint32(num_parts), parts.ptr,
                  parts.ptr + num_parts * 4, low_bins.ptr, moved.ptr, *built.gate)
        shape = Geometry(f"accumulate_parts{label}", blocks, FAST_BLOCK, shared)
        rt.launch(accumulate, shape, low_bins.ptr, moved.ptr, np.uint64(num_bins),
                  np.uint32(num_parts), parts.ptr, rows.ptr, *built.gate)
        geometries += [counting, scattering, shape]
    return geometries  # the scratch is freed stream-ordered, after the launches


def launch_choice(rt: Runtime, keys: Keys, weights: Weights, num_bins: int, rows: DeviceArray,
                  first_bad: DeviceArray, grid: int | None, options: tuple,
                  launch_weights: int) -> list[Geometry]:
    """Both ways of adding many bins' weights, each gated by a choice made on
    the device (common.cuh's HK_GATE), so that the host never waits for it:
    partitioned_histogram.cu's auto_choice samples the keys, and the keys are
    partitioned where the sampled runs scatter over the rows (uniform keys),
    else every add goes global (one hot bin, sorted keys, where a thread's
    runs sum most weights before they are added). Only the chosen launches
    add; the partitions' scratch is allocated either way."""
    from histkit.gpu.launch.partitioned import choose_on_device

    choice = rt.empty(1, np.uint32)
    choose_on_device(rt, keys, num_bins, 0, choice)
    parts = Gate(choice.ptr, contract.AUTO_PARTITIONED)
    every_other = Gate(choice.ptr, contract.AUTO_PARTITIONED, unless=True)
    parted = _fitted_build(rt, keys, weights, num_bins, "partitioned", *options, gate=parts)
    direct = _fitted_build(rt, keys, weights, num_bins, "global", *options, gate=every_other)
    args = (rt, keys, weights, num_bins, rows, first_bad, grid)
    return (_accumulate_parts(*args, parted, launch_weights)
            + _accumulate(*args, direct, launch_weights))  # choice is freed after them
