"""CPU oracle throughput against NumPy, measured in the same run.

Rows: N = 2^24 int32 keys, K in {10, 256, 65536}, uniform and one-bin keys;
weighted rows: the same uniform keys with float32 and float64 normal weights,
oracles.histogram(keys, K, weights) (exact sums) against
np.bincount(keys, weights) (sums in key order, rounding each step);
binning rows: N = 2^24 float64 samples, uniform on [0, 1), into 256 even bins
(range given, and the samples' min and max) against np.histogram, and
fast-histogram's histogram1d (range given) where it is installed (it is fast,
and not bin-exact: docs/binning-peers.md).
The read floor reads the keys once on every core (the histogram's roofline
here, measured in the same rounds).
Each repeat times every method back to back, as the best of --best-of calls
in a row (argsort, which takes seconds, once), so a ratio is taken between
calls made moments apart: the shared 2-core machine this runs on changes
speed by tens of percent from minute to minute, and paired ratios keep that
drift out, where the best of a few calls keeps out a neighbour's burst
within one call of a few ms. Reported: the median over the repeats of each
method's time and of the per-repeat ratios, after one warm-up round.

    python bench/cpu.py [--n-log2 24] [--repeats 9] [--best-of 3] [--out bench/results] [--busy]

--busy keeps one core busy for the whole run with a spinning process that the
script starts and stops itself: what the oracles give on a shared machine.

counting_sort writes its results into pages that earlier, dropped results
left (histkit.oracles._pages), as a loop of calls does; "counting_sort, fresh
pages" returns those pages to the OS before each call, so it pays the page
faults of a first call. The write floor allocates fresh pages too.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from _shared import write_results

from histkit import __version__, oracles
from histkit.distributions import make_keys

BEST_OF = 3  # --best-of


def seconds(call, best_of: int | None = None) -> float:
    """The least time of best_of calls in a row (default: --best-of)."""
    times = []
    for _ in range(BEST_OF if best_of is None else best_of):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def output_floor(n: int):
    """Allocate and write what counting_sort returns: keys and int64 indices."""

    def write_outputs():
        keys = np.empty(n, dtype=np.int32)
        keys.fill(1)
        index = np.empty(n, dtype=np.int64)
        index.fill(1)

    return write_outputs


def read_floor(keys: np.ndarray):
    """Read every byte of keys once, on every core: each thread sums its part
    as uint64 words (numpy's reductions release the GIL). The histogram's
    roofline on this machine, measured beside it."""
    from concurrent.futures import ThreadPoolExecutor

    words = keys.view(np.uint8)[: keys.nbytes // 8 * 8].view(np.uint64)
    parts = np.array_split(words, os.cpu_count() or 1)
    pool = ThreadPoolExecutor(len(parts))

    def read_all():
        list(pool.map(np.add.reduce, parts))

    return read_all


def bench_row(keys: np.ndarray, num_bins: int, repeats: int) -> dict:
    methods = {
        "np.bincount": lambda: np.bincount(keys, minlength=num_bins),
        "histogram": lambda: oracles.histogram(keys, num_bins),
        "read floor": read_floor(keys),
        "naive_wave_histogram": lambda: oracles.naive_wave_histogram(keys, num_bins),
        "counting_sort": lambda: oracles.counting_sort(keys, num_bins),
        "counting_sort, fresh pages": lambda: (oracles.release_pages(),
                                               oracles.counting_sort(keys, num_bins)),
        "output write floor": output_floor(len(keys)),
    }
    # argsort takes up to 2 s on uniform keys: it runs in every third round.
    slow = {"np.argsort(stable)": lambda: np.argsort(keys, kind="stable")}
    for call in {**methods, **slow}.values():
        call()  # warm-up: first-touch allocations, thread pool start
    rounds = []
    for index in range(repeats):
        chosen = {**methods, **slow} if index % 3 == 0 else methods
        rounds.append({name: seconds(call, 1 if name in slow else None)
                       for name, call in chosen.items()})

    def paired(numerator: str, denominator: str) -> float:
        """Median over the rounds that timed both of numerator / denominator."""
        both = [r for r in rounds if numerator in r and denominator in r]
        return float(np.median([r[numerator] / r[denominator] for r in both]))

    names = {**methods, **slow}
    return {
        "seconds": {name: float(np.median([r[name] for r in rounds if name in r]))
                    for name in names},
        "histogram_vs_bincount": paired("np.bincount", "histogram"),
        "histogram_share_of_read_floor": paired("read floor", "histogram"),
        "wave_over_histogram": paired("naive_wave_histogram", "histogram"),
        "sort_vs_argsort": paired("np.argsort(stable)", "counting_sort"),
        "fresh_sort_vs_argsort": paired("np.argsort(stable)", "counting_sort, fresh pages"),
        "sort_over_floor": paired("counting_sort", "output write floor"),
    }


def binning_row(samples: np.ndarray, num_bins: int, repeats: int) -> dict:
    """bin_histogram against np.histogram, paired per round as bench_row pairs them."""
    methods = {
        **_fast_histogram_method(samples, num_bins),
        "np.histogram, range": lambda: np.histogram(samples, num_bins, (0.0, 1.0)),
        "bin_histogram, range": lambda: oracles.bin_histogram(samples, num_bins, (0.0, 1.0)),
        "np.histogram, min-max": lambda: np.histogram(samples, num_bins),
        "bin_histogram, min-max": lambda: oracles.bin_histogram(samples, num_bins),
    }
    for call in methods.values():
        call()
    rounds = [{name: seconds(call) for name, call in methods.items()} for _ in range(repeats)]

    def paired(numerator: str, denominator: str) -> float:
        return float(np.median([r[numerator] / r[denominator] for r in rounds]))

    row = {
        "seconds": {name: float(np.median([r[name] for r in rounds])) for name in methods},
        "range_vs_np_histogram": paired("np.histogram, range", "bin_histogram, range"),
        "minmax_vs_np_histogram": paired("np.histogram, min-max", "bin_histogram, min-max"),
    }
    if FAST_HISTOGRAM in methods:
        row["range_vs_fast_histogram"] = paired(FAST_HISTOGRAM, "bin_histogram, range")
    return row


FAST_HISTOGRAM = "fast_histogram.histogram1d, range"


def _fast_histogram_method(samples: np.ndarray, num_bins: int) -> dict:
    try:
        from fast_histogram import histogram1d
    except ImportError:
        return {}
    return {FAST_HISTOGRAM: lambda: histogram1d(samples, num_bins, (0.0, 1.0))}


def weighted_row(keys: np.ndarray, weights: np.ndarray, num_bins: int, repeats: int) -> dict:
    """Exact weighted sums against np.bincount(weights=), paired per round."""
    methods = {
        "np.bincount(weights=)": lambda: np.bincount(keys, weights, minlength=num_bins),
        "histogram(weights=)": lambda: oracles.histogram(keys, num_bins, weights),
    }
    for call in methods.values():
        call()
    rounds = [{name: seconds(call) for name, call in methods.items()} for _ in range(repeats)]
    return {
        "seconds": {name: float(np.median([r[name] for r in rounds])) for name in methods},
        "weighted_vs_bincount": float(np.median(
            [r["np.bincount(weights=)"] / r["histogram(weights=)"] for r in rounds])),
    }


def run_weighted_rows(args) -> list[dict]:
    n = 1 << args.n_log2
    rows = []
    for num_bins in (10, 256, 65536):
        keys = make_keys("uniform", n, num_bins, seed=0, dtype=np.int32)
        for dtype in ("float32", "float64"):
            weights = np.random.default_rng(1).standard_normal(n).astype(dtype)
            row = {"K": num_bins, "distribution": "uniform", "weights": dtype, "N": n,
                   **weighted_row(keys, weights, num_bins, args.repeats)}
            rows.append(row)
            t = row["seconds"]
            print(f"weighted K={num_bins:>6} {dtype}: np.bincount "
                  f"{t['np.bincount(weights=)'] * 1e3:6.1f} ms  exact histogram "
                  f"{t['histogram(weights=)'] * 1e3:6.1f} ms "
                  f"({row['weighted_vs_bincount']:3.1f}x)", flush=True)
    return rows


def _spin(stop) -> None:
    while not stop.is_set():
        pass


class BusyCore:
    """A process spinning on one core while the block runs."""

    def __enter__(self):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._process = context.Process(target=_spin, args=(self._stop,), daemon=True)
        self._process.start()
        time.sleep(0.5)  # let it reach its loop before anything is timed
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()


def _processor() -> str:
    """The CPU's model name (platform.processor() is empty on most Linux hosts)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-log2", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--best-of", type=int, default=3,
                        help="each timing is the best of this many calls in a row")
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--busy", action="store_true",
                        help="keep one core busy with a spinning process during the run")
    args = parser.parse_args()
    global BEST_OF
    BEST_OF = args.best_of
    import contextlib

    with BusyCore() if args.busy else contextlib.nullcontext():
        rows = run_rows(args)
        weighted = run_weighted_rows(args)
        binning = run_binning_rows(args)
    busy = "-busy" if args.busy else ""
    meta = {"histkit": __version__, "numpy": np.__version__, "cpus": os.cpu_count(),
            "machine": platform.machine(), "processor": _processor(),
            "one_core_busy": args.busy, "repeats": args.repeats, "best_of": args.best_of}
    write_results(args.out, f"cpu-{os.cpu_count()}core{busy}",
                  {"meta": meta, "rows": rows, "weighted": weighted, "binning": binning},
                  indent=2)


