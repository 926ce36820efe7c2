"""Other libraries' histograms judged as ``histkit check`` judges a user's kernel.

Each wrapper of examples/peer_kernels.py (and ``np.bincount`` through
examples/python_kernels.py) is checked on the quick matrix of its kind; the
result file holds each one's counts of pass and FAIL, the smallest failing
input and what was wrong with it. Peers whose library or GPU is missing are
listed as skipped, with why. docs/check.md ("Judging a library's function")
is this file as a table.

    python bench/peer_verdicts.py [--only NAME,...] [--out bench/results]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from _shared import write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# name: (wrapper, check kind, the arrays it takes)
PEERS = {
    "np.bincount(weights=)": ("examples.python_kernels:weighted_bincount",
                              "weighted-histogram", "numpy"),
    "torch.bincount(weights=)": ("examples.peer_kernels:torch_bincount_weights",
                                 "weighted-histogram", "torch"),
    "torch.Tensor.index_add_": ("examples.peer_kernels:torch_index_add",
                                "weighted-histogram", "torch"),
    "cupy.bincount(weights=)": ("examples.peer_kernels:cupy_bincount_weights",
                                "weighted-histogram", "cupy"),
    "histkit gpu.histogram(weights=)": ("examples.peer_kernels:histkit_weighted",
                                        "weighted-histogram", "cupy"),
    "cupy.histogram": ("examples.peer_kernels:cupy_histogram", "bin-histogram", "cupy"),
    "torch.histogram": ("examples.peer_kernels:torch_histogram", "bin-histogram", "torch"),
}


def missing(inputs: str) -> str | None:
    """Why a peer taking `inputs` cannot run here, or None."""
    if inputs == "numpy":
        return None
    try:
        __import__(inputs)
    except ImportError:
        return f"{inputs} is not installed"
    from histkit.gpu import gpu_unavailable_reason

    return gpu_unavailable_reason()


def verdict(spec: str, kind: str, inputs: str) -> dict:
    """The check's counts, and each kind of failure with its smallest input."""
    from histkit.conformance import check

    report = check(spec, kind, inputs=inputs)
    failures = []
    for group in report.groups():
        first = group[0]
        smallest = first.smallest
        failures.append({"symptom": first.symptom, "cases": len(group),
                         "smallest_failing_input": smallest.describe_input(64)
                         if hasattr(smallest, "describe_input") else smallest.name,
                         "detail": first.shrunk_detail or first.detail})
    return {"kind": kind, "counts": report.counts(), "failures": failures}


def device_name() -> str:
    if missing("torch") is None:
        import torch

        name = torch.cuda.get_device_name()
        return "h200" if "H200" in name else name.split()[-1].lower()
    return f"cpu-{os.cpu_count()}core"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated peer names (default: all)")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(PEERS)
    unknown = sorted(set(names) - set(PEERS))
    if unknown:
        parser.error(f"unknown peer(s) {unknown}; known: {sorted(PEERS)}")
    found = {}
    for name in names:
        spec, kind, inputs = PEERS[name]
        why = missing(inputs)
        if why is not None:
            found[name] = {"kind": kind, "skipped": why}
            print(f"{name:32s} skipped: {why}", flush=True)
            continue
        found[name] = verdict(spec, kind, inputs)
        counts = found[name]["counts"]
        print(f"{name:32s} {kind}: {counts}", flush=True)
        for failure in found[name]["failures"]:
            print(f"  {failure['smallest_failing_input']}: {failure['detail']}")
    write_results(args.out, f"peer-verdicts-{device_name()}", found)


if __name__ == "__main__":
    main()
