"""The stable sort's onesweep passes under variants of their contract
constants, alternated in one process, with CUB's radix sort of (key, index)
pairs beside them: 2^28 keys (full-width int32 and int64 keys, then 8- and
16-bit keys of five distributions), int32 and int64 indices. Every variant's
result is checked against cupy.argsort (stable for these keys) before it is
timed. Needs a GPU, CuPy, and cuda.compute for the CUB column.

A variant overrides entries of contract.SOURCE_DEFINES["counting_sort.cu"]
(TILE_ITEMS also sets contract.TILE_ITEMS, which sizes the launches):

    python bench/sort_ab.py OUT_DIR \\
        '{"now": {}, "16 rounds": {"TILE_ITEMS": 16, "ONESWEEP_MIN_BLOCKS": 4}}'

writes OUT_DIR/sort-ab-<today>.json.

bench/results/sort-ab-h200-2026-12-02-session21.json is the run that chose
20-round tiles at 3 blocks per SM (bench/NOTES.md, session 21).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from _shared import event_seconds, write_results

INPUTS = ((None, "uniform", "int32"), (None, "uniform", "int64"),
          (256, "uniform", "int32"), (256, "onebin", "int32"), (256, "zipf", "int32"),
          (256, "sorted", "int32"), (256, "round-robin", "int32"),
          (65536, "uniform", "int32"), (65536, "onebin", "int32"), (65536, "zipf", "int32"),
          (65536, "sorted", "int32"), (65536, "round-robin", "int32"))
N = 1 << 28


def measure(variants: dict[str, dict]) -> dict:
    """G keys/s of every variant and of CUB's pairs, per input and index width."""
    import cupy

    from histkit.gpu import contract
    from histkit.gpu.api import cupy_stream
    from histkit.gpu.bench import (
        _as_array,
        _cub_radix_pairs,
        _device_keys,
        _full_width_device_keys,
        _keys_of,
    )
    from histkit.gpu.device import runtime
    from histkit.gpu.launch import sort as launch_sort

    defines = contract.SOURCE_DEFINES["counting_sort.cu"]
    base, base_items = dict(defines), contract.TILE_ITEMS
    rt = runtime()
    stream = cupy_stream(cupy, rt.handle)
    first_bad = rt.empty(1, np.uint64)

    def build(overrides: dict) -> None:
        defines.clear()
        defines.update(base, **overrides)
        contract.TILE_ITEMS = overrides.get("TILE_ITEMS", base_items)
        rt._kernels.clear()
        rt._plans.clear()

    rows = []
    for num_bins, distribution, dtype in INPUTS:
        dtype = np.dtype(dtype)
        keys = (_full_width_device_keys(cupy, N, dtype) if num_bins is None
                else _device_keys(cupy, distribution, N, num_bins).astype(dtype))
        want = cupy.asnumpy(cupy.argsort(keys))
        device_keys, out_keys = _keys_of(keys), cupy.empty_like(keys)
        row = {"K": num_bins, "distribution": distribution, "dtype": dtype.name, "G": {}}
        for index_dtype in (np.int32, np.int64):
            out_index = cupy.empty(N, dtype=index_dtype)
            outputs = (_as_array(out_keys), _as_array(out_index))

            def sort(device_keys=device_keys, num_bins=num_bins, outputs=outputs,
                     index_dtype=index_dtype):
                if num_bins is None:
                    launch_sort.radix_sort(rt, device_keys, *outputs, [],
                                           index_dtype=index_dtype)
                else:
                    rt.memset(first_bad.ptr, 0xFF, 8)
                    plan = launch_sort.stable_count(rt, device_keys, num_bins, first_bad.ptr,
                                                    [], index_dtype=index_dtype)
                    launch_sort.stable_scatter(rt, device_keys, plan, *outputs)

            for name, overrides in variants.items():
                label = f"{name} {np.dtype(index_dtype).name}"
                build(overrides)
                try:
                    out_index.fill(-1)
                    sort()
                    rt.sync(label)
                except Exception as error:
                    row["G"][label] = f"{type(error).__name__}: {error}"[:300]
                    continue
                if not np.array_equal(cupy.asnumpy(out_index), want):
                    row["G"][label] = "WRONG RESULT"
                    continue
                row["G"][label] = round(N / event_seconds(cupy, sort, stream) / 1e9, 2)
        build({})
        bits = 8 * dtype.itemsize if num_bins is None else int(np.ceil(np.log2(num_bins)))
        for index_dtype in (np.int32, np.int64):
            label = f"CUB {np.dtype(index_dtype).name}"
            try:
                cub = _cub_radix_pairs(cupy, keys, bits, index_dtype)
                cub()
                cupy.cuda.Device().synchronize()
                on = cupy.cuda.get_current_stream()
                row["G"][label] = round(N / event_seconds(cupy, cub, on) / 1e9, 2)
            except Exception as error:
                row["G"][label] = f"{type(error).__name__}: {error}"[:200]
        rows.append(row)
        print(row, flush=True)
    return {"n": N, "variants": variants, "rows": rows}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    write_results(sys.argv[1], "sort-ab", measure(json.loads(sys.argv[2])))
