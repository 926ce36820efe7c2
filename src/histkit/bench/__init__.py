"""``histkit bench``: the benchmark application, outside the library (nothing
in histkit.gpu, histkit.oracles or histkit.conformance imports it).

    kernels   histkit's kernels back to back on pre-allocated buffers, against
              CUB, CuPy, PyTorch and the read and copy rooflines (``histkit bench``)
    calls     whole public calls as a user makes them, one at a time
              (``histkit bench --calls``)
    common    what both share: timers, the oracle check before any timing

It needs the bench extra (CuPy, matplotlib, cuda-cccl for CUB; PyTorch is
used when present) and a CUDA GPU.
"""

from __future__ import annotations

import importlib.util
import sys


def run_gpu_bench(out_dir: str = "bench/results", quick: bool = False,
                  only: str | None = None, calls: bool = False) -> int:
    """Run one benchmark (calls=True: the whole-call one), writing its JSON and
    plot to out_dir; the exit status (2: a package missing, 1: no GPU)."""
    missing = [name for name in ("cupy", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"histkit bench needs {' and '.join(missing)}: install the bench extra, "
              f"python3 -m pip install \"histkit[bench]\" (CuPy, matplotlib, cuda-cccl for "
              f"CUB; PyTorch is used when present)", file=sys.stderr)
        return 2
    from histkit.gpu.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"histkit bench needs a CUDA GPU: {reason}", file=sys.stderr)
        return 1
    if calls:
        from histkit.bench.calls import CALL_SIZES, run_call_bench

        return run_call_bench(out_dir, sizes=CALL_SIZES[:-1] if quick else CALL_SIZES)
    from histkit.bench.kernels import run_kernel_bench

    return run_kernel_bench(out_dir, quick, only)


__all__ = ["run_gpu_bench"]
