"""Where a small public call's time goes: cProfile over many gpu.histogram and
gpu.counting_sort calls on 2^12 CuPy keys (a GPU host with CuPy); with
--steps, each step of a call timed alone instead (median of many).

    python bench/profile_calls.py [--calls 300] [--top 25] [--steps | --shapes]

--shapes: gpu.histogram at several N and K, each call taken apart (what the
call waits for with and without its allocation, fill and read-back, the GPU
time of its work alone), then a cProfile of the last shape's calls.
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import auto_launch, event_seconds, median_seconds, profile_calls, uniform_keys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--steps", action="store_true", help="time each step alone")
    parser.add_argument("--shapes", action="store_true",
                        help="take calls apart at several N and K")
    args = parser.parse_args()
    if args.steps:
        time_steps()
        return
    if args.shapes:
        take_shapes_apart(args.calls, args.top)
        return
    import cupy

    from histkit import gpu

    keys = cupy.random.RandomState(0).randint(0, 256, 1 << 12, dtype=cupy.int32)
    for name, call in (("histogram", lambda: gpu.histogram(keys, 256)),
                       ("counting_sort", lambda: gpu.counting_sort(keys, 256))):
        us = median_seconds(call, args.calls, warm_up=20) * 1e6
        print(f"gpu.{name} on 2^12 keys: median {us:.1f} us per call "
              f"({args.calls} calls, no profiler)")
        profile_calls(call, args.calls, args.top)


def time_steps() -> None:
    """Each step of gpu.histogram(cupy keys of 2^12, 256) alone, on an idle GPU
    (the ones that queue work are followed by nothing: launch cost only)."""
    import ctypes

    import cupy
    from cuda.bindings import driver

    from histkit import gpu
    from histkit.gpu import registry
    from histkit.gpu.api import _begin
    from histkit.gpu.bench import _as_array
    from histkit.gpu.device import runtime

    keys = cupy.random.RandomState(0).randint(0, 256, 1 << 12, dtype=cupy.int32)
    rt = runtime()
    call = _begin(rt, keys, None, True)
    crt = call.rt
    hist = cupy.empty(256, cupy.int64)
    slot = crt.bad_key_slot()
    auto = registry.serving("histogram", "auto")
    fast = registry.by_row("fast")
    auto.run(crt, call.keys, 256, _as_array(hist), slot)
    kernel, geometry, _, shared_bins = next(v for k, v in rt._plans.items() if k[0] == "fast")
    config = crt._config(geometry)
    args = (call.keys.ptr, np.int64(call.keys.n), np.uint64(256), np.int64(0),
            np.uint64(shared_bins), hist.data.ptr, slot.ptr)
    # The same launch through cuLaunchKernel with parameters packed once.
    values = [ctypes.c_uint64(int(a)) for a in args]
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    function = driver.CUfunction(int(kernel.handle))
    stream = crt.stream.handle
    steps = {
        "keys.__cuda_array_interface__": lambda: keys.__cuda_array_interface__,
        "keys.device.id": lambda: keys.device.id,
        "cupy.cuda.get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
        "_begin (keys view, stream)": lambda: _begin(rt, keys, None, True),
        "cupy.empty(256, int64)": lambda: cupy.empty(256, cupy.int64),
        "rt.empty(256, int64)": lambda: crt.empty(256, np.int64),
        "rt.memset(2 KiB)": lambda: crt.memset(hist.data.ptr, 0, 2048),
        "registry.serving": lambda: registry.serving("histogram", "auto"),
        "auto.run (plan lookup + launch)": lambda: auto.run(crt, call.keys, 256, _as_array(hist),
                                                            slot),
        "fast.run": lambda: fast.run(crt, call.keys, 256, _as_array(hist), slot),
        "cuda.core launch alone": lambda: crt._launch(crt.stream, config, kernel, *args),
        "cuLaunchKernel, packed once": lambda: driver.cuLaunchKernel(
            function, geometry.grid, 1, 1, geometry.block, 1, 1, geometry.shared_bytes,
            stream, ctypes.addressof(pointers), 0),
        "stream sync, idle": lambda: crt.sync("idle"),
        "read_word (DtoH + sync)": lambda: crt.read_word(slot.ptr),
        "launch + read_word": lambda: (auto.run(crt, call.keys, 256, _as_array(hist), slot),
                                       crt.read_word(slot.ptr)),
        "gpu.histogram": lambda: gpu.histogram(keys, 256),
        "gpu.histogram(check=False) + sync": lambda: (gpu.histogram(keys, 256, check=False),
                                                      crt.sync("x")),
        "gpu.histogram(out=, first_bad=, check=False) + sync": lambda: (
            gpu.histogram(keys, 256, out=hist, first_bad=words, check=False), crt.sync("x")),
        "gpu.counting_sort": lambda: gpu.counting_sort(keys, 256),
        "cupy.bincount + sync": lambda: (cupy.bincount(keys, minlength=256), crt.sync("x")),
    }
    words = cupy.empty(1, cupy.uint64)
    for name, step in steps.items():
        us = median_seconds(step, 3000, warm_up=50) * 1e6
        crt.sync("after " + name)
        print(f"{us:8.2f} us  {name}", flush=True)


SHAPES = ((1 << 12, 256), (1 << 12, 65536), (1 << 12, 1 << 20), (1 << 16, 65536),
          (1 << 16, 1 << 20), (1 << 20, 256), (1 << 20, 1 << 20), (1 << 24, 1 << 20))


def take_shapes_apart(calls: int, top: int) -> None:
    """take_apart at each (N, K) of SHAPES, then cProfile of the last shape's calls."""
    import cupy

    from histkit import gpu

    for n, num_bins in SHAPES:
        keys = uniform_keys(cupy, n, num_bins)
        geometry, figures = take_apart(cupy, keys, num_bins, calls)
        print(f"N=2^{n.bit_length() - 1:<2} K={num_bins:>7} {geometry}: "
              + "  ".join(f"{name} {us:7.1f}" for name, us in figures.items()), flush=True)
    print(f"cProfile of {calls} calls at N=2^{n.bit_length() - 1}, K={num_bins}:")
    profile_calls(lambda: gpu.histogram(keys, num_bins), calls, top)


