"""Whether the weighted histograms of the peers return the same sums twice.

10 calls of each peer (``np.bincount`` on any host; torch, CuPy and histkit's
own GPU call on a GPU host) on the same 2^24 int32 keys, uniform over K
bins, with float32 weights over seven decades: the distinct results, and the
bins that differ from the exact sum (``oracles.histogram``, which is the
same on every call). bench/peer_verdicts.py judges the same peers by the
exact rule.

    python bench/weighted_peers.py [--n-log2 24] [--calls 10] [--out bench/results]
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import write_results
from peer_verdicts import device_name, missing

from histkit import oracles


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
    if missing("torch") is None:
        import torch

        tk = torch.as_tensor(keys, device="cuda").long()
        tw = torch.as_tensor(wide, device="cuda")
        calls["torch.bincount(weights=)"] = lambda: torch.bincount(
            tk, tw, minlength=num_bins).cpu().numpy()
        calls["torch.Tensor.index_add_"] = lambda: torch.zeros(
            num_bins, dtype=torch.float64, device="cuda").index_add_(0, tk, tw).cpu().numpy()
    if missing("cupy") is None:
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
    rows = repeat_calls(1 << args.n_log2, args.calls)
    write_results(args.out, f"weighted-peers-{device_name()}",
                  {"n": 1 << args.n_log2, "repeats": rows})


if __name__ == "__main__":
    main()
