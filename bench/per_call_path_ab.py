"""Whole public calls with their per-call driver calls (launch, memset,
read-back, sync) made from C (histkit.gpu._driver_calls) against the same
calls through cuda.core and cuda.bindings (Runtime.through_python),
alternated in one process: ROUNDS rounds, each timing CALLS synchronised
calls per path and shape, the median of each round kept; the figure is the
median of the rounds. Every call's result is checked against NumPy (a
histogram: np.bincount; a sort: a stable argsort) before anything is timed.
CuPy int32 keys, as a user hands them over. Needs a GPU and CuPy:

    python bench/per_call_path_ab.py OUT_DIR

writes OUT_DIR/per-call-path-ab-<today>.json and prints one line per shape.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np
from _shared import write_results

HISTOGRAM_SHAPES = ((1 << 12, 256), (1 << 12, 65536), (1 << 12, 1 << 20), (1 << 16, 256),
                    (1 << 20, 256), (1 << 20, 65536), (1 << 24, 256), (1 << 28, 256))
SORT_SHAPES = ((1 << 12, 256), (1 << 12, 65536), (1 << 16, 65536), (1 << 20, 65536))
ROUNDS, CALLS = 6, 200


def _calls(cupy, gpu, as_keys=None):
    """(name, N, K, call, check) for every shape: call() is one public call,
    on CuPy keys or on as_keys(CuPy keys) (a PyTorch tensor, say: results
    come back as the keys' kind, read here through CuPy)."""
    rng = np.random.default_rng(11)
    made = []

    def host_of(result):
        return cupy.asnumpy(cupy.asarray(result))

    for kind, shapes in (("histogram", HISTOGRAM_SHAPES), ("counting_sort", SORT_SHAPES)):
        for n, k in shapes:
            host = rng.integers(0, k, n, dtype=np.int32)
            keys = cupy.asarray(host) if as_keys is None else as_keys(cupy.asarray(host))
            if kind == "histogram":
                want = np.bincount(host, minlength=k)

                def call(keys=keys, k=k):
                    return gpu.histogram(keys, k)

                def check(result, want=want):
                    return np.array_equal(host_of(result), want)
            else:
                want = np.argsort(host, kind="stable")

                def call(keys=keys, k=k):
                    return gpu.counting_sort(keys, k)

                def check(result, want=want, host=host):
                    return (np.array_equal(host_of(result[1]), want)
                            and np.array_equal(host_of(result[0]), host[want]))
            made.append((kind, n, k, call, check))
    return made


def _on_path(rt, path: str):
    """A context in which public calls take path ("C" or "Python")."""
    return rt.through_python() if path == "Python" else contextlib.nullcontext()


def measure(rounds: int = ROUNDS, calls: int = CALLS) -> list[dict]:
    import cupy

    from histkit import gpu
    from histkit.gpu.bench_calls import median_of_calls_us
    from histkit.gpu.device import runtime

    rt = runtime()
    if rt.per_call.calls is None:
        raise SystemExit("the C path is not built here (histkit.gpu._driver_calls): "
                         "nothing to compare")
    sync = cupy.cuda.get_current_stream().synchronize
    rows = []
    for kind, n, k, call, check in _calls(cupy, gpu):
        for path in ("C", "Python"):
            with _on_path(rt, path):
                if not check(call()):
                    raise SystemExit(f"{kind} N={n} K={k} through {path}: wrong result")
        count = max(20, min(calls, int(2e5 // max(n >> 10, 1))))
        medians = {"C": [], "Python": []}
        for _ in range(rounds):
            for path in ("C", "Python"):
                with _on_path(rt, path):
                    for _ in range(3):  # warm-up
                        call()
                        sync()
                    medians[path].append(median_of_calls_us(call, sync, count))
        row = {"call": kind, "n": n, "num_bins": k, "calls_per_round": count,
               "rounds_us": medians,
               "c_path_us": float(np.median(medians["C"])),
               "python_path_us": float(np.median(medians["Python"]))}
        row["saved_us"] = row["python_path_us"] - row["c_path_us"]
        rows.append(row)
        print(f"{kind:13s} N=2^{n.bit_length() - 1:<2d} K={k:>7d}  C path "
              f"{row['c_path_us']:8.1f} us  through cuda.core {row['python_path_us']:8.1f} us  "
              f"saved {row['saved_us']:6.1f} us", flush=True)
    return rows


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit(__doc__)
    write_results(argv[0], "per-call-path-ab", measure())


if __name__ == "__main__":
    main(sys.argv[1:])
