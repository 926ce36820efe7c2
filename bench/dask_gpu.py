"""histkit.dask on one GPU against all of a machine's GPUs, one Dask worker per
GPU, keys held as CuPy chunks on the workers.

    python bench/dask_gpu.py [--n-log2 34] [--chunk-log2 30] [--repeats 5]
                             [--sort-n 2147483665]

Workers: dask-cuda's LocalCUDACluster when dask-cuda is installed; otherwise
a distributed SpecCluster of Nanny workers, each started with
CUDA_VISIBLE_DEVICES naming its one GPU (what LocalCUDACluster does) -- the
JSON says which. Histogram: N uniform int32 keys over 256 bins, drawn on the
workers as CuPy chunks and persisted there; then histkit.dask.histogram is
timed (median of --repeats computes) on a 1-GPU cluster and on an all-GPU
one (with the busiest worker's time in its chunk tasks, from Dask's task
stream: what the GPUs did, against what the engine added), and checked
(counts sum to N, every bin within 1% of N/256). Sort:
--sort-n uint8 keys (0: skipped) drawn on the all-GPU cluster's workers as
CuPy chunks (seeded per chunk: no host array travels in the graph), sorted by
histkit.dask.counting_sort, gathered, and compared -- keys and indices -- with
oracles.counting_sort of the same keys gathered to the host.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _shared import write_results


def _gpu_count() -> int:
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


def _cluster(gpus: int):
    """(cluster, how it was made) with one single-threaded worker per GPU."""
    why_not = "dask-cuda is not installed"
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError as error:
        why_not = f"dask_cuda does not import: {error}"
    else:
        visible = ",".join(str(g) for g in range(gpus))
        try:
            return LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, threads_per_worker=1,
                                    dashboard_address=None), "dask_cuda.LocalCUDACluster"
        except Exception as error:  # a dask-cuda that does not match this Dask
            why_not = f"LocalCUDACluster failed: {type(error).__name__}: {error}"[:300]
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {f"gpu{g}": {"cls": Nanny, "options": {
        "nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(g)}}} for g in range(gpus)}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    return (SpecCluster(workers=workers, scheduler=scheduler),
            f"distributed.SpecCluster, CUDA_VISIBLE_DEVICES per Nanny ({why_not})")


def _draw(num_bins: int, dtype=np.int32, seed: int = 1000, block_info=None):
    """One chunk of uniform keys, drawn on the worker's GPU (seeded by the
    chunk's place, so every run draws the same keys)."""
    import cupy

    location = block_info[None]["chunk-location"][0]
    size = block_info[None]["chunk-shape"][0]
    rng = cupy.random.RandomState(seed + location)
    return rng.randint(0, num_bins, size, dtype=np.int32).astype(dtype, copy=False)


def _chunks(n: int, chunk: int) -> tuple[tuple[int, ...]]:
    """Chunks of `chunk` keys, the last one shorter when chunk does not divide n."""
    return ((chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ()),)


def histogram_seconds(client, n: int, chunk: int,
                      repeats: int) -> tuple[float, bool, float]:
    import cupy
    import dask.array as da
    import distributed

    from histkit import dask as hd

    keys = da.map_blocks(_draw, 256, chunks=_chunks(n, chunk), dtype=np.int32,
                         meta=cupy.empty(0, np.int32))
    keys = client.persist(keys)
    distributed.wait(keys)
    counts = hd.histogram(keys, 256).compute()
    ok = int(counts.sum()) == n and bool(np.all(np.abs(counts - n / 256) < 0.01 * n / 256))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        hd.histogram(keys, 256).compute()
        times.append(time.perf_counter() - start)
    with distributed.get_task_stream(client) as stream:  # one more, to see inside it
        hd.histogram(keys, 256).compute()
    del keys
    return float(np.median(times)), ok, _busiest_worker_seconds(stream.data)


def _busiest_worker_seconds(tasks: list[dict]) -> float:
    """Seconds the busiest worker spent counting its chunks: the GPUs' share
    of a compute, the rest being the engine's latency."""
    per_worker: dict[str, float] = {}
    for task in tasks:
        name = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
        if not str(name).startswith("_chunk_counts"):
            continue
        for span in task["startstops"]:
            if span["action"] == "compute":
                per_worker[task["worker"]] = (per_worker.get(task["worker"], 0.0)
                                              + span["stop"] - span["start"])
    return max(per_worker.values(), default=0.0)


def sort_check(client, n: int, chunk: int) -> dict:
    """The distributed counting sort of n uint8 keys drawn on the workers' GPUs
    (no host array shipped in the graph), against oracles.counting_sort of the
    same keys brought back to the host. seconds: the sort and the gather of its
    results, the keys already on the workers."""
    import cupy
    import dask.array as da
    import distributed

    from histkit import dask as hd
    from histkit import oracles

    keys = da.map_blocks(_draw, 256, np.uint8, 5000, chunks=_chunks(n, chunk), dtype=np.uint8,
                         meta=cupy.empty(0, np.uint8))
    keys = client.persist(keys)
    distributed.wait(keys)

    def to_host(array, dtype):
        return array.map_blocks(cupy.asnumpy, dtype=dtype, meta=np.empty(0, dtype))

    start = time.perf_counter()
    sorted_keys, index = hd.counting_sort(keys, 256)
    got_keys, got_index = da.compute(to_host(sorted_keys, np.uint8), to_host(index, np.int64))
    seconds = time.perf_counter() - start
    want_keys, want_index = oracles.counting_sort(to_host(keys, np.uint8).compute(), 256)
    return {"N": n, "chunk": chunk, "seconds": seconds,
            "equals_oracle": bool(np.array_equal(got_keys, want_keys)
                                  and np.array_equal(got_index, want_index))}


def main() -> None:
    import distributed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-log2", type=int, default=34)
    parser.add_argument("--chunk-log2", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sort-n", type=int, default=(1 << 31) + 17)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    n, chunk = 1 << args.n_log2, 1 << args.chunk_log2
    gpus = _gpu_count()
    results = {"N": n, "chunk": chunk, "gpus": gpus, "histogram_seconds": {}}
    for count in sorted({1, gpus}):
        cluster, made = _cluster(count)
        with cluster, distributed.Client(cluster) as client:
            seconds, ok, busy = histogram_seconds(client, n, chunk, args.repeats)
            results["cluster"] = made
            results["histogram_seconds"][str(count)] = seconds
            results.setdefault("busiest_worker_counting_seconds", {})[str(count)] = busy
            results.setdefault("histogram_checked", {})[str(count)] = ok
            print(f"{count} GPU(s), {made}: histogram of 2^{args.n_log2} int32 keys in "
                  f"{seconds * 1e3:.1f} ms ({n * 4 / seconds / 1e12:.2f} TB/s), of which the "
                  f"busiest worker counted for {busy * 1e3:.1f} ms; checked: {ok}",
                  flush=True)
            if count == gpus and args.sort_n:
                results["sort"] = sort_check(client, args.sort_n, min(chunk, 1 << 28))
                print(f"counting sort of {args.sort_n} uint8 keys on {count} GPU(s): "
                      f"{results['sort']['seconds']:.1f} s, equals the oracle: "
                      f"{results['sort']['equals_oracle']}", flush=True)
    if gpus > 1:
        times = results["histogram_seconds"]
        results["speedup"] = times["1"] / times[str(gpus)]
        print(f"speedup {gpus} GPUs over 1: {results['speedup']:.2f}x", flush=True)
    write_results(args.out, f"dask-gpu-{gpus}gpu", results)


if __name__ == "__main__":
    main()
