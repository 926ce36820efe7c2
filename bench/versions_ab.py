"""Whole public calls of two installs of histkit, A against B: a change to
the host code measured as users get it. Each round runs one process per
install, A then B (a process imports one histkit), timing every shape of
per_call_path_ab.py (CuPy int32 keys, results checked against NumPy first)
over CALLS synchronised calls; the figure is each install's median of its
round medians, and every round's pair is kept (a round disturbed by the
machine shows as one pair, not as a shifted median). Needs a GPU and CuPy:

    python bench/versions_ab.py SITE_A SITE_B OUT_DIR [ROUNDS] [--torch]

SITE_A and SITE_B are directories holding a `histkit` package (for example
a `pip install --target` of each commit; the extension modules may be
shared when only Python files differ). --torch: the keys are PyTorch tensors
(the same values). Writes OUT_DIR/versions-ab-<today>.json and prints one
line per shape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from _shared import write_results

ROUNDS, CALLS = 5, 300
HERE = Path(__file__).resolve().parent


def one_round(calls: int, on_torch: bool = False) -> dict[str, float]:
    """Median us per call of every shape, in this process's histkit."""
    import cupy
    from per_call_path_ab import _calls

    from histkit import gpu
    from histkit.gpu.bench_calls import median_of_calls_us

    as_keys = None
    if on_torch:
        import torch

        def as_keys(keys):
            return torch.as_tensor(keys, device="cuda")

    medians = {}
    for kind, n, k, call, check in _calls(cupy, gpu, as_keys):
        if not check(call()):
            raise SystemExit(f"{kind} N={n} K={k}: wrong result")
        for _ in range(20):  # warm-up
            call()
        # the calls synchronise themselves (checked calls, results on the device)
        medians[f"{kind} 2^{n.bit_length() - 1} x {k}"] = median_of_calls_us(
            call, lambda: None, calls)
    return medians


def _round_in(site: str, calls: int, on_torch: bool) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [site, *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one-round",
                           str(calls), *(["--torch"] if on_torch else [])], env=env, cwd=HERE,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(site_a: str, site_b: str, rounds: int = ROUNDS, calls: int = CALLS,
            on_torch: bool = False) -> dict:
    _round_in(site_b, 20, on_torch)  # compile or load every kernel once first
    runs = {"A": [], "B": []}
    for _ in range(rounds):
        runs["A"].append(_round_in(site_a, calls, on_torch))
        runs["B"].append(_round_in(site_b, calls, on_torch))
    rows = []
    for shape in runs["B"][0]:
        a = [r[shape] for r in runs["A"]]
        b = [r[shape] for r in runs["B"]]
        row = {"call": shape, "rounds_us": {"A": a, "B": b},
               "a_us": float(np.median(a)), "b_us": float(np.median(b))}
        rows.append(row)
        pairs = "  ".join(f"{x:6.1f}/{y:6.1f}" for x, y in zip(a, b, strict=True))
        print(f"{shape:30s} A {row['a_us']:7.1f}  B {row['b_us']:7.1f}  rounds A/B: {pairs}",
              flush=True)
    return {"site_a": site_a, "site_b": site_b, "calls_per_round": calls,
            "keys": "torch" if on_torch else "cupy", "rows": rows}


def main(argv: list[str]) -> None:
    on_torch = "--torch" in argv
    argv = [arg for arg in argv if arg != "--torch"]
    if argv[:1] == ["--one-round"]:
        print(json.dumps(one_round(int(argv[1]), on_torch)))
        return
    if len(argv) not in (3, 4):
        raise SystemExit(__doc__)
    rounds = int(argv[3]) if len(argv) == 4 else ROUNDS
    write_results(argv[2], "versions-ab", measure(argv[0], argv[1], rounds, on_torch=on_torch))


if __name__ == "__main__":
    main(sys.argv[1:])