def take_apart(cupy, keys, num_bins: int, calls: int):
    """(auto's geometry, median wall times in us) of: the public call; the call
    into out= and first_bad= with check=False, then a sync (no allocation, no
    read-back); the fill and the auto launch alone, then a sync; the launch
    alone, then a sync; cupy.empty(K); and the GPU time of fill + launch on an
    idle stream (CUDA events)."""
    from histkit import gpu

    auto = auto_launch(cupy, keys, num_bins)
    crt, hist = auto.rt, auto.hist

    def fill_and_launch():
        crt.memset(hist.data.ptr, 0, num_bins * 8)
        auto.launch()

    steps = {
        "call": lambda: gpu.histogram(keys, num_bins),
        "out= check=False +sync": lambda: (
            gpu.histogram(keys, num_bins, out=hist, first_bad=auto.word, check=False),
            crt.sync("x")),
        "fill+launch+sync": lambda: (fill_and_launch(), crt.sync("x")),
        "launch+sync": lambda: (auto.launch(), crt.sync("x")),
        "cupy.empty(K)": lambda: cupy.empty(num_bins, cupy.int64),
    }
    figures = {name: median_seconds(step, calls, warm_up=20) * 1e6
               for name, step in steps.items()}
    crt.sync("after the steps")
    figures["GPU fill+launch (events)"] = event_seconds(
        cupy, fill_and_launch, cupy.cuda.get_current_stream(), repeats=31) * 1e6
    return auto.geometry, figures


if __name__ == "__main__":
    main()
