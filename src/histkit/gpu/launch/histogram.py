"""The one-key-per-thread histograms (atomic, naive), the chapter's privatized
kernel, and the fast kernel."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from histkit.gpu.contract import (
    CHAPTER_BLOCK,
    FAST_BLOCK,
    FAST_NARROW_SPILL,
    MAX_KEYS_PER_BLOCK,
    WARP,
)
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import (
    Gate,
    Keys,
    blocks_for,
    gate_args,
    gate_choice,
    gate_defines,
    grid_stride_blocks,
    key_args,
    zero_counts,
)
from histkit.gpu.policy import FastLayout, fast_layout


def _one_key_per_thread(rt: Runtime, source: str, name: str, keys: Keys, num_bins: int,
                        hist: DeviceArray, first_bad: DeviceArray,
                        grid: int | None = None) -> Geometry:
    """The chapter's launch shape: blocks of 256, grid-stride over the keys."""
    kernel = rt.kernel(source, name, keys.defines())
    geometry = Geometry(name, grid_stride_blocks(rt, keys.n, grid), CHAPTER_BLOCK)
    zero_counts(rt, hist, num_bins)
    rt.launch(kernel, geometry, *key_args(keys, num_bins), hist.ptr, first_bad.ptr)
    return geometry


def atomic_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                     first_bad: DeviceArray, grid: int | None = None) -> Geometry:
    return _one_key_per_thread(rt, "atomic_histogram.cu", "atomic_histogram", keys, num_bins,
                               hist, first_bad, grid)


def naive_histogram_grid(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                         first_bad: DeviceArray, grid: int | None = None) -> Geometry:
    return _one_key_per_thread(rt, "naive_histogram.cu", "naive_histogram_grid", keys, num_bins,
                               hist, first_bad, grid)


def naive_histogram_one_warp(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                             first_bad: DeviceArray, warp_size: int = WARP) -> Geometry:
    if not 1 <= warp_size <= WARP:
        raise ValueError(f"the one-warp kernel runs waves of 1..{WARP} lanes; got {warp_size}")
    kernel = rt.kernel("naive_histogram.cu", "naive_histogram_one_warp", keys.defines())
    geometry = Geometry("naive_histogram_one_warp", 1, warp_size)
    zero_counts(rt, hist, num_bins)
    rt.launch(kernel, geometry, *key_args(keys, num_bins), hist.ptr, first_bad.ptr)
    return geometry


