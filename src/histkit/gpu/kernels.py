"""One launch wrapper per kernel family in cuda/.

Wrappers take device pointers and sizes, pick the geometry, launch on the
runtime's stream and return the geometry they used; they do not validate user
input (histkit.gpu.api does) and do not synchronise unless a result is needed
to go on (the sort reads nothing back: bad keys are checked by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import (
    CHAPTER_BLOCK,
    FAST_BLOCK,
    FAST_SHARED_BUDGET,
    MAX_KEYS_PER_BLOCK,
    NO_BAD_KEY,
    WARP,
)
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.geometry import Geometry

__all__ = ["NO_BAD_KEY", "Keys"]  # and the launchers below

SCAN_TILE = contract.SCAN_THREADS * contract.SCAN_ITEMS


class UnsupportedShape(ValueError):
    """This kernel cannot take this input's shape (too many bins for it, ...)."""


class Keys(NamedTuple):
    """Keys already on the device: a contiguous 1-d array (a named tuple: one
    is made per public call, and a tuple is the cheapest to make)."""

    ptr: int
    n: int
    dtype: np.dtype

    def defines(self, **extra: str) -> dict[str, str]:
        return {**contract.key_defines(self.dtype), **extra}


def _args(keys: Keys, num_bins: int):
    return (keys.ptr, np.int64(keys.n), np.uint64(num_bins))


