"""Launch the kernels behind the missed GPU targets once each, for ncu.

    ncu --clock-control none --section SpeedOfLight --section Occupancy \\
        --section WarpStateStats --section MemoryWorkloadAnalysis \\
        -k regex:"fast_histogram|partition|ranges" python bench/gpu_profile.py

Each case prints its name first, so the ncu report can be read in order.
N = 2^26 int32 keys: large enough to fill the chip, small enough that ncu's
kernel replays stay short.
"""

from __future__ import annotations

import cupy
import numpy as np

from histkit.gpu import registry
from histkit.gpu.bench import _as_array, _device_keys, _keys_of
from histkit.gpu.device import runtime

N = 1 << 26
CASES = [
    ("fast", "uniform", 65536),
    ("partitioned", "uniform", 1 << 20),
    ("partitioned", "onebin", 1 << 20),
    ("partitioned", "zipf", 1 << 20),
    ("stable-sort", "uniform", 256),
    ("stable-sort", "uniform", 65536),
]


def main() -> None:
    rt = runtime()
    for kernel, distribution, num_bins in CASES:
        keys = _device_keys(cupy, distribution, N, num_bins)
        device_keys = _keys_of(keys)
        first_bad = rt.empty(1, np.uint64)
        rt.memset(first_bad.ptr, 0xFF, 8)
        print(f"=== {kernel} {distribution} K={num_bins} N={N}", flush=True)
        if kernel == "stable-sort":
            out_keys, out_index = cupy.empty_like(keys), cupy.empty(N, dtype=cupy.int64)
            registry.serving("counting_sort", True).run(
                rt, device_keys, num_bins, _as_array(out_keys), _as_array(out_index), first_bad, [])
        else:
            hist = rt.zeros(num_bins, np.uint64)
            print(registry.by_row(kernel).run(rt, device_keys, num_bins, hist, first_bad),
                  flush=True)
        rt.sync(kernel)


if __name__ == "__main__":
    main()