def privatized_geometry(rt: Runtime, n: int, num_bins: int, block_size: int = CHAPTER_BLOCK,
                        num_blocks: int | None = None) -> Geometry:
    """The privatized kernel's launch; num_blocks=None means one resident wave."""
    shared = num_bins * 4
    if shared > rt.max_shared_per_block:
        raise UnsupportedShape(f"the privatized kernel keeps {num_bins} bins in shared memory, "
                         f"which holds at most {rt.max_shared_per_block // 4} here; "
                         f"use method='auto' or 'atomic'")
    if num_blocks is None:
        num_blocks = blocks_for(n, block_size, rt.sm_count * 8)
    num_blocks = max(num_blocks, -(-n // MAX_KEYS_PER_BLOCK))
    return Geometry("privatized_histogram", num_blocks, block_size, shared)


def privatized_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                         first_bad: DeviceArray, geometry: Geometry | None = None,
                         atomics_issued: DeviceArray | None = None,
                         grid: int | None = None) -> Geometry:
    """With atomics_issued, the kernel is built to count its global atomics into it."""
    if geometry is None:
        geometry = privatized_geometry(rt, keys.n, num_bins, num_blocks=grid)
    extra = {"COUNT_GLOBAL_ATOMICS": "1"} if atomics_issued is not None else {}
    kernel = rt.kernel("privatized_histogram.cu", "privatized_histogram",
                       keys.defines(**extra))
    zero_counts(rt, hist, num_bins)
    rt.launch(kernel, geometry, *key_args(keys, num_bins), hist.ptr, first_bad.ptr,
              atomics_issued.ptr if atomics_issued is not None else 0)
    return geometry


# From this many bins on, fast_launch runs the atomic kernel (the fast
# kernel's bin arithmetic is 32-bit).
FAST_BINS_LIMIT = 2**32
# The fast kernel's vector loads (uint4): keys before the first address
# aligned to them are its scalar head.
VECTOR_BYTES = 16


def vector_head(ptr: int, n: int, itemsize: int) -> int:
    """Keys before the first VECTOR_BYTES-aligned one (the fast kernel's
    scalar head) of n keys of itemsize bytes at ptr."""
    if ptr % itemsize:
        return n  # misaligned elements: read them all one by one
    return min(n, (-ptr % VECTOR_BYTES) // itemsize)


def fast_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                   first_bad: DeviceArray, hold_runs: bool = False, grid: int | None = None,
                   shared_share: float | None = None, narrow: bool = False) -> Geometry:
    """Vector loads, private shared copies, global atomics past shared memory.

    hold_runs: each thread adds a run of one global bin once (for one hot bin
    past shared memory; fast_histogram.cu's HOLD_RUNS). grid forces the block
    count; shared_share forces the share of bins kept in shared memory, and
    narrow 16-bit shared counters (the conformance suite reaches the
    global-atomic paths and the narrow counters at small num_bins so).
    """
    return fast_launch(rt, keys, num_bins, hist, first_bad, hold_runs, grid, shared_share,
                       narrow=narrow)


def fast_launch(rt: Runtime, keys: Keys, num_bins: int, hist, first_bad, hold_runs: bool,
                grid: int | None, shared_share: float | None, label: str = "",
                narrow: bool = False, gate: Gate | None = None) -> Geometry:
    """fast_histogram's launch; label prefixes the geometry's name (auto's choice).

    gate: a launch gated by auto's choice on the device, into counts its
    caller has zeroed (another gated launch may run instead of this one)."""
    if num_bins >= FAST_BINS_LIMIT:
        geometry = atomic_histogram(rt, keys, num_bins, hist, first_bad, grid)
        return Geometry(label + geometry.kernel, geometry.grid, geometry.block)
    kernel, geometry, n_and_bins, shared_bins, overwrite = fast_plan(
        rt, keys, num_bins, hold_runs, grid, shared_share, label, narrow, gate)
    # The arguments first, the zeroing right before the launch: from an idle
    # GPU, the GPU waits between the two for whatever host work lies there.
    # (histkit.gpu._lane packs the same arguments in the same order.)
    args = (keys.ptr, *n_and_bins, np.int64(vector_head(keys.ptr, keys.n, keys.dtype.itemsize)),
            shared_bins, overwrite, hist.ptr, first_bad.ptr, *gate_args(gate))
    if not overwrite and gate is None:
        zero_counts(rt, hist, num_bins)
    rt.launch(kernel, geometry, *args)
    return geometry


def fast_plan(rt: Runtime, keys: Keys, num_bins: int, hold_runs: bool, grid: int | None,
              shared_share: float | None, label: str = "", narrow: bool = False,
              gate: Gate | None = None):
    """(kernel, geometry, (n, num_bins), shared_bins, overwrite): fast_launch's
    plan, which depends on the shape only: made once, so a repeated call pays
    one dict lookup, not the layout, the compile key, the names and the
    scalar arguments."""
    shape = ("fast", keys.dtype, keys.n, num_bins, hold_runs, grid, shared_share, label, narrow,
             gate_choice(gate))
    return rt.plan(shape, lambda: _fast_plan(rt, keys, num_bins, hold_runs, grid,
                                             shared_share, label, narrow, gate))


def fast_blocks(rt: Runtime, kernel, keys: Keys, shared: int, grid: int | None) -> int:
    """The grid of a kernel that counts as fast_histogram does (counting.cuh;
    bin_histogram.cu too): every block resident at once, at least 16 keys a
    thread, or the forced grid; never more keys a block than MAX_KEYS_PER_BLOCK."""
    if grid is None:
        resident = rt.resident_blocks(kernel, FAST_BLOCK, shared)
        blocks = blocks_for(keys.n, FAST_BLOCK * 16, rt.sm_count * resident)
    else:
        blocks = grid
    return max(blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))


