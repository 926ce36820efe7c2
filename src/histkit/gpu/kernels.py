"""One launch wrapper per kernel family in cuda/.

Wrappers take device pointers and sizes, pick the geometry, launch on the
runtime's stream and return the geometry they used; they do not validate user
input (histkit.gpu.api does) and do not synchronise unless a result is needed
to go on (the sort reads nothing back: bad keys are checked by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.gpu.device import KEY_C_TYPES, DeviceArray, Runtime
from histkit.gpu.geometry import CHAPTER_BLOCK, WARP, Geometry

NO_BAD_KEY = np.iinfo(np.uint64).max
SCAN_TILE = 256 * 8  # SCAN_THREADS * SCAN_ITEMS in exclusive_scan.cu
FAST_BLOCK = 1024
# Per-block shared memory the fast kernel aims for: small enough that two
# blocks of FAST_BLOCK threads share an SM.
FAST_SHARED_BUDGET = 100 * 1024
# Shared counters are 32-bit: no block may count 2^32 keys.
MAX_KEYS_PER_BLOCK = 2**32 - 1


@dataclass(frozen=True)
class Keys:
    """Keys already on the device: a contiguous 1-d array."""

    ptr: int
    n: int
    dtype: np.dtype

    def defines(self, **extra: str) -> dict[str, str]:
        return {"KEY_T": KEY_C_TYPES[self.dtype], **extra}


def _args(keys: Keys, num_bins: int):
    return (keys.ptr, np.int64(keys.n), np.uint64(num_bins))


def _blocks_for(items: int, block: int, cap: int) -> int:
    return max(1, min(-(-items // block), cap))


def _one_key_per_thread(rt: Runtime, source: str, name: str, keys: Keys, num_bins: int,
                        hist: DeviceArray, first_bad: DeviceArray) -> Geometry:
    """The chapter's launch shape: blocks of 256, grid-stride over the keys."""
    kernel = rt.kernel(source, name, keys.defines())
    geometry = Geometry(name, _blocks_for(keys.n, CHAPTER_BLOCK, rt.sm_count * 8), CHAPTER_BLOCK)
    rt.launch(kernel, geometry, *_args(keys, num_bins), hist.ptr, first_bad.ptr)
    return geometry


def atomic_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                     first_bad: DeviceArray) -> Geometry:
    return _one_key_per_thread(rt, "atomic_histogram.cu", "atomic_histogram", keys, num_bins,
                               hist, first_bad)


def naive_histogram_grid(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                         first_bad: DeviceArray) -> Geometry:
    return _one_key_per_thread(rt, "naive_histogram.cu", "naive_histogram_grid", keys, num_bins,
                               hist, first_bad)


def naive_histogram_one_warp(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                             first_bad: DeviceArray, warp_size: int = WARP) -> Geometry:
    if not 1 <= warp_size <= WARP:
        raise ValueError(f"the one-warp kernel runs waves of 1..{WARP} lanes; got {warp_size}")
    kernel = rt.kernel("naive_histogram.cu", "naive_histogram_one_warp", keys.defines())
    geometry = Geometry("naive_histogram_one_warp", 1, warp_size)
    rt.launch(kernel, geometry, *_args(keys, num_bins), hist.ptr, first_bad.ptr)
    return geometry


