"""CPU oracle throughput against NumPy, measured in the same run.

Rows: N = 2^24 int32 keys, K in {10, 256, 65536}, uniform and one-bin keys.
Each figure is the median of repeated runs after a warm-up; ratios compare
timings taken in the same process minutes apart, never across machines.

    python bench/cpu.py [--n-log2 24] [--repeats 11] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np

from histkit import __version__, oracles
from histkit.distributions import make_keys


def median_seconds(call, repeats: int) -> float:
    call()  # warm-up: first-touch allocations, thread pool start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def output_floor(n: int):
    """Allocate and write what counting_sort returns: keys and int64 indices."""

    def write_outputs():
        keys = np.empty(n, dtype=np.int32)
        keys.fill(1)
        index = np.empty(n, dtype=np.int64)
        index.fill(1)

    return write_outputs


def bench_row(keys: np.ndarray, num_bins: int, repeats: int) -> dict:
    n = len(keys)
    t = {
        "np.bincount": median_seconds(lambda: np.bincount(keys, minlength=num_bins), repeats),
        "histogram": median_seconds(lambda: oracles.histogram(keys, num_bins), repeats),
        "naive_wave_histogram": median_seconds(
            lambda: oracles.naive_wave_histogram(keys, num_bins), repeats),
        "counting_sort": median_seconds(lambda: oracles.counting_sort(keys, num_bins), repeats),
        "np.argsort(stable)": median_seconds(
            lambda: np.argsort(keys, kind="stable"), max(3, repeats // 3)),
        "output write floor": median_seconds(output_floor(n), repeats),
    }
    return {
        "seconds": t,
        "histogram_vs_bincount": t["np.bincount"] / t["histogram"],
        "wave_over_histogram": t["naive_wave_histogram"] / t["histogram"],
        "sort_vs_argsort": t["np.argsort(stable)"] / t["counting_sort"],
        "sort_over_floor": t["counting_sort"] / t["output write floor"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-log2", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    n = 1 << args.n_log2
    rows = []
    for num_bins in (10, 256, 65536):
        for distribution in ("uniform", "onebin"):
            keys = make_keys(distribution, n, num_bins, seed=0, dtype=np.int32)
            row = {"K": num_bins, "distribution": distribution, "N": n,
                   **bench_row(keys, num_bins, args.repeats)}
            rows.append(row)
            t = row["seconds"]
            print(f"K={num_bins:>6} {distribution:<8} "
                  f"bincount {t['np.bincount'] * 1e3:7.1f} ms  "
                  f"histogram {t['histogram'] * 1e3:6.1f} ms "
                  f"({row['histogram_vs_bincount']:4.1f}x)  "
                  f"wave {t['naive_wave_histogram'] * 1e3:6.1f} ms "
                  f"({row['wave_over_histogram']:3.1f}x hist)  "
                  f"sort {t['counting_sort'] * 1e3:6.1f} ms vs argsort "
                  f"{t['np.argsort(stable)'] * 1e3:7.1f} ms ({row['sort_vs_argsort']:5.1f}x; "
                  f"{row['sort_over_floor']:3.2f}x write floor)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"cpu-{os.cpu_count()}core-{date.today().isoformat()}.json"
    meta = {"histkit": __version__, "numpy": np.__version__, "cpus": os.cpu_count(),
            "machine": platform.machine(), "processor": platform.processor()}
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