def overwrites_counts(n: int, num_bins: int, blocks: int, layout: FastLayout) -> bool:
    """Whether fast_histogram stores its sums over hist instead of adding them
    (its `overwrite` argument), so the launch needs no zeroed counts: one
    block holds every key's count, which is so when that block is the grid,
    every bin is shared (no global atomics) and no 16-bit counter can spill to
    the global bin (a counter of fewer keys than NARROW_SPILL never does). A
    small call (auto's one block, up to 16384 keys) then skips the memset:
    5-7 us less a call on the H200 (docs/performance.md)."""
    return (blocks == 1 and layout.shared_bins == num_bins
            and (not layout.narrow or n < FAST_NARROW_SPILL))


def _fast_plan(rt: Runtime, keys: Keys, num_bins: int, hold_runs: bool, grid: int | None,
               shared_share: float | None, label: str, narrow: bool = False,
               gate: Gate | None = None):
    """(kernel, geometry, (n, num_bins), shared_bins, overwrite) of
    fast_histogram for one shape, the scalars as the kernel takes them."""
    layout, coalesced, hold, kernel = _fast_build(
        rt, keys, num_bins, hold_runs, shared_share, rt.max_shared_per_block, narrow, gate)
    if layout.shared_bytes > rt.max_dynamic_shared(kernel):
        # A build with static shared memory (the skewed builds count barriers
        # there) leaves less for the copies: the one copy shrinks to fit.
        layout, coalesced, hold, kernel = _fast_build(
            rt, keys, num_bins, hold_runs, shared_share, rt.max_dynamic_shared(kernel), narrow,
            gate)
    shared = layout.shared_bytes
    blocks = fast_blocks(rt, kernel, keys, shared, grid)
    narrow_tag = ", NARROW_COUNTERS=1" if layout.narrow else ""
    geometry = Geometry(f"{label}fast_histogram[COPIES={layout.copies}{narrow_tag}, "
                        f"shared_bins={layout.shared_bins}, COALESCED={coalesced}, "
                        f"HOLD_RUNS={hold}]", blocks, FAST_BLOCK, shared)
    overwrite = np.uint32(overwrites_counts(keys.n, num_bins, blocks, layout))
    return (kernel, geometry, key_args(keys, num_bins)[1:], np.uint64(layout.shared_bins),
            overwrite)


def _fast_build(rt: Runtime, keys: Keys, num_bins: int, hold_runs: bool,
                shared_share: float | None, max_shared: int, narrow: bool = False,
                gate: Gate | None = None):
    """(layout, COALESCED, HOLD_RUNS, kernel) of fast_histogram for blocks of
    up to max_shared bytes of dynamic shared memory (narrow: 16-bit counters
    whatever num_bins)."""
    layout = fast_layout(max_shared, num_bins)
    if narrow:
        layout = FastLayout(1, min(num_bins, 2 * (max_shared // 4 - 1)), narrow=True)
    if shared_share is not None:
        layout = replace(layout, shared_bins=min(layout.shared_bins,
                                                 int(num_bins * shared_share)))
    # Mostly global bins: coalesced scalar reads keep a warp's atomics on
    # neighbouring addresses (see fast_histogram.cu).
    coalesced = "1" if layout.shared_bins < num_bins // 2 else "0"
    hold = "1" if hold_runs else "0"
    kernel = rt.kernel("fast_histogram.cu", "fast_histogram",
                       keys.defines(COPIES=str(layout.copies), COALESCED=coalesced,
                                    HOLD_RUNS=hold, NARROW_COUNTERS=str(int(layout.narrow)),
                                    **gate_defines(gate)))
    return layout, coalesced, hold, kernel