def privatized_geometry(rt: Runtime, n: int, num_bins: int, block_size: int = CHAPTER_BLOCK,
                        num_blocks: int | None = None) -> Geometry:
    """The privatized kernel's launch; num_blocks=None means one resident wave."""
    shared = num_bins * 4
    if shared > rt.max_shared_per_block:
        raise ValueError(f"the privatized kernel keeps {num_bins} bins in shared memory, "
                         f"which holds at most {rt.max_shared_per_block // 4} here; "
                         f"use method='auto' or 'atomic'")
    if num_blocks is None:
        num_blocks = _blocks_for(n, block_size, rt.sm_count * 8)
    num_blocks = max(num_blocks, -(-n // MAX_KEYS_PER_BLOCK))
    return Geometry("privatized_histogram", num_blocks, block_size, shared)


def privatized_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                         first_bad: DeviceArray, geometry: Geometry,
                         atomics_issued: DeviceArray | None = None) -> Geometry:
    """With atomics_issued, the kernel is built to count its global atomics into it."""
    extra = {"COUNT_GLOBAL_ATOMICS": "1"} if atomics_issued is not None else {}
    kernel = rt.kernel("privatized_histogram.cu", "privatized_histogram",
                       keys.defines(**extra))
    rt.launch(kernel, geometry, *_args(keys, num_bins), hist.ptr, first_bad.ptr,
              atomics_issued.ptr if atomics_issued is not None else 0)
    return geometry


def _vector_head(keys: Keys) -> int:
    """Keys before the first 16-byte aligned one (the kernels' scalar head)."""
    if keys.ptr % keys.dtype.itemsize:
        return keys.n  # misaligned elements: read them all one by one
    return min(keys.n, (-keys.ptr % 16) // keys.dtype.itemsize)


def fast_layout(rt: Runtime, num_bins: int) -> tuple[int, int]:
    """(copies, shared_bins) for fast_histogram.

    As many private copies as fit FAST_SHARED_BUDGET (two blocks per SM); when
    not even one copy fits, one copy as large as a block may have, and the
    bins past it are counted in global memory.
    """
    copy_bytes = (num_bins + 1) * 4
    budget = min(FAST_SHARED_BUDGET, rt.max_shared_per_block)
    for copies in (32, 16, 8, 4, 2, 1):
        if copies * copy_bytes <= budget:
            return copies, num_bins
    return 1, min(num_bins, rt.max_shared_per_block // 4 - 1)


def fast_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                   first_bad: DeviceArray) -> Geometry:
    """Vector loads, private shared copies, global atomics past shared memory."""
    if num_bins >= 2**32:
        return atomic_histogram(rt, keys, num_bins, hist, first_bad)
    copies, shared_bins = fast_layout(rt, num_bins)
    shared = copies * (shared_bins + 1) * 4
    # Mostly global bins: coalesced scalar reads keep a warp's atomics on
    # neighbouring addresses (see fast_histogram.cu).
    coalesced = "1" if shared_bins < num_bins // 2 else "0"
    kernel = rt.kernel("fast_histogram.cu", "fast_histogram",
                       keys.defines(COPIES=str(copies), COALESCED=coalesced))
    resident = rt.resident_blocks(kernel, FAST_BLOCK, shared)
    blocks = _blocks_for(keys.n, FAST_BLOCK * 16, rt.sm_count * resident)
    blocks = max(blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))
    geometry = Geometry(f"fast_histogram[COPIES={copies}, shared_bins={shared_bins}, "
                        f"COALESCED={coalesced}]", blocks,
                        FAST_BLOCK, shared)
    rt.launch(kernel, geometry, *_args(keys, num_bins), np.int64(_vector_head(keys)),
              np.uint64(shared_bins), hist.ptr, first_bad.ptr)
    return geometry


def exclusive_scan(rt: Runtime, counts_ptr: int, n: int, out_ptr: int,
                   keep_alive: list) -> list[Geometry]:
    """out[i] = sum(counts[:i]) over uint64 counts, any n (tiles scanned recursively)."""
    if n == 0:
        return []
    defines: dict[str, str] = {}
    tiles = -(-n // SCAN_TILE)
    geometries = []
    if tiles == 1:
        offsets = rt.zeros(1, np.uint64)
    else:
        sums = rt.empty(tiles, np.uint64)
        offsets = rt.empty(tiles, np.uint64)
        geometry = Geometry("scan_tile_sums", tiles, 256)
        rt.launch(rt.kernel("exclusive_scan.cu", "scan_tile_sums", defines), geometry,
                  counts_ptr, np.int64(n), sums.ptr)
        geometries.append(geometry)
        geometries += exclusive_scan(rt, sums.ptr, tiles, offsets.ptr, keep_alive)
        keep_alive.append(sums)
    keep_alive.append(offsets)
    geometry = Geometry("scan_tiles", tiles, 256)
    rt.launch(rt.kernel("exclusive_scan.cu", "scan_tiles", defines), geometry,
              counts_ptr, np.int64(n), offsets.ptr, out_ptr)
    return geometries + [geometry]


def atomic_cursor_count(rt: Runtime, keys: Keys, num_bins: int, first_bad: DeviceArray,
                        keep_alive: list) -> tuple[DeviceArray, list[Geometry]]:
    """The chapter's count and scan: per-bin cursors starting at each bin's offset."""
    hist = rt.zeros(num_bins, np.uint64)
    cursor = rt.empty(num_bins, np.uint64)
    keep_alive.append(hist)
    geometries = [atomic_histogram(rt, keys, num_bins, hist, first_bad)]
    geometries += exclusive_scan(rt, hist.ptr, num_bins, cursor.ptr, keep_alive)
    return cursor, geometries


def scatter_atomic_cursor(rt: Runtime, keys: Keys, cursor: DeviceArray, out_keys: DeviceArray,
                          out_index: DeviceArray) -> Geometry:
    kernel = rt.kernel("counting_sort.cu", "scatter_atomic_cursor", keys.defines())
    geometry = Geometry("scatter_atomic_cursor",
                        _blocks_for(keys.n, CHAPTER_BLOCK, rt.sm_count * 8), CHAPTER_BLOCK)
    rt.launch(kernel, geometry, keys.ptr, np.int64(keys.n), cursor.ptr, out_keys.ptr,
              out_index.ptr)
    return geometry


def segment_length(n: int, num_bins: int) -> int:
    """Keys per warp-owned segment: the (bin, segment) table stays near N entries."""
    budget = max(1 << 22, n // 4)
    length = 2048
    while num_bins * -(-n // length) > budget and length < n:
        length *= 2
    return length


# Bins up to which a warp keeps its segment's counters in shared memory.
SHARED_TABLE_BINS = 1024
SEGMENT_BLOCK = 256  # 8 warps
# The tiled stable sort (counting_sort.cu's TILE_* defaults).
TILE_THREADS = 256
TILE_KEYS = TILE_THREADS * 8
TILE_MAX_BINS = TILE_THREADS


@dataclass
class StablePlan:
    """What the stable count pass left for the scatter pass.

    cursors[b * parts + p] is the output slot of the first key of bin b in
    part p of the input (a tile, or a warp's segment).
    """

    tiled: bool
    cursors: DeviceArray
    part_length: int
    parts: int
    geometries: list


def _segment_kernel(rt: Runtime, keys: Keys, num_bins: int, name: str):
    """The shared-table variant of a segment kernel when the table fits."""
    if num_bins <= SHARED_TABLE_BINS:
        shared = SEGMENT_BLOCK // WARP * num_bins * 8
        return rt.kernel("counting_sort.cu", f"{name}_shared", keys.defines()), shared
    return rt.kernel("counting_sort.cu", name, keys.defines()), 0


def stable_count(rt: Runtime, keys: Keys, num_bins: int, first_bad: DeviceArray,
                 keep_alive: list) -> StablePlan:
    """Count keys per (bin, part) and scan that table: the stable cursors.

    Up to TILE_MAX_BINS bins the parts are tiles ranked in shared memory;
    above, warp-owned segments whose length keeps the table near N entries.
    """
    tiled = num_bins <= TILE_MAX_BINS
    length = TILE_KEYS if tiled else segment_length(keys.n, num_bins)
    parts = -(-keys.n // length)
    counts = rt.empty(num_bins * parts, np.uint64) if tiled else rt.zeros(num_bins * parts,
                                                                            np.uint64)
    cursors = rt.empty(num_bins * parts, np.uint64)
    keep_alive.append(counts)
    if tiled:
        kernel = rt.kernel("counting_sort.cu", "count_tiles", keys.defines())
        blocks = _blocks_for(parts, 1, rt.sm_count * rt.resident_blocks(kernel, TILE_THREADS, 0))
        geometry = Geometry("count_tiles", blocks, TILE_THREADS)
    else:
        kernel, shared = _segment_kernel(rt, keys, num_bins, "count_segments")
        geometry = Geometry("count_segments" + ("_shared" if shared else ""),
                            _blocks_for(parts * WARP, SEGMENT_BLOCK, rt.sm_count * 8),
                            SEGMENT_BLOCK, shared)
    extra = () if tiled else (np.int64(length),)
    rt.launch(kernel, geometry, *_args(keys, num_bins), *extra, np.int64(parts), counts.ptr,
              first_bad.ptr)
    scans = exclusive_scan(rt, counts.ptr, num_bins * parts, cursors.ptr, keep_alive)
    return StablePlan(tiled, cursors, length, parts, [geometry, *scans])


def stable_scatter(rt: Runtime, keys: Keys, num_bins: int, plan: StablePlan,
                   out_keys: DeviceArray, out_index: DeviceArray) -> Geometry:
    """Write keys and original indices in stable order (keys already validated)."""
    if plan.tiled:
        kernel = rt.kernel("counting_sort.cu", "scatter_tiles_stable", keys.defines())
        blocks = _blocks_for(plan.parts, 1,
                             rt.sm_count * rt.resident_blocks(kernel, TILE_THREADS, 0))
        geometry = Geometry("scatter_tiles_stable", blocks, TILE_THREADS)
        rt.launch(kernel, geometry, *_args(keys, num_bins), np.int64(plan.parts),
                  plan.cursors.ptr, out_keys.ptr, out_index.ptr)
        return geometry
    kernel, shared = _segment_kernel(rt, keys, num_bins, "scatter_segments_stable")
    geometry = Geometry("scatter_segments_stable" + ("_shared" if shared else ""),
                        _blocks_for(plan.parts * WARP, SEGMENT_BLOCK, rt.sm_count * 8),
                        SEGMENT_BLOCK, shared)
    rt.launch(kernel, geometry, *_args(keys, num_bins), np.int64(plan.part_length),
              np.int64(plan.parts), plan.cursors.ptr, out_keys.ptr, out_index.ptr)
    return geometry
