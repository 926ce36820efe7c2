"""The stable sort in one cooperative launch (counting_sort.cu's
resident_sort), for inputs whose tiles all fit on the GPU at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.gpu import contract
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import (
    EVERY_KEY,
    NOT_READ,
    Keys,
    key_args,
)
from histkit.gpu.policy import (
    MAX_DIGITS,
    MAX_THREADS_PER_SM,
    TILE_THREADS,
    check_index_dtype,
    digit_shifts,
    resident_tile_items,
    sort_key_range,
    staged_tile_bytes,
    tile_keys,
)


@dataclass(frozen=True)
class ResidentShape:
    """resident_sort's launch for one shape: made once per shape (Runtime.plan)."""

    kernel: object  # None when the input could never be resident (nothing compiled)
    geometry: Geometry | None  # None: its tiles do not all fit on the GPU at once
    passes: int
    scratch_words: int  # uint64 words: the arrivals word, tile counts, digit totals
    n_and_bins: tuple


def tile_defines(items: int) -> dict[str, str]:
    """The defines of a resident_sort build with tiles of `items` rounds."""
    return {"TILE_ITEMS": str(items), "WIDE_KEY_TILE_ITEMS": str(items)}


def _resident_build(rt: Runtime, keys: Keys, index_dtype, full_width: bool, items: int):
    """resident_sort built for these keys with tiles of `items` rounds."""
    defines = keys.defines(**contract.index_defines(index_dtype))
    if full_width:
        defines["RADIX_KEYS"] = "1"
    defines.update(tile_defines(items))
    return rt.kernel("counting_sort.cu", "resident_sort", defines)


def _resident_shape(rt: Runtime, keys: Keys, num_bins: int, full_width: bool,
                    index_dtype, full_tiles: bool) -> ResidentShape:
    index_dtype = check_index_dtype(keys.n, index_dtype)
    passes = len(digit_shifts(sort_key_range(keys.dtype, num_bins, full_width)))
    n_and_bins = key_args(keys, EVERY_KEY if full_width else num_bins)[1:]
    largest = contract.resident_tile_items(keys.dtype.itemsize)
    most_blocks = rt.sm_count * (MAX_THREADS_PER_SM // TILE_THREADS)
    if -(-keys.n // tile_keys(keys.dtype, largest)) > most_blocks:
        # More tiles than any SM count of threads could hold at once: the
        # onesweep passes' job, with no resident kernel compiled to learn it.
        return ResidentShape(None, None, passes, 0, n_and_bins)
    # How many blocks fit at once, at the largest tile (smaller tiles fit at
    # least as many: the launch bounds fix the registers, and they stage less).
    default = _resident_build(rt, keys, index_dtype, full_width, largest)
    capacity = rt.sm_count * rt.resident_blocks(
        default, TILE_THREADS, staged_tile_bytes(keys.dtype, index_dtype, largest))
    items = largest if full_tiles else (resident_tile_items(keys.n, keys.dtype, capacity)
                                        or largest)
    kernel = (default if items == largest
              else _resident_build(rt, keys, index_dtype, full_width, items))
    tiles = max(1, -(-keys.n // tile_keys(keys.dtype, items)))
    staged = staged_tile_bytes(keys.dtype, index_dtype, items)
    fits = tiles <= rt.sm_count * rt.resident_blocks(kernel, TILE_THREADS, staged)
    name = "resident_sort" if items == largest else f"resident_sort[TILE_ITEMS={items}]"
    geometry = (Geometry(name, tiles, TILE_THREADS, staged, cooperative=True)
                if fits and rt.cooperative else None)
    # 32-bit tile counts: MAX_DIGITS per tile, then MAX_DIGITS totals.
    count_words = -(-(tiles + 1) * MAX_DIGITS // 2)
    return ResidentShape(kernel, geometry, passes, 1 + count_words, n_and_bins)


def resident_shape(rt: Runtime, keys: Keys, num_bins: int, index_dtype=np.int64,
                   full_width: bool = False, full_tiles: bool = False) -> ResidentShape:
    """full_tiles: resident_sort's largest tile (contract.resident_tile_items)
    at every N (else smaller ones at small N)."""
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
    full_tiles: its largest tile even at small N (see resident_shape)."""
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
    spare_keys = spare_index = NOT_READ
    if shape.passes > 1:
        spare = (rt.empty(keys.n, keys.dtype), rt.empty(keys.n, index_dtype))
        keep_alive += spare
        spare_keys, spare_index = spare[0].ptr, spare[1].ptr
    rt.launch(shape.kernel, shape.geometry, keys.ptr, *shape.n_and_bins,
              np.uint32(shape.passes), scratch.ptr, first_bad_ptr, spare_keys, spare_index,
              out_keys.ptr, out_index.ptr)
    return [shape.geometry]