def _blocks_for(items: int, block: int, cap: int) -> int:
    return max(1, min(-(-items // block), cap))


def _grid_stride_blocks(rt: Runtime, n: int, grid: int | None) -> int:
    """The chapter's grid (one key per thread, capped at 8 blocks per SM), or a forced one."""
    return grid if grid is not None else _blocks_for(n, CHAPTER_BLOCK, rt.sm_count * 8)


def _one_key_per_thread(rt: Runtime, source: str, name: str, keys: Keys, num_bins: int,
                        hist: DeviceArray, first_bad: DeviceArray,
                        grid: int | None = None) -> Geometry:
    """The chapter's launch shape: blocks of 256, grid-stride over the keys."""
    kernel = rt.kernel(source, name, keys.defines())
    geometry = Geometry(name, _grid_stride_blocks(rt, keys.n, grid), CHAPTER_BLOCK)
    rt.launch(kernel, geometry, *_args(keys, num_bins), hist.ptr, first_bad.ptr)
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
    rt.launch(kernel, geometry, *_args(keys, num_bins), hist.ptr, first_bad.ptr)
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
        num_blocks = _blocks_for(n, block_size, rt.sm_count * 8)
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
                   first_bad: DeviceArray, hold_runs: bool = False, grid: int | None = None,
                   shared_share: float | None = None) -> Geometry:
    """Vector loads, private shared copies, global atomics past shared memory.

    hold_runs: each thread adds a run of one global bin once (for one hot bin
    past shared memory; fast_histogram.cu's HOLD_RUNS). grid forces the block
    count; shared_share forces the share of bins kept in shared memory (the
    conformance suite reaches the global-atomic paths at small num_bins so).
    """
    return _fast_launch(rt, keys, num_bins, hist, first_bad, hold_runs, grid, shared_share)


def _fast_launch(rt: Runtime, keys: Keys, num_bins: int, hist, first_bad, hold_runs: bool,
                 grid: int | None, shared_share: float | None, label: str = "") -> Geometry:
    """fast_histogram's launch; label prefixes the geometry's name (auto's choice)."""
    if num_bins >= 2**32:
        geometry = atomic_histogram(rt, keys, num_bins, hist, first_bad, grid)
        return Geometry(label + geometry.kernel, geometry.grid, geometry.block)
    # The plan depends on the shape only: made once, so a repeated call pays
    # one dict lookup here, not the layout, the compile key, the names and the
    # scalar arguments.
    shape = ("fast", keys.dtype, keys.n, num_bins, hold_runs, grid, shared_share, label)
    plan = rt.plan(shape, lambda: _fast_plan(rt, keys, num_bins, hold_runs, grid,
                                             shared_share, label))
    kernel, geometry, n_and_bins, shared_bins = plan
    rt.launch(kernel, geometry, keys.ptr, *n_and_bins, np.int64(_vector_head(keys)),
              shared_bins, hist.ptr, first_bad.ptr)
    return geometry


def _fast_plan(rt: Runtime, keys: Keys, num_bins: int, hold_runs: bool, grid: int | None,
               shared_share: float | None, label: str):
    """(kernel, geometry, (n, num_bins), shared_bins) of fast_histogram for one
    shape, the scalars as the kernel takes them."""
    copies, shared_bins = fast_layout(rt, num_bins)
    if shared_share is not None:
        shared_bins = min(shared_bins, int(num_bins * shared_share))
    shared = copies * (shared_bins + 1) * 4
    # Mostly global bins: coalesced scalar reads keep a warp's atomics on
    # neighbouring addresses (see fast_histogram.cu).
    coalesced = "1" if shared_bins < num_bins // 2 else "0"
    hold = "1" if hold_runs else "0"
    kernel = rt.kernel("fast_histogram.cu", "fast_histogram",
                       keys.defines(COPIES=str(copies), COALESCED=coalesced, HOLD_RUNS=hold))
    if grid is None:
        resident = rt.resident_blocks(kernel, FAST_BLOCK, shared)
        blocks = _blocks_for(keys.n, FAST_BLOCK * 16, rt.sm_count * resident)
    else:
        blocks = grid
    blocks = max(blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))
    geometry = Geometry(f"{label}fast_histogram[COPIES={copies}, shared_bins={shared_bins}, "
                        f"COALESCED={coalesced}, HOLD_RUNS={hold}]", blocks,
                        FAST_BLOCK, shared)
    return kernel, geometry, _args(keys, num_bins)[1:], np.uint64(shared_bins)


PARTITION_BINS = 1 << contract.PART_LOW_BITS
PARTITION_TILE = contract.PART_THREADS * contract.PART_ITEMS
PARTITION_THREADS = contract.PART_THREADS
PARTITION_COUNT_THREADS = contract.PART_COUNT_THREADS
MAX_PARTITIONS = contract.MAX_PARTS
MAX_PARTITIONED_BINS = PARTITION_BINS * MAX_PARTITIONS
# method="auto" samples the keys (auto_choice) between these bin counts, for
# inputs of at least PARTITION_MIN_KEYS keys (bench/NOTES.md has the
# measurements).
PARTITION_MIN_BINS = 1 << 17
PARTITION_MAX_AUTO_BINS = 1 << 21
# Below 2^25 keys the sample's read-back costs more than it can save (H200,
# session 6, kernel times by events: at 2^22 keys and 2^20 bins the sampled
# choice took 170-228 us where the fast kernel alone took 31-68; at 2^24 keys
# the fast kernel is within 12% of the partitioned one on uniform keys, far
# ahead on zipf, and the sample adds 60-300 us). From 2^25 keys partitioning
# uniform keys wins more than the sample costs (2^26: 519 against 692 us).
PARTITION_MIN_KEYS = 1 << 25
SCATTERED = 0.5
HOT_GLOBAL = 0.5


def partitioned_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                          first_bad: DeviceArray, grid: int | None = None,
                          low_bits: int = contract.PART_LOW_BITS) -> Geometry:
    """Partition keys by their bin's high bits, then count each partition in shared memory.

    grid forces both passes' block counts; low_bits (bins per partition =
    2^low_bits) below the default makes many partitions out of few bins.
    """
    partition_bins = 1 << low_bits
    if num_bins > partition_bins * MAX_PARTITIONS:
        raise UnsupportedShape(f"the partitioned kernel takes num_bins <= "
                         f"{partition_bins * MAX_PARTITIONS}; got {num_bins}; "
                         f"use method='auto' or 'atomic'")
    plan = rt.plan(("partitioned", keys.dtype, keys.n, num_bins, grid, low_bits),
                   lambda: _partitioned_plan(rt, keys, num_bins, grid, low_bits))
    (partition, split, count, merge, entries, scalars, described) = plan
    low_bins = rt.empty(keys.n, np.uint16)
    counts = rt.empty(entries, np.uint64)
    starts = rt.empty(entries, np.uint32)
    positions = rt.empty(entries, np.uint64)
    keep_alive = [low_bins, counts, starts, positions]
    n, bins, parts, tiles = scalars
    rt.launch(partition, split, keys.ptr, n, bins, parts, tiles, low_bins.ptr, counts.ptr,
              starts.ptr, first_bad.ptr)
    exclusive_scan(rt, counts.ptr, entries, positions.ptr, keep_alive)
    rt.launch(count, merge, low_bins.ptr, tiles, parts, counts.ptr, positions.ptr, starts.ptr,
              hist.ptr)
    return described


