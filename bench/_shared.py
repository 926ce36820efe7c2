"""What the bench scripts share: a median wall time, and a dated results file."""

from __future__ import annotations

import argparse
import json
import time
from datetime import date
from pathlib import Path

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
