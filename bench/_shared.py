"""What the bench scripts share: a median wall time and a results file named
by date and short commit."""

from __future__ import annotations

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


def write_results(out_dir: str, stem: str, data, indent: int = 1) -> Path:
    """data as JSON in out_dir/<stem>-<today>-<short commit>.json; says where."""
    from histkit.bench.common import replace_older_results, short_commit

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = "-".join(part for part in (stem, date.today().isoformat(), short_commit()) if part)
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=indent))
    print(f"wrote {path}")
    for old in replace_older_results(path):
        print(f"removed {old} (replaced)")
    return path
