"""Where a small public call's time goes: cProfile over many gpu.histogram and
gpu.counting_sort calls on 2^12 CuPy keys (a GPU host with CuPy).

    python bench/profile_calls.py [--calls 300] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    import cupy

    from histkit import gpu

    keys = cupy.random.RandomState(0).randint(0, 256, 1 << 12, dtype=cupy.int32)
    for name, call in (("histogram", lambda: gpu.histogram(keys, 256)),
                       ("counting_sort", lambda: gpu.counting_sort(keys, 256))):
        for _ in range(20):
            call()
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        print(f"gpu.{name} on 2^12 keys: median {np.median(times) * 1e6:.1f} us per call "
              f"({args.calls} calls, no profiler)")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            call()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
