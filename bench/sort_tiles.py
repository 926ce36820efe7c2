"""Sweep the stable sort's tile shape: warps per tile, rounds of 32 keys per
warp, and the scatter's __launch_bounds__ minimum blocks per SM, on the
counting sort (keys below K) and the radix sort (full-width keys). Each shape
is compiled, checked against cupy.argsort (stable for these keys) and timed
with CUDA events, median of 7 calls. Needs a GPU and CuPy.

    python bench/sort_tiles.py [--n 268435456] [--out bench/results]
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import event_seconds, write_results

# (warps, rounds, min blocks per SM): the shape before 2026-11-30, today's, and neighbours.
SHAPES = ((8, 8, 4), (8, 8, 2), (8, 12, 2), (8, 16, 2), (8, 16, 4), (16, 8, 2))
# (what, K or None for full-width int32 keys, distribution)
INPUTS = (("radix", None, "uniform"), ("counting", 256, "uniform"), ("counting", 256, "onebin"),
          ("counting", 65536, "uniform"), ("counting", 65536, "onebin"),
          ("counting", 65536, "round-robin"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 28)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()

    import cupy

    from histkit.gpu import contract, policy, registry
    from histkit.gpu.api import cupy_stream
    from histkit.gpu.bench import _as_array, _device_keys, _full_width_device_keys, _keys_of
    from histkit.gpu.device import runtime
    from histkit.gpu.launch import resident as launch_resident
    from histkit.gpu.launch import sort as launch_sort

    rt = runtime()
    stream = cupy_stream(cupy, rt.handle)
    out_keys = cupy.empty(args.n, dtype=cupy.int32)
    out_index = cupy.empty(args.n, dtype=cupy.int64)
    first_bad = rt.empty(1, np.uint64)
    rows = []
    for what, num_bins, distribution in INPUTS:
        keys = (_full_width_device_keys(cupy, args.n, np.dtype(np.int32)) if num_bins is None
                else _device_keys(cupy, distribution, args.n, num_bins))
        want = cupy.asnumpy(cupy.argsort(keys))
        for warps, items, min_blocks in SHAPES:
            contract.SOURCE_DEFINES["counting_sort.cu"].update(
                TILE_WARPS=warps, TILE_ITEMS=items, WIDE_KEY_TILE_ITEMS=items,
                ONESWEEP_MIN_BLOCKS=min_blocks, WIDE_KEY_ONESWEEP_MIN_BLOCKS=min_blocks)
            contract.TILE_ITEMS = contract.WIDE_KEY_TILE_ITEMS = items
            # the launchers import TILE_THREADS by name: patch each module that does
            policy.TILE_THREADS = launch_sort.TILE_THREADS = launch_resident.TILE_THREADS = (
                warps * 32)
            rt._kernels.clear()
            rt._plans.clear()
            row = {"sort": what, "K": num_bins, "distribution": distribution,
                   "tile_warps": warps, "tile_items": items, "scatter_min_blocks": min_blocks}

            def call(keys=keys, num_bins=num_bins):
                if num_bins is None:
                    registry.serving("radix_sort").run(rt, _keys_of(keys), _as_array(out_keys),
                                                       _as_array(out_index), [])
                else:
                    rt.memset(first_bad.ptr, 0xFF, 8)
                    registry.serving("counting_sort", True).run(
                        rt, _keys_of(keys), num_bins, _as_array(out_keys),
                        _as_array(out_index), first_bad, [])

            try:
                call()
                rt.sync("sort")
            except Exception as error:  # a shape that does not build or launch
                rows.append({**row, "error": f"{type(error).__name__}: {error}"[:300]})
                print(rows[-1], flush=True)
                continue
            if not np.array_equal(cupy.asnumpy(out_index), want):
                rows.append({**row, "error": "WRONG RESULT"})
                print(rows[-1], flush=True)
                continue
            seconds = event_seconds(cupy, call, stream)
            rows.append({**row, "Gkeys_per_s": args.n / seconds / 1e9})
            print(rows[-1], flush=True)
    write_results(args.out, "sort-tiles", {"n": args.n, "shapes": SHAPES, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
