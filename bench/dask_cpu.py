"""histkit.dask on CPU workers against the in-memory oracle and da.bincount.

The keys (N = 2^26 int32, uniform over K bins) are persisted on a 2-worker
LocalCluster first, so each figure is the engine's cost on data already in
the workers' memory, as a user's chunked data would be. Median of several
computes, all in one run:

    python bench/dask_cpu.py [--n-log2 26] [--chunk-log2 23] [--repeats 7]
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import median_seconds, write_results


def main() -> None:
    import dask.array as da
    import distributed

    from histkit import dask as hd
    from histkit import oracles

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-log2", type=int, default=26)
    parser.add_argument("--chunk-log2", type=int, default=23)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    n, chunk = 1 << args.n_log2, 1 << args.chunk_log2
    rows = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for num_bins in (256, 65536):
            keys = np.random.default_rng(0).integers(0, num_bins, n, dtype=np.int32)
            x = client.persist(da.from_array(keys, chunks=chunk))
            distributed.wait(x)
            want = oracles.histogram(keys, num_bins)
            assert np.array_equal(hd.histogram(x, num_bins).compute(), want)
            assert np.array_equal(da.bincount(x, minlength=num_bins).compute(), want)
            row = {"N": n, "chunk": chunk, "K": num_bins, "seconds": {
                "oracles.histogram (in memory)": median_seconds(
                    lambda k=keys, b=num_bins: oracles.histogram(k, b), args.repeats),
                "histkit.dask.histogram": median_seconds(
                    lambda x=x, b=num_bins: hd.histogram(x, b).compute(), args.repeats),
                "da.bincount": median_seconds(
                    lambda x=x, b=num_bins: da.bincount(x, minlength=b).compute(),
                    args.repeats),
            }}
            s = row["seconds"]
            oracle = s["oracles.histogram (in memory)"]
            row["dask_over_oracle"] = s["histkit.dask.histogram"] / oracle
            row["bincount_over_dask"] = s["da.bincount"] / s["histkit.dask.histogram"]
            rows.append(row)
            print(f"K={num_bins:>6}: oracle {s['oracles.histogram (in memory)'] * 1e3:6.1f} ms, "
                  f"histkit.dask {s['histkit.dask.histogram'] * 1e3:6.1f} ms "
                  f"({row['dask_over_oracle']:.2f}x the oracle), da.bincount "
                  f"{s['da.bincount'] * 1e3:6.1f} ms ({row['bincount_over_dask']:.1f}x slower)",
                  flush=True)
    write_results(args.out, "dask-cpu-2worker", rows)


if __name__ == "__main__":
    main()
