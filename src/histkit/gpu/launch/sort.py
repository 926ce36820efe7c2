"""The sorts' launches: the chapter's atomic-cursor scatter, the stable
onesweep passes (counting sort and full-width radix sort), and the gather
that moves values after a radix sort."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import CHAPTER_BLOCK, MAX_KEYS_PER_BLOCK
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import (
    EVERY_KEY,
    NOT_READ,
    Keys,
    blocks_for,
    grid_stride_blocks,
    key_args,
)
from histkit.gpu.launch.histogram import atomic_histogram
from histkit.gpu.launch.scan import exclusive_scan
from histkit.gpu.policy import (
    DIGIT_BITS,
    MAX_DIGITS,
    TILE_THREADS,
    check_index_dtype,
    digit_count,
    digit_shifts,
    sort_key_range,
    staged_tile_bytes,
    tile_keys,
)


def atomic_cursor_count(rt: Runtime, keys: Keys, num_bins: int, first_bad: DeviceArray,
                        keep_alive: list, grid: int | None = None
                        ) -> tuple[DeviceArray, list[Geometry]]:
    """The chapter's count and scan: per-bin cursors starting at each bin's offset."""
    hist = rt.empty(num_bins, np.uint64)  # atomic_histogram zeroes it
    cursor = rt.empty(num_bins, np.uint64)
    keep_alive.append(hist)
    geometries = [atomic_histogram(rt, keys, num_bins, hist, first_bad, grid)]
    geometries += exclusive_scan(rt, hist.ptr, num_bins, cursor.ptr, keep_alive)
    return cursor, geometries


def scatter_atomic_cursor(rt: Runtime, keys: Keys, num_bins: int, cursor: DeviceArray,
                          out_keys: DeviceArray, out_index: DeviceArray,
                          grid: int | None = None, index_dtype=np.int64) -> Geometry:
    kernel = rt.kernel("counting_sort.cu", "scatter_atomic_cursor",
                       keys.defines(**contract.index_defines(index_dtype)))
    geometry = Geometry("scatter_atomic_cursor", grid_stride_blocks(rt, keys.n, grid),
                        CHAPTER_BLOCK)
    rt.launch(kernel, geometry, *key_args(keys, num_bins), cursor.ptr, out_keys.ptr,
              out_index.ptr)
    return geometry


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
        histogram_blocks = blocks_for(keys.n, TILE_THREADS * contract.HIST_ITEMS, resident)
        scatter_blocks = max(1, tiles)  # a block per tile; a forced grid loops over tiles
    else:
        histogram_blocks = scatter_blocks = grid
    # A block of digit_histograms counts its keys in 32-bit shared counters.
    histogram_blocks = max(histogram_blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))
    key_range = sort_key_range(keys.dtype, num_bins, full_width)
    digit_bins = key_range if full_width else num_bins
    shifts = digit_shifts(key_range)
    staged = staged_tile_bytes(keys.dtype, index_dtype)
    passes = tuple(Geometry(f"onesweep_scatter[shift={shift}]", scatter_blocks, TILE_THREADS,
                            staged) for shift in shifts)
    return SortShape(histogram, scatter,
                     Geometry("digit_histograms", histogram_blocks, TILE_THREADS), passes,
                     tuple(digit_count(digit_bins, shift) for shift in shifts), tiles,
                     key_args(keys, EVERY_KEY if full_width else num_bins)[1:], full_width,
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
    plan = stable_count(rt, keys, EVERY_KEY, NOT_READ, keep_alive, grid, index_dtype,
                        full_width=True)
    return [plan.shape.histogram, *stable_scatter(rt, keys, plan, out_keys, out_index)]


# Values move as raw bits: the unsigned C type of each width gather_values takes.
VALUE_C_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int",
                 8: "unsigned long long"}


def gather_values(rt: Runtime, values_ptr: int, index: DeviceArray, n: int, itemsize: int,
                  out_ptr: int, grid: int | None = None, index_dtype=np.int64) -> Geometry:
    """out[i] = values[index[i]] for values of itemsize bytes (1, 2, 4 or 8)."""
    kernel = rt.kernel("gather_values.cu", "gather_values",
                       {"VALUE_T": VALUE_C_TYPES[itemsize],
                        **contract.index_defines(index_dtype)})
    geometry = Geometry("gather_values", grid_stride_blocks(rt, n, grid), CHAPTER_BLOCK)
    rt.launch(kernel, geometry, values_ptr, index.ptr, np.int64(n), out_ptr)
    return geometry
