"""Weighted histograms of the peers judged by the exact rule, and run twice.

Two questions, in one run on a GPU host (np.bincount alone on a CPU host),
asked of the peers and of histkit's own GPU call:

- the verdict of ``histkit check --kind weighted-histogram`` on each peer
  (examples/peer_kernels.py wraps them): cases passed and failed, and the
  smallest failing input with what the peer returned;
- whether a peer returns the same sums twice: 10 calls on the same 2^24
  int32 keys (uniform over K bins) and float32 weights over seven decades,
  counting the distinct results and the bins that differ from the exact sum
  (``oracles.histogram``, which is the same on every call).

    python bench/weighted_peers.py [--n-log2 24] [--calls 10] [--out bench/results]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from _shared import write_results

from histkit import oracles

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# (wrapper in examples/peer_kernels.py or examples/python_kernels.py, the inputs it takes)
PEERS = {"np.bincount(weights=)": ("examples.python_kernels:weighted_bincount", "numpy"),
         "torch.bincount(weights=)": ("examples.peer_kernels:torch_bincount_weights", "torch"),
         "torch.Tensor.index_add_": ("examples.peer_kernels:torch_index_add", "torch"),
         "cupy.bincount(weights=)": ("examples.peer_kernels:cupy_bincount_weights", "cupy"),
         "histkit gpu.histogram(weights=)": ("examples.peer_kernels:histkit_weighted", "cupy")}


def available(inputs: str) -> bool:
    if inputs == "numpy":
        return True
    from histkit.gpu import gpu_unavailable_reason

    try:
        __import__(inputs)
    except ImportError:
        return False
    return gpu_unavailable_reason() is None


def verdicts() -> dict:
    from histkit.conformance import check

    found = {}
    for name, (spec, inputs) in PEERS.items():
        if not available(inputs):
            continue
        report = check(spec, "weighted-histogram", inputs=inputs)
        first = report.failures[0] if report.failures else None
        found[name] = {"counts": report.counts(),
                       "smallest_failing_input": first.smallest.describe_input(64)
                       if first else None,
                       "detail": (first.shrunk_detail or first.detail) if first else None}
        print(f"{name:26s} {report.summary()}", flush=True)
        if first:
            print(f"  {found[name]['smallest_failing_input']}: {found[name]['detail']}")
    return found


def repeat_calls(n: int, calls: int) -> list[dict]:
    rows = []
    rng = np.random.default_rng(1)
    for num_bins in (1, 256, 65536):
        keys = rng.integers(0, num_bins, n, dtype=np.int32)
        weights = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
        exact = oracles.histogram(keys, num_bins, weights)
        for name, call in peer_calls(keys, weights, num_bins).items():
            results = [call() for _ in range(calls)]
            row = {"K": num_bins, "peer": name, "calls": calls,
                   "distinct_results": len({r.tobytes() for r in results}),
                   "bins_not_exact_per_call": float(np.mean(
                       [np.count_nonzero(r != exact) for r in results]))}
            rows.append(row)
            print(f"K={num_bins:6d} {name:26s} {row['distinct_results']:2d} distinct results "
                  f"in {calls} calls; {row['bins_not_exact_per_call']:.1f} of {num_bins} bins "
                  f"differ from the exact sum per call", flush=True)
    return rows


def peer_calls(keys, weights, num_bins) -> dict:
    wide = weights.astype(np.float64)
    calls = {"np.bincount(weights=)": lambda: np.bincount(keys, wide, minlength=num_bins)}
    if available("torch"):
        import torch

        tk = torch.as_tensor(keys, device="cuda").long()
        tw = torch.as_tensor(wide, device="cuda")
        calls["torch.bincount(weights=)"] = lambda: torch.bincount(
            tk, tw, minlength=num_bins).cpu().numpy()
        calls["torch.Tensor.index_add_"] = lambda: torch.zeros(
            num_bins, dtype=torch.float64, device="cuda").index_add_(0, tk, tw).cpu().numpy()
    if available("cupy"):
        import cupy

        ck, cw = cupy.asarray(keys), cupy.asarray(wide)
        calls["cupy.bincount(weights=)"] = lambda: cupy.bincount(ck, cw,
                                                                 minlength=num_bins).get()
        from histkit import gpu

        cf = cupy.asarray(weights)  # float32, as the peers' weights were before widening
        calls["histkit gpu.histogram(weights=)"] = lambda: gpu.histogram(
            ck, num_bins, weights=cf).get()
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-log2", type=int, default=24)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    found = verdicts()
    rows = repeat_calls(1 << args.n_log2, args.calls)
    device = f"cpu-{os.cpu_count()}core"
    if available("torch"):
        import torch

        name = torch.cuda.get_device_name()
        device = "h200" if "H200" in name else name.split()[-1].lower()
    write_results(args.out, f"weighted-peers-{device}",
                  {"n": 1 << args.n_log2, "verdicts": found, "repeats": rows}, indent=1)


if __name__ == "__main__":
    main()
