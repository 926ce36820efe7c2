"""The stable sort's two pass structures on the same inputs, in one run:
"ranges" (each pass counts its digit, scans, then scatters: two reads of the
keys per pass) against "onesweep" (one read counts every pass's digits, then
each pass ranks, looks back across tiles and scatters: one read per pass),
with CUB's DeviceRadixSort of (key, index) pairs timed beside them. Also the
onesweep scatter's __launch_bounds__ blocks per SM. Every result is checked
against cupy.argsort (stable for these keys). Needs a GPU and CuPy; CUB
through cuda.compute when installed.

    python bench/sort_paths.py [--n 268435456] [--out bench/results]
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import write_results

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

    from histkit.gpu import contract, kernels
    from histkit.gpu.bench import (
        _as_array,
        _cub_radix_pairs,
        _device_keys,
        _full_width_device_keys,
        _keys_of,
    )
    from histkit.gpu.device import runtime

    rt = runtime()
    stream = cupy.cuda.ExternalStream(rt.handle)
    first_bad = rt.empty(1, np.uint64)

    def seconds(call, on=stream) -> float:
        """Median of 7 calls timed by events on the stream `on` (histkit's, or CuPy's)."""
        times = []
        for _ in range(7):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(on)
            call()
            end.record(on)
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        return float(np.median(times))

    rows = []
    for num_bins, distribution, dtype in INPUTS:
        dtype = np.dtype(dtype)
        keys = (_full_width_device_keys(cupy, args.n, dtype) if num_bins is None
                else _device_keys(cupy, distribution, args.n, num_bins).astype(dtype))
        want = cupy.asnumpy(cupy.argsort(keys))
        device_keys = _keys_of(keys)
        out_keys, out_index = cupy.empty_like(keys), cupy.empty(args.n, dtype=cupy.int64)
        row = {"K": num_bins, "distribution": distribution, "dtype": dtype.name,
               "Gkeys_per_s": {}}

        outputs = (_as_array(out_keys), _as_array(out_index))

        def sort(path: str, keys=device_keys, num_bins=num_bins, outputs=outputs):
            rt.memset(first_bad.ptr, 0xFF, 8)
            if path == "ranges":
                bins = kernels._EVERY_KEY if num_bins is None else num_bins
                shape = rt.plan(("bench-ranges", keys.dtype, keys.n, bins),
                                lambda: kernels._sort_shape(rt, keys, bins, None,
                                                            full_width=num_bins is None))
                plan = kernels._first_count(rt, shape, keys, first_bad.ptr, [])
                kernels.stable_scatter(rt, keys, plan, *outputs)
            elif num_bins is None:
                kernels.radix_sort(rt, keys, *outputs, [])
            else:
                plan = kernels.onesweep_count(rt, keys, num_bins, first_bad.ptr, [])
                kernels.onesweep_scatter(rt, keys, plan, *outputs)

        paths = [("ranges", "ranges", None)] + [
            (f"onesweep (min blocks {b})", "onesweep", b) for b in MIN_BLOCKS]
        for name, path, min_blocks in paths:
            if min_blocks is not None:
                contract.SOURCE_DEFINES["counting_sort.cu"]["ONESWEEP_MIN_BLOCKS"] = min_blocks
                rt._kernels.clear()
                rt._plans.clear()
            try:
                sort(path)
                rt.sync(name)
            except Exception as error:
                row["Gkeys_per_s"][name] = f"{type(error).__name__}: {error}"[:300]
                continue
            if not np.array_equal(cupy.asnumpy(out_index), want):
                row["Gkeys_per_s"][name] = "WRONG RESULT"
                continue
            row["Gkeys_per_s"][name] = args.n / seconds(lambda p=path: sort(p)) / 1e9
        contract.SOURCE_DEFINES["counting_sort.cu"]["ONESWEEP_MIN_BLOCKS"] = \
            contract.ONESWEEP_MIN_BLOCKS
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
                row["Gkeys_per_s"][name] = args.n / seconds(cub, on) / 1e9
            except Exception as error:
                row["Gkeys_per_s"][name] = f"{type(error).__name__}: {error}"[:200]
        rows.append(row)
        print(row, flush=True)
    write_results(args.out, "sort-paths", {"n": args.n, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
