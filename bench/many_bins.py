"""Each exact histogram kernel at many bins and medium N: kernel times by CUDA
events around each launcher (the sampled auto choice includes its key
sample's read-back), and the gpu.histogram call against torch.bincount's.
Every result is checked against numpy.bincount first. A GPU host with CuPy
(PyTorch optional); bench/NOTES.md ("How auto chooses") has the figures.

    python bench/many_bins.py [--repeats 15] [--out bench/results]
"""

from __future__ import annotations

import numpy as np
from _shared import event_seconds, gpu_rows_main, median_seconds

SHAPES = ((16, 1 << 16), (20, 1 << 20), (22, 1 << 20), (24, 1 << 20), (24, 1 << 16),
          (24, 1 << 18), (26, 1 << 20))  # (log2 N, K)
DISTRIBUTIONS = ("uniform", "zipf", "sorted")
METHODS = ("atomic", "fast", "partitioned", "auto")


def histogram_row(cupy, torch, rt, n_log2: int, num_bins: int, distribution: str,
                  repeats: int) -> dict:
    """One (N, K, distribution): each method's kernel time, and the calls (us)."""
    from histkit import gpu
    from histkit.distributions import make_keys
    from histkit.gpu import registry
    from histkit.gpu.api import _begin
    from histkit.gpu.bench import _as_array

    host = make_keys(distribution, 1 << n_log2, num_bins, seed=1)
    keys = cupy.asarray(host)
    expected = np.bincount(host, minlength=num_bins)
    call = _begin(rt, keys, None, True)
    hist = cupy.zeros(num_bins, cupy.int64)
    slot = call.rt.bad_key_slot()
    us = {}
    for method in METHODS:
        kernel = registry.by_row(method)

        def count(kernel=kernel):
            hist.fill(0)
            kernel.run(call.rt, call.keys, num_bins, _as_array(hist), slot)

        count()
        if not (hist.get() == expected).all():
            raise AssertionError(f"{method} is wrong at 2^{n_log2} keys, K={num_bins}")
        us[method] = event_seconds(cupy, count, cupy.cuda.get_current_stream(), repeats) * 1e6
    us["gpu.histogram call"] = median_seconds(
        lambda: gpu.histogram(keys, num_bins), 100, warm_up=10) * 1e6
    if torch is not None:
        tensor = torch.as_tensor(keys, device="cuda")
        us["torch.bincount call"] = median_seconds(
            lambda: (torch.bincount(tensor, minlength=num_bins), torch.cuda.synchronize()),
            100, warm_up=10) * 1e6
    return {"N": 1 << n_log2, "K": num_bins, "distribution": distribution, "us": us}


def rows(cupy, torch, rt, repeats: int):
    """(label, row) for every shape, in order (_shared.gpu_rows_main prints and writes them)."""
    for n_log2, num_bins in SHAPES:
        for distribution in DISTRIBUTIONS:
            yield (f"2^{n_log2} K={num_bins} {distribution:8s}",
                   histogram_row(cupy, torch, rt, n_log2, num_bins, distribution, repeats))


if __name__ == "__main__":
    gpu_rows_main(__doc__, 15, "many-bins", rows)
