"""Out of core: histkit.dask.histogram of a uint8 input larger than the
machine's memory, generated lazily chunk by chunk, against the rate at which
the chunks can be produced alone (measured in the same run).

    python bench/dask_stream.py [--n-log2 35] [--chunk-log2 26]
    python bench/dask_stream.py --gpu --n-log2 38 --chunk-log2 30   # CuPy chunks

With --gpu the chunks are CuPy arrays drawn on the GPU (Dask's RandomState
over CuPy's) and counted there by gpu.histogram; --workers threads of Dask's
local scheduler run chunks at once (each holds one chunk on the GPU).

"Produced alone" computes one key of every chunk (``x[::chunk]``): each chunk
is generated in full and dropped. Both are first run once on the first two
chunks (CuPy compiles its random kernels and histkit its histogram there, not
in the timed runs), then timed --repeats times each, alternately; the medians
are compared. The histogram is checked: its counts sum to N and every bin
holds N/256 keys within 1%. The peak resident memory of the process shows that
the input never had to fit.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
from _shared import write_results


def main() -> None:
    import dask
    import dask.array as da

    from histkit import dask as hd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-log2", type=int, default=35)
    parser.add_argument("--chunk-log2", type=int, default=26)
    parser.add_argument("--gpu", action="store_true", help="CuPy chunks, counted on the GPU")
    parser.add_argument("--workers", type=int, default=None,
                        help="threads of the local scheduler (default: one per CPU)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    n, chunk = 1 << args.n_log2, 1 << args.chunk_log2
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if args.gpu:
        import cupy

        generator = da.random.RandomState(0, RandomState=cupy.random.RandomState)
        keys = generator.randint(0, 256, size=n, chunks=chunk, dtype=np.uint8)
        device_memory = cupy.cuda.Device().mem_info[1]
    else:
        keys = da.random.default_rng(0).integers(0, 256, size=n, chunks=chunk, dtype=np.uint8)
        device_memory = None
    with dask.config.set(scheduler="threads", num_workers=args.workers):
        warm = keys[:2 * chunk]
        warm[::chunk].compute()
        hd.histogram(warm, 256).compute()
        produce_times, histogram_times = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            touched = keys[::chunk].compute()
            produce_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            counts = hd.histogram(keys, 256).compute()
            histogram_times.append(time.perf_counter() - start)
    produce, histogram = float(np.median(produce_times)), float(np.median(histogram_times))
    assert len(touched) == n // chunk
    assert int(counts.sum()) == n, "the counts must add up to N"
    assert np.all(np.abs(counts - n / 256) < 0.01 * n / 256), "uniform keys: N/256 per bin"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row = {"N": n, "chunk": chunk, "input_bytes": n, "machine_memory_bytes": memory,
           "gpu": args.gpu, "gpu_memory_bytes": device_memory,
           "cpus": os.cpu_count(), "produce_seconds": produce,
           "histogram_seconds": histogram, "produce_runs": produce_times,
           "histogram_runs": histogram_times, "produce_GBps": n / produce / 1e9,
           "histogram_GBps": n / histogram / 1e9, "histogram_over_produce": produce / histogram,
           "peak_rss_bytes": peak}
    print(f"N = 2^{args.n_log2} uint8 keys ({n / 2**30:.0f} GiB; machine memory "
          f"{memory / 2**30:.0f} GiB): produced alone in {produce:.1f} s "
          f"({row['produce_GBps']:.2f} GB/s); histkit.dask.histogram {histogram:.1f} s "
          f"({row['histogram_GBps']:.2f} GB/s) = {row['histogram_over_produce']:.2f} of the "
          f"production rate; peak RSS {peak / 2**30:.2f} GiB", flush=True)
    write_results(args.out, "dask-stream-gpu" if args.gpu else "dask-stream-cpu", row)


if __name__ == "__main__":
    main()