def run_binning_rows(args) -> list[dict]:
    n = 1 << args.n_log2
    samples = np.random.default_rng(0).random(n)
    row = {"K": 256, "samples": "float64, uniform on [0, 1)", "N": n,
           **binning_row(samples, 256, args.repeats)}
    t = row["seconds"]
    print(f"binning float64 K=256: np.histogram {t['np.histogram, range'] * 1e3:6.1f} ms  "
          f"bin_histogram {t['bin_histogram, range'] * 1e3:5.1f} ms "
          f"({row['range_vs_np_histogram']:3.1f}x) with a range; "
          f"{t['np.histogram, min-max'] * 1e3:6.1f} ms vs "
          f"{t['bin_histogram, min-max'] * 1e3:5.1f} ms "
          f"({row['minmax_vs_np_histogram']:3.1f}x) over the min and max", flush=True)
    if "range_vs_fast_histogram" in row:
        print(f"  fast_histogram.histogram1d {t[FAST_HISTOGRAM] * 1e3:5.1f} ms: bin_histogram "
              f"is {row['range_vs_fast_histogram']:3.2f}x its speed", flush=True)
    return [row]


def run_rows(args) -> list[dict]:
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
                  f"({row['histogram_vs_bincount']:4.1f}x; "
                  f"{row['histogram_share_of_read_floor']:4.0%} of the read floor)  "
                  f"wave {t['naive_wave_histogram'] * 1e3:6.1f} ms "
                  f"({row['wave_over_histogram']:3.1f}x hist)  "
                  f"sort {t['counting_sort'] * 1e3:6.1f} ms vs argsort "
                  f"{t['np.argsort(stable)'] * 1e3:7.1f} ms ({row['sort_vs_argsort']:5.1f}x; "
                  f"fresh pages {row['fresh_sort_vs_argsort']:5.1f}x; "
                  f"{row['sort_over_floor']:3.2f}x write floor)", flush=True)
    return rows


if __name__ == "__main__":
    main()
