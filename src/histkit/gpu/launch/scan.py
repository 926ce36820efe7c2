"""The exclusive scan of uint64 counts: tiles scanned, recursively."""

from __future__ import annotations

import numpy as np

from histkit.gpu import contract
from histkit.gpu.device import Runtime
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import Gate, gate_args, gate_choice, gate_defines


def exclusive_scan(rt: Runtime, counts_ptr: int, n: int, out_ptr: int, keep_alive: list,
                   threads: int = contract.SCAN_THREADS,
                   items: int = contract.SCAN_ITEMS, gate: Gate | None = None) -> list[Geometry]:
    """out[i] = sum(counts[:i]) over uint64 counts, any n (tiles scanned recursively).

    threads x items is the tile; smaller tiles reach the recursion at small n.
    gate: every launch gated by auto's choice (the partitioned histogram's scan).
    """
    if n == 0:
        return []
    tiles, tile_sums, scan_tiles, n64 = rt.plan(("scan", n, threads, items, gate_choice(gate)),
                                                lambda: _scan_plan(rt, n, threads, items, gate))
    gated = gate_args(gate)
    geometries = []
    if tiles == 1:
        offsets = rt.zero_word()
    else:
        sums = rt.empty(tiles, np.uint64)
        offsets = rt.empty(tiles, np.uint64)
        rt.launch(tile_sums[0], tile_sums[1], counts_ptr, n64, sums.ptr, *gated)
        geometries.append(tile_sums[1])
        geometries += exclusive_scan(rt, sums.ptr, tiles, offsets.ptr, keep_alive, threads, items,
                                     gate)
        keep_alive.append(sums)
    keep_alive.append(offsets)
    rt.launch(scan_tiles[0], scan_tiles[1], counts_ptr, n64, offsets.ptr, out_ptr, *gated)
    return geometries + [scan_tiles[1]]


def _scan_plan(rt: Runtime, n: int, threads: int, items: int,
               gate: Gate | None = None):
    """(tiles, (tile-sums kernel, geometry) or None for one tile, (scan kernel,
    geometry), n) for one scan shape."""
    defines = {"SCAN_THREADS": str(threads), "SCAN_ITEMS": str(items), **gate_defines(gate)}
    tiles = -(-n // (threads * items))
    tile_sums = None if tiles == 1 else (rt.kernel("exclusive_scan.cu", "scan_tile_sums",
                                                   defines),
                                         Geometry("scan_tile_sums", tiles, threads))
    return (tiles, tile_sums,
            (rt.kernel("exclusive_scan.cu", "scan_tiles", defines),
             Geometry("scan_tiles", tiles, threads)),
            np.int64(n))