def _partitioned_plan(rt: Runtime, keys: Keys, num_bins: int, grid: int | None,
                      low_bits: int):
    """The partitioned histogram's kernels, geometries, table size and scalar
    arguments for one shape."""
    partition_bins = 1 << low_bits
    parts = -(-num_bins // partition_bins)
    tiles = -(-keys.n // PARTITION_TILE)
    defines = keys.defines(PART_LOW_BITS=str(low_bits))
    partition = rt.kernel("partitioned_histogram.cu", "partition_tiles", defines)
    if grid is None:
        grid_split = _blocks_for(tiles, 1, rt.sm_count * rt.resident_blocks(
            partition, PARTITION_THREADS, 0))
    else:
        grid_split = grid
    split = Geometry(f"partition_tiles[PART_LOW_BITS={low_bits}]", grid_split, PARTITION_THREADS)
    count = rt.kernel("partitioned_histogram.cu", "count_partitions", defines)
    shared = partition_bins * 4
    if grid is None:
        blocks = rt.sm_count * rt.resident_blocks(count, PARTITION_COUNT_THREADS, shared)
    else:
        rt.allow_shared(count, shared)
        blocks = grid
    # Shared counters are 32-bit: no block may count 2^32 keys.
    blocks = max(blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))
    merge = Geometry("count_partitions", blocks, PARTITION_COUNT_THREADS, shared)
    scalars = (*_args(keys, num_bins)[1:], np.uint32(parts), np.int64(tiles))
    described = Geometry(f"{split} + count_partitions", merge.grid, merge.block, shared)
    return partition, split, count, merge, parts * tiles, scalars, described


SAMPLE_RUNS = contract.SAMPLE_RUNS


def sample_runs(rt: Runtime, keys: Keys) -> np.ndarray:
    """SAMPLE_RUNS runs of 32 consecutive keys' bins, spread over the input."""
    sample = rt.empty(SAMPLE_RUNS * WARP, np.uint64)
    kernel = rt.kernel("partitioned_histogram.cu", "sample_runs", keys.defines())
    rt.launch(kernel, Geometry("sample_runs", SAMPLE_RUNS * WARP // 256, 256), keys.ptr,
              np.int64(keys.n), np.int64(SAMPLE_RUNS), sample.ptr)
    bins = rt.copy_to_host(sample.ptr, np.empty(SAMPLE_RUNS * WARP, np.uint64))
    return bins.reshape(SAMPLE_RUNS, WARP)


def auto_choice(runs: np.ndarray, shared_bins: int, num_bins: int) -> str:
    """The kernel for these keys: "partitioned", "fast-hold" or "fast".

    Judged from runs of consecutive keys' bins. Scattered global atomics (more
    than SCATTERED distinct 32-byte sectors of the global histogram per
    sampled key, as with uniform keys over many bins: one L2 atomic per key)
    bind the fast kernel: partition. One global bin taking more than
    HOT_GLOBAL of the sample (every warp's atomic queues on one address):
    the fast kernel holding runs in registers. Otherwise -- keys that repeat
    within runs (sorted, hot bins in shared memory) or walk neighbouring bins
    (round-robin) -- the fast kernel.
    """
    if scattered_share(runs, shared_bins, num_bins) > SCATTERED:
        return "partitioned"
    if hot_global_share(runs, shared_bins, num_bins) > HOT_GLOBAL:
        return "fast-hold"
    return "fast"


NOT_GLOBAL = np.iinfo(np.uint64).max


def _global_bins(runs: np.ndarray, shared_bins: int, num_bins: int) -> np.ndarray:
    """The sample with bins not counted in global memory replaced by NOT_GLOBAL."""
    return np.where((runs >= shared_bins) & (runs < num_bins), runs, NOT_GLOBAL)


def hot_global_share(runs: np.ndarray, shared_bins: int, num_bins: int) -> float:
    """The share of the sample taken by its most frequent global bin."""
    bins = _global_bins(runs, shared_bins, num_bins).ravel()
    values, counts = np.unique(bins[bins != NOT_GLOBAL], return_counts=True)
    return float(counts.max() / runs.size) if len(values) else 0.0


def scattered_share(runs: np.ndarray, shared_bins: int, num_bins: int) -> float:
    """Distinct global-histogram sectors per key over runs of consecutive bins.

    Vectorised (one sort of the whole sample): auto pays this on every call.
    """
    bins = _global_bins(runs, shared_bins, num_bins)
    sectors = np.sort(np.where(bins != NOT_GLOBAL, bins >> np.uint64(2), NOT_GLOBAL), axis=1)
    starts = np.ones_like(sectors, dtype=bool)
    starts[:, 1:] = sectors[:, 1:] != sectors[:, :-1]
    return float(np.count_nonzero(starts & (sectors != NOT_GLOBAL)) / runs.size)


@dataclass(frozen=True)
class AutoPolicy:
    """Where method="auto" samples the keys before choosing (bench/NOTES.md)."""

    min_bins: int = PARTITION_MIN_BINS
    max_bins: int = PARTITION_MAX_AUTO_BINS
    min_keys: int = PARTITION_MIN_KEYS

    def samples(self, n: int, num_bins: int) -> bool:
        return self.min_bins <= num_bins <= self.max_bins and n >= self.min_keys


# The conformance suite's auto row: it samples at every size, so each branch of
# the choice is reached by small cases.
ALWAYS_SAMPLE = AutoPolicy(min_bins=1, max_bins=PARTITION_MAX_AUTO_BINS, min_keys=1)


def auto_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                   first_bad: DeviceArray, grid: int | None = None,
                   policy: AutoPolicy = AutoPolicy()) -> Geometry:
    """method="auto": the fastest exact kernel for this input.

    Below PARTITION_MIN_BINS bins (or keys), the fast kernel. Above, a sample
    of the keys picks the kernel (auto_choice; bench/NOTES.md has the
    measurements behind it), except in a CUDA graph capture, which cannot
    read a sample back: there, the partitioned kernel.
    """
    choice = "fast"
    if policy.samples(keys.n, num_bins):
        if rt.capturing():
            # A graph cannot read a sample back: the kernel whose speed depends
            # least on the keys (two bandwidth-bound passes).
            choice = "partitioned"
        else:
            choice = auto_choice(sample_runs(rt, keys), fast_layout(rt, num_bins)[1],
                                 num_bins)
    label = f"auto -> {choice}: "
    if choice != "partitioned":
        return _fast_launch(rt, keys, num_bins, hist, first_bad, choice == "fast-hold", grid,
                            None, label)
    geometry = partitioned_histogram(rt, keys, num_bins, hist, first_bad, grid)
    return Geometry(label + geometry.kernel, geometry.grid, geometry.block,
                    geometry.shared_bytes)


def exclusive_scan(rt: Runtime, counts_ptr: int, n: int, out_ptr: int, keep_alive: list,
                   threads: int = contract.SCAN_THREADS,
                   items: int = contract.SCAN_ITEMS) -> list[Geometry]:
    """out[i] = sum(counts[:i]) over uint64 counts, any n (tiles scanned recursively).

    threads x items is the tile; smaller tiles reach the recursion at small n.
    """
    if n == 0:
        return []
    tiles, tile_sums, scan_tiles, n64 = rt.plan(("scan", n, threads, items),
                                                lambda: _scan_plan(rt, n, threads, items))
    geometries = []
    if tiles == 1:
        offsets = rt.zero_word()
    else:
        sums = rt.empty(tiles, np.uint64)
        offsets = rt.empty(tiles, np.uint64)
        rt.launch(tile_sums[0], tile_sums[1], counts_ptr, n64, sums.ptr)
        geometries.append(tile_sums[1])
        geometries += exclusive_scan(rt, sums.ptr, tiles, offsets.ptr, keep_alive, threads, items)
        keep_alive.append(sums)
    keep_alive.append(offsets)
    rt.launch(scan_tiles[0], scan_tiles[1], counts_ptr, n64, offsets.ptr, out_ptr)
    return geometries + [scan_tiles[1]]


def _scan_plan(rt: Runtime, n: int, threads: int, items: int):
    """(tiles, (tile-sums kernel, geometry) or None for one tile, (scan kernel,
    geometry), n) for one scan shape."""
    defines = {"SCAN_THREADS": str(threads), "SCAN_ITEMS": str(items)}
    tiles = -(-n // (threads * items))
    tile_sums = None if tiles == 1 else (rt.kernel("exclusive_scan.cu", "scan_tile_sums",
                                                   defines),
                                         Geometry("scan_tile_sums", tiles, threads))
    return (tiles, tile_sums,
            (rt.kernel("exclusive_scan.cu", "scan_tiles", defines),
             Geometry("scan_tiles", tiles, threads)),
            np.int64(n))


def atomic_cursor_count(rt: Runtime, keys: Keys, num_bins: int, first_bad: DeviceArray,
                        keep_alive: list, grid: int | None = None
                        ) -> tuple[DeviceArray, list[Geometry]]:
    """The chapter's count and scan: per-bin cursors starting at each bin's offset."""
    hist = rt.zeros(num_bins, np.uint64)
    cursor = rt.empty(num_bins, np.uint64)
    keep_alive.append(hist)
    geometries = [atomic_histogram(rt, keys, num_bins, hist, first_bad, grid)]
    geometries += exclusive_scan(rt, hist.ptr, num_bins, cursor.ptr, keep_alive)
    return cursor, geometries


def check_index_dtype(n: int, index_dtype) -> np.dtype:
    """index_dtype as a dtype the sorts write: int64, or int32 up to 2^31 keys."""
    dtype = np.dtype(index_dtype)
    if dtype not in contract.INDEX_C_TYPES:
        raise TypeError(f"index_dtype must be int32 or int64; got {dtype}")
    if dtype == np.int32 and n > contract.MAX_INT32_INDEX_KEYS:
        raise UnsupportedShape(f"int32 indices number up to 2^31 keys; got {n}; "
                               f"use index_dtype=np.int64")
    return dtype


def scatter_atomic_cursor(rt: Runtime, keys: Keys, num_bins: int, cursor: DeviceArray,
                          out_keys: DeviceArray, out_index: DeviceArray,
                          grid: int | None = None, index_dtype=np.int64) -> Geometry:
    kernel = rt.kernel("counting_sort.cu", "scatter_atomic_cursor",
                       keys.defines(**contract.index_defines(index_dtype)))
    geometry = Geometry("scatter_atomic_cursor", _grid_stride_blocks(rt, keys.n, grid),
                        CHAPTER_BLOCK)
    rt.launch(kernel, geometry, *_args(keys, num_bins), cursor.ptr, out_keys.ptr,
              out_index.ptr)
    return geometry


TILE_THREADS = contract.TILE_WARPS * WARP
DIGIT_BITS = contract.DIGIT_BITS
MAX_DIGITS = 1 << DIGIT_BITS
LOOK_BACK_BYTES_PER_TILE = 8 * MAX_DIGITS  # a 64-bit look-back word per digit


def tile_keys(dtype: np.dtype, items: int | None = None) -> int:
    """Keys in one stable-sort tile (counting_sort.cu's TILE_KEYS) for this key
    type: `items` rounds of 32 keys per warp (None: the contract's)."""
    return TILE_THREADS * (items or contract.tile_items(np.dtype(dtype).itemsize))


def staged_tile_bytes(dtype: np.dtype, index_dtype: np.dtype, items: int | None = None) -> int:
    """A sort pass's dynamic shared memory: a tile's keys and their indices."""
    return tile_keys(dtype, items) * (np.dtype(dtype).itemsize + np.dtype(index_dtype).itemsize)


def digit_shifts(num_bins: int) -> tuple[int, ...]:
    """The shift of each LSD pass: one 8-bit digit of the bin per pass."""
    shifts = [0]
    while (num_bins - 1) >> (shifts[-1] + DIGIT_BITS):
        shifts.append(shifts[-1] + DIGIT_BITS)
    return tuple(shifts)


# num_bins and first_bad as a full-width (RADIX_KEYS) build is handed them:
# never read (every key is valid, none is noted as bad).
_EVERY_KEY = 2**64 - 1
_NOT_READ = 0


def _digits(num_bins: int, shift: int) -> int:
    return min(MAX_DIGITS, ((num_bins - 1) >> shift) + 1)


@dataclass(frozen=True)
class SortShape:
    """The stable sort's launches for one shape (key type, n, num_bins, grid,
    index type): made once per shape (Runtime.plan)."""

    histogram_kernel: object
    scatter_kernel: object
    histogram: Geometry
    passes: tuple[Geometry, ...]  # one scatter launch per digit
    digits: tuple[int, ...]  # digits each pass can see
    tiles: int
    n_and_bins: tuple  # (n, num_bins) as the kernels take them
    full_width: bool
    index_dtype: np.dtype


def _sort_shape(rt: Runtime, keys: Keys, num_bins: int, grid: int | None,
                full_width: bool, index_dtype) -> SortShape:
    index_dtype = check_index_dtype(keys.n, index_dtype)
    defines = keys.defines(**contract.index_defines(index_dtype))
    if full_width:
        defines["RADIX_KEYS"] = "1"
    histogram = rt.kernel("counting_sort.cu", "digit_histograms", defines)
    scatter = rt.kernel("counting_sort.cu", "onesweep_scatter", defines)
    tiles = -(-keys.n // tile_keys(keys.dtype))
    if grid is None:
        resident = rt.sm_count * rt.resident_blocks(histogram, TILE_THREADS, 0)
        histogram_blocks = _blocks_for(keys.n, TILE_THREADS * contract.HIST_ITEMS, resident)
        scatter_blocks = max(1, tiles)  # a block per tile; a forced grid loops over tiles
    else:
        histogram_blocks = scatter_blocks = grid
    # A block of digit_histograms counts its keys in 32-bit shared counters.
    histogram_blocks = max(histogram_blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))
    if full_width:  # the key's order-preserving image has 8 x itemsize bits
        num_bins = key_range = 1 << (8 * keys.dtype.itemsize)
    else:  # valid keys stay below the dtype's largest value + 1 whatever num_bins is
        key_range = min(num_bins, int(np.iinfo(keys.dtype).max) + 1)
    shifts = digit_shifts(key_range)
    staged = staged_tile_bytes(keys.dtype, index_dtype)
    passes = tuple(Geometry(f"onesweep_scatter[shift={shift}]", scatter_blocks, TILE_THREADS,
                            staged) for shift in shifts)
    return SortShape(histogram, scatter,
                     Geometry("digit_histograms", histogram_blocks, TILE_THREADS), passes,
                     tuple(_digits(num_bins, shift) for shift in shifts), tiles,
                     _args(keys, _EVERY_KEY if full_width else num_bins)[1:], full_width,
                     index_dtype)


@dataclass
class StablePlan:
    """What digit_histograms left for the scatter passes: counters holds each
    pass's digit starts (passes x 2^DIGIT_BITS), then each pass's tile counter."""

    shape: SortShape
    counters: DeviceArray
    keep_alive: list


def stable_count(rt: Runtime, keys: Keys, num_bins: int, first_bad_ptr: int,
                 keep_alive: list, grid: int | None = None, index_dtype=np.int64,
                 full_width: bool = False) -> StablePlan:
    """One read of the keys: every pass's digit counts, scanned into digit
    starts (the last block does it), bad keys reported at first_bad_ptr.

    grid forces the block count of every launch (blocks then own several tiles
    each); index_dtype is the type of the original indices the passes write.
    """
    shape = rt.plan(("onesweep", keys.dtype, keys.n, num_bins, grid, np.dtype(index_dtype),
                     full_width),
                    lambda: _sort_shape(rt, keys, num_bins, grid, full_width, index_dtype))
    passes = len(shape.passes)
    # [digit starts: passes x digits][each pass's tile counter][blocks done]
    counters = rt.empty(passes * MAX_DIGITS + passes + 1, np.uint64)
    keep_alive.append(counters)
    rt.memset(counters.ptr, 0, 8 * counters.n)
    blocks_done_ptr = counters.ptr + 8 * (passes * MAX_DIGITS + passes)
    rt.launch(shape.histogram_kernel, shape.histogram, keys.ptr, *shape.n_and_bins,
              np.uint32(passes), counters.ptr, blocks_done_ptr, first_bad_ptr)
    return StablePlan(shape, counters, keep_alive)


def stable_scatter(rt: Runtime, keys: Keys, plan: StablePlan, out_keys: DeviceArray,
                   out_index: DeviceArray) -> list[Geometry]:
    """Each pass reads its keys once and writes them in stable digit order
    (keys already validated, or check=False: bad keys are skipped).

    Passes ping-pong between the outputs and one pair of temporaries, arranged
    so that the last pass writes the outputs.
    """
    shape = plan.shape
    passes = len(shape.passes)
    lookback = rt.empty(max(1, shape.tiles) * MAX_DIGITS, np.uint64)  # one word a digit a tile
    plan.keep_alive.append(lookback)
    spare_keys = spare_index = None
    if passes > 1:
        spare_keys = rt.empty(keys.n, keys.dtype)
        spare_index = rt.empty(keys.n, shape.index_dtype)
        plan.keep_alive += [spare_keys, spare_index]
    next_tile_ptr = plan.counters.ptr + 8 * passes * MAX_DIGITS
    source_keys, source_index = keys.ptr, 0
    for number, geometry in enumerate(shape.passes):
        to_outputs = (passes - 1 - number) % 2 == 0
        target_keys, target_index = ((out_keys, out_index) if to_outputs
                                     else (spare_keys, spare_index))
        if number < passes - 1 and not shape.full_width:
            # Bad keys are skipped, leaving a pass's last slots unwritten; all
            # ones there read as bad keys to the next pass (-1 signed; unsigned,
            # the dtype's largest value, >= num_bins whenever a key can be bad),
            # so it skips them too and the valid keys' sort stays exact.
            rt.memset(target_keys.ptr, 0xFF, keys.n * keys.dtype.itemsize)
        rt.memset(lookback.ptr, 0, 8 * lookback.n)
        rt.launch(shape.scatter_kernel, geometry, source_keys, source_index, *shape.n_and_bins,
                  np.uint32(number * DIGIT_BITS), np.uint32(shape.digits[number]),
                  np.int64(shape.tiles), plan.counters.ptr + 8 * MAX_DIGITS * number,
                  next_tile_ptr + 8 * number, lookback.ptr, target_keys.ptr, target_index.ptr)
        source_keys, source_index = target_keys.ptr, target_index.ptr
    return list(shape.passes)


def radix_sort(rt: Runtime, keys: Keys, out_keys: DeviceArray, out_index: DeviceArray,
               keep_alive: list, grid: int | None = None,
               index_dtype=np.int64) -> list[Geometry]:
    """Stable sort of full-width keys (signed keys in signed order): a
    onesweep pass per byte of the key (RADIX_KEYS builds)."""
    plan = stable_count(rt, keys, _EVERY_KEY, _NOT_READ, keep_alive, grid, index_dtype,
                        full_width=True)
    return [plan.shape.histogram, *stable_scatter(rt, keys, plan, out_keys, out_index)]


@dataclass(frozen=True)
class ResidentShape:
    """resident_sort's launch for one shape: made once per shape (Runtime.plan)."""

    kernel: object
    geometry: Geometry | None  # None: its tiles do not all fit on the GPU at once
    passes: int
    scratch_words: int  # uint64 words: the arrivals word, tile counts, digit totals
    n_and_bins: tuple


def _resident_build(rt: Runtime, keys: Keys, index_dtype, full_width: bool,
                    items: int | None):
    """resident_sort built for these keys with tiles of `items` rounds (None:
    the contract's tile)."""
    defines = keys.defines(**contract.index_defines(index_dtype))
    if full_width:
        defines["RADIX_KEYS"] = "1"
    if items is not None:
        defines.update(TILE_ITEMS=str(items), WIDE_KEY_TILE_ITEMS=str(items))
    return rt.kernel("counting_sort.cu", "resident_sort", defines)


def _resident_shape(rt: Runtime, keys: Keys, num_bins: int, full_width: bool,
                    index_dtype, full_tiles: bool) -> ResidentShape:
    index_dtype = check_index_dtype(keys.n, index_dtype)
    # How many blocks fit at once, at the contract's tile (smaller tiles fit
    # at least as many: the launch bounds fix the registers, and they stage less).
    default = _resident_build(rt, keys, index_dtype, full_width, None)
    capacity = rt.sm_count * rt.resident_blocks(default, TILE_THREADS,
                                                staged_tile_bytes(keys.dtype, index_dtype))
    # Small N: the smallest tile that still fits, so more SMs share the work
    # (a tile's latency, not bandwidth, bounds a call of a few tiles).
    items = None
    if not full_tiles:
        items = next((i for i in contract.RESIDENT_SMALL_TILE_ITEMS
                      if -(-keys.n // tile_keys(keys.dtype, i)) <= capacity), None)
    kernel = (default if items is None
              else _resident_build(rt, keys, index_dtype, full_width, items))
    tiles = max(1, -(-keys.n // tile_keys(keys.dtype, items)))
    staged = staged_tile_bytes(keys.dtype, index_dtype, items)
    fits = tiles <= rt.sm_count * rt.resident_blocks(kernel, TILE_THREADS, staged)
    if full_width:
        num_bins = key_range = 1 << (8 * keys.dtype.itemsize)
    else:
        key_range = min(num_bins, int(np.iinfo(keys.dtype).max) + 1)
    name = "resident_sort" if items is None else f"resident_sort[TILE_ITEMS={items}]"
    geometry = (Geometry(name, tiles, TILE_THREADS, staged, cooperative=True)
                if fits and rt.cooperative else None)
    # 32-bit tile counts: MAX_DIGITS per tile, then MAX_DIGITS totals.
    count_words = -(-(tiles + 1) * MAX_DIGITS // 2)
    return ResidentShape(kernel, geometry, len(digit_shifts(key_range)), 1 + count_words,
                         _args(keys, _EVERY_KEY if full_width else num_bins)[1:])


def resident_shape(rt: Runtime, keys: Keys, num_bins: int, index_dtype=np.int64,
                   full_width: bool = False, full_tiles: bool = False) -> ResidentShape:
    """full_tiles: the contract's tile at every N (else smaller ones at small N)."""
    return rt.plan(("resident", keys.dtype, keys.n, num_bins, np.dtype(index_dtype),
                    full_width, full_tiles),
                   lambda: _resident_shape(rt, keys, num_bins, full_width, index_dtype,
                                           full_tiles))


def resident_fits(rt: Runtime, keys: Keys, num_bins: int, index_dtype=np.int64,
                  full_width: bool = False) -> bool:
    """Whether resident_sort can sort these keys (every tile on the GPU at once)."""
    return resident_shape(rt, keys, num_bins, index_dtype, full_width).geometry is not None


def resident_sort(rt: Runtime, keys: Keys, num_bins: int, out_keys: DeviceArray,
                  out_index: DeviceArray, first_bad_ptr: int, keep_alive: list,
                  index_dtype=np.int64, full_width: bool = False,
                  full_tiles: bool = False) -> list[Geometry]:
    """The stable sort in one cooperative launch (resident_sort), for inputs
    whose tiles all fit on the GPU at once: UnsupportedShape otherwise.
    full_tiles: the contract's tile even at small N (see resident_shape)."""
    shape = resident_shape(rt, keys, num_bins, index_dtype, full_width, full_tiles)
    if shape.geometry is None:
        raise UnsupportedShape(
            f"resident_sort: {keys.n} keys are more tiles than fit on this GPU at once"
            if rt.cooperative else "resident_sort: this cuda.core cannot launch cooperatively")
    # The arrivals word must be zero at the launch; the kernel leaves it zero,
    # so the stream's kept scratch needs no memset (the counts are written
    # before they are read).
    scratch = rt.barrier_scratch(shape.scratch_words)
    if scratch is None:
        scratch = rt.empty(shape.scratch_words, np.uint64)
        rt.memset(scratch.ptr, 0, 8)
    keep_alive.append(scratch)
    spare_keys = spare_index = _NOT_READ
    if shape.passes > 1:
        spare = (rt.empty(keys.n, keys.dtype), rt.empty(keys.n, index_dtype))
        keep_alive += spare
        spare_keys, spare_index = spare[0].ptr, spare[1].ptr
    rt.launch(shape.kernel, shape.geometry, keys.ptr, *shape.n_and_bins,
              np.uint32(shape.passes), scratch.ptr, first_bad_ptr, spare_keys, spare_index,
              out_keys.ptr, out_index.ptr)
    return [shape.geometry]


# Values move as raw bits: the unsigned C type of each width gather_values takes.
VALUE_C_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int",
                 8: "unsigned long long"}


def gather_values(rt: Runtime, values_ptr: int, index: DeviceArray, n: int, itemsize: int,
                  out_ptr: int, grid: int | None = None, index_dtype=np.int64) -> Geometry:
    """out[i] = values[index[i]] for values of itemsize bytes (1, 2, 4 or 8)."""
    kernel = rt.kernel("gather_values.cu", "gather_values",
                       {"VALUE_T": VALUE_C_TYPES[itemsize],
                        **contract.index_defines(index_dtype)})
    geometry = Geometry("gather_values", _grid_stride_blocks(rt, n, grid), CHAPTER_BLOCK)
    rt.launch(kernel, geometry, values_ptr, index.ptr, np.int64(n), out_ptr)
    return geometry
