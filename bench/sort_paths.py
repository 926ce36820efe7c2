"""The stable sort's onesweep passes (counting and radix sorts) for each
__launch_bounds__ minimum of blocks per SM of onesweep_scatter, with CUB's
DeviceRadixSort of (key, index) pairs timed beside them. Every result is
checked against cupy.argsort (stable for these keys). Needs a GPU and CuPy;
CUB through cuda.compute when installed.

bench/results/sort-paths-h200-2026-11-30.json also holds a "ranges" column:
the pass structure onesweep replaced (each pass counted its digit, scanned,
then scattered: two reads of the keys per pass), timed by this script as of
commit 31f6123.

    python bench/sort_paths.py [--n 268435456] [--out bench/results]
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import event_seconds, write_results

# (K or None for full-width keys of the dtype, distribution, key dtype)
INPUTS = ((None, "uniform", "int32"), (None, "uniform", "int64"),
          (256, "uniform", "int32"), (256, "onebin", "int32"), (256, "zipf", "int32"),
          (256, "sorted", "int32"), (256, "round-robin", "int32"),
          (65536, "uniform", "int32"), (65536, "onebin", "int32"), (65536, "zipf", "int32"),
          (65536, "sorted", "int32"), (65536, "round-robin", "int32"))
MIN_BLOCKS = (2, 3, 4)  # onesweep_scatter's __launch_bounds__ minimum blocks per SM


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 28)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()

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

    rt = runtime()
    stream = cupy_stream(cupy, rt.handle)
    first_bad = rt.empty(1, np.uint64)

    rows = []
    for num_bins, distribution, dtype in INPUTS:
        dtype = np.dtype(dtype)
        keys = (_full_width_device_keys(cupy, args.n, dtype) if num_bins is None
                else _device_keys(cupy, distribution, args.n, num_bins).astype(dtype))
        want = cupy.asnumpy(cupy.argsort(keys))
        device_keys = _keys_of(keys)
        out_keys = cupy.empty_like(keys)
        row = {"K": num_bins, "distribution": distribution, "dtype": dtype.name,
               "Gkeys_per_s": {}}
        for index_dtype in (np.int64, np.int32):
            out_index = cupy.empty(args.n, dtype=index_dtype)
            outputs = (_as_array(out_keys), _as_array(out_index))

            def sort(keys=device_keys, num_bins=num_bins, outputs=outputs,
                     index_dtype=index_dtype):
                if num_bins is None:
                    launch_sort.radix_sort(rt, keys, *outputs, [], index_dtype=index_dtype)
                else:
                    rt.memset(first_bad.ptr, 0xFF, 8)
                    plan = launch_sort.stable_count(rt, keys, num_bins, first_bad.ptr, [],
                                                    index_dtype=index_dtype)
                    launch_sort.stable_scatter(rt, keys, plan, *outputs)

            for min_blocks in MIN_BLOCKS:
                name = (f"onesweep (min blocks {min_blocks}, "
                        f"{np.dtype(index_dtype).name} index)")
                limits = {"ONESWEEP_MIN_BLOCKS": min_blocks,
                          "WIDE_KEY_ONESWEEP_MIN_BLOCKS": min_blocks}
                contract.SOURCE_DEFINES["counting_sort.cu"].update(limits)
                rt._kernels.clear()
                rt._plans.clear()
                try:
                    sort()
                    rt.sync(name)
                except Exception as error:
                    row["Gkeys_per_s"][name] = f"{type(error).__name__}: {error}"[:300]
                    continue
                if not np.array_equal(cupy.asnumpy(out_index), want):
                    row["Gkeys_per_s"][name] = "WRONG RESULT"
                    continue
                row["Gkeys_per_s"][name] = args.n / event_seconds(cupy, sort, stream) / 1e9
        contract.SOURCE_DEFINES["counting_sort.cu"].update(
            ONESWEEP_MIN_BLOCKS=contract.ONESWEEP_MIN_BLOCKS,
            WIDE_KEY_ONESWEEP_MIN_BLOCKS=contract.WIDE_KEY_ONESWEEP_MIN_BLOCKS)
        rt._kernels.clear()
        rt._plans.clear()
        bits = 8 * dtype.itemsize if num_bins is None else int(np.ceil(np.log2(num_bins)))
        for index_dtype in (np.int32, np.int64):
            name = f"CUB pairs ({np.dtype(index_dtype).name} index)"
            try:
                cub = _cub_radix_pairs(cupy, keys, bits, index_dtype)
                cub()
                cupy.cuda.Device().synchronize()
                on = cupy.cuda.get_current_stream()
                row["Gkeys_per_s"][name] = args.n / event_seconds(cupy, cub, on) / 1e9
            except Exception as error:
                row["Gkeys_per_s"][name] = f"{type(error).__name__}: {error}"[:200]
        rows.append(row)
        print(row, flush=True)
    write_results(args.out, "sort-paths", {"n": args.n, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
