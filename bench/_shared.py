"""What the bench scripts share: a median wall time, a profile of many calls,
gpu.histogram's auto launch taken out of the call, a wait by polling,
methods wrapped for a measurement and put back, and a dated results file."""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import time
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import numpy as np


def median_seconds(call, repeats: int, warm_up: int = 1) -> float:
    """Median wall time of call() over repeats calls, after warm_up calls."""
    for _ in range(warm_up):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def event_seconds(cupy, call, stream, repeats: int = 7) -> float:
    """Median seconds of one call() over repeats, timed by CUDA events recorded
    on stream (the stream the call's work goes to)."""
    times = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        call()
        end.record(stream)
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times))


def profile_calls(call, calls: int, top: int, orders=("tottime",)) -> None:
    """cProfile of `calls` calls of call(), its top entries printed in each order."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        call()
    profile.disable()
    for order in orders:
        pstats.Stats(profile).sort_stats(order).print_stats(top)


def uniform_keys(cupy, n: int, num_bins: int):
    """n uniform int32 CuPy keys below num_bins, seeded by the shape."""
    return cupy.random.RandomState(n ^ num_bins).randint(0, num_bins, n, dtype=cupy.int32)


def auto_launch(cupy, keys, num_bins: int) -> SimpleNamespace:
    """gpu.histogram(keys, num_bins)'s auto launch out of the call, on the
    call's runtime (CuPy's stream): rt, hist (CuPy int64 counts), word (a CuPy
    first_bad word for check=False calls), geometry, and launch(on=rt) into
    hist with the thread's bad-key slot. Launched once and waited for."""
    from histkit.gpu import registry
    from histkit.gpu.api import _begin
    from histkit.gpu.bench import _as_array
    from histkit.gpu.device import runtime

    auto = registry.serving("histogram", "auto")
    call = _begin(runtime(), keys, None, True)
    rt, device_keys = call.rt, call.keys
    hist = cupy.empty(num_bins, cupy.int64)
    slot = rt.bad_key_slot()

    def launch(on=rt):
        return auto.run(on, device_keys, num_bins, _as_array(hist), slot)

    geometry = launch()
    rt.sync("warm-up")
    return SimpleNamespace(rt=rt, hist=hist, word=cupy.empty(1, cupy.uint64),
                           geometry=geometry, launch=launch)


def poll_stream(driver, handle: int) -> int:
    """Wait for the stream by asking cuStreamQuery until it stops answering
    NOT_READY (a busy loop, no driver wait); the last answer as an int
    (0: done; anything else is the stream's error, returned, not spun on)."""
    not_ready = driver.CUresult.CUDA_ERROR_NOT_READY
    while True:
        (status,) = driver.cuStreamQuery(handle)
        if status != not_ready:
            return int(status)


@contextlib.contextmanager
def wrapped(targets):
    """Within: each (owner, name, wrap) of targets has owner.name replaced by
    wrap(the original); every original is put back on the way out, however
    the block ends."""
    saved = []
    try:
        for owner, name, wrap in targets:
            original = getattr(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, wrap(original))
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def write_results(out_dir: str, stem: str, data, indent: int = 1) -> Path:
    """data as JSON in out_dir/<stem>-<today>.json; says where."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}-{date.today().isoformat()}.json"
    path.write_text(json.dumps(data, indent=indent))
    print(f"wrote {path}")
    return path


def gpu_rows_main(doc: str, default_repeats: int, stem: str, rows) -> None:
    """A GPU table script's main: --repeats and --out; CuPy, PyTorch when
    installed (else None) and histkit's runtime; each (label, row) that
    rows(cupy, torch, rt, repeats) yields is printed with its "us" figures as
    it comes, and all rows go to <out>/<stem>-<arch>-<today>.json."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=default_repeats)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    import cupy

    from histkit.gpu.bench import optional_torch
    from histkit.gpu.device import runtime

    rt = runtime()
    collected = []
    for label, row in rows(cupy, optional_torch(), rt, args.repeats):
        collected.append(row)
        print(f"{label} [us] " + "  ".join(f"{k} {v:7.1f}" for k, v in row["us"].items()),
              flush=True)
    write_results(args.out, f"{stem}-{rt.arch}", {"device": rt.device.name, "rows": collected})
