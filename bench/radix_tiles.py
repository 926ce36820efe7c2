"""Sweep the stable sort's tile shape on full-width keys (gpu.radix_sort's
passes): warps per tile, rounds of 32 keys per warp, and the scatter's
__launch_bounds__ minimum blocks per SM. Each shape is compiled, checked
against cupy.argsort (stable for these keys) and timed with CUDA events,
median of 7 calls. Needs a GPU and CuPy.

    python bench/radix_tiles.py [--n 268435456] [--dtype int32] [--out bench/results]
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from _shared import write_results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 28)
    parser.add_argument("--dtype", default="int32")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()

    import cupy

    from histkit.gpu import contract, kernels, registry
    from histkit.gpu.bench import _as_array, _full_width_device_keys, _keys_of
    from histkit.gpu.device import runtime

    rt = runtime()
    dtype = np.dtype(args.dtype)
    keys = _full_width_device_keys(cupy, args.n, dtype)
    want = cupy.asnumpy(cupy.argsort(keys))
    out_keys, out_index = cupy.empty_like(keys), cupy.empty(args.n, dtype=cupy.int64)
    radix = registry.serving("radix_sort")
    stream = cupy.cuda.ExternalStream(rt.handle)
    rows = []
    for warps, items, min_blocks in itertools.product((8, 16), (8, 12, 16), (2, 4)):
        if warps * 32 * items * (dtype.itemsize + 2) + warps * 256 * 4 > 46 * 1024:
            continue  # the staged tile and the warps' counters pass 48 KiB of static shared
        defines = contract.SOURCE_DEFINES["counting_sort.cu"]
        defines.update(TILE_WARPS=warps, TILE_ITEMS=items, WIDE_KEY_TILE_ITEMS=items,
                       SCATTER_MIN_BLOCKS=min_blocks)
        contract.TILE_ITEMS = contract.WIDE_KEY_TILE_ITEMS = items
        kernels.TILE_THREADS = warps * 32
        rt._kernels.clear()
        rt._plans.clear()
        shape = {"tile_warps": warps, "tile_items": items, "scatter_min_blocks": min_blocks}

        def call():
            radix.run(rt, _keys_of(keys), _as_array(out_keys), _as_array(out_index), [])

        try:
            call()
            rt.sync("radix sort")
        except Exception as error:  # a shape that does not build or launch
            rows.append({**shape, "error": f"{type(error).__name__}: {error}"[:300]})
            print(rows[-1], flush=True)
            continue
        if not np.array_equal(cupy.asnumpy(out_index), want):
            rows.append({**shape, "error": "WRONG RESULT"})
            print(rows[-1], flush=True)
            continue
        times = []
        for _ in range(7):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            call()
            end.record(stream)
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        rows.append({**shape, "Gkeys_per_s": args.n / float(np.median(times)) / 1e9})
        print(rows[-1], flush=True)
    write_results(args.out, f"radix-tiles-{dtype.name}", {"n": args.n, "dtype": dtype.name,
                                                          "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
