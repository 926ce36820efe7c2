"""``histkit bench --only weighted``: weighted histograms on the GPU, histkit's
exact kernel and public call against ``torch.bincount(weights=)`` and
``cupy.bincount(weights=)``, in one process.

int32 keys (N = 2^28 unless --quick) and float32 or float64 weights, drawn on
the device: keys uniform over K bins, all in one bin, or sorted; weights
normal, times a power of ten from 10^-3 to 10^3. Effective bandwidth = bytes
of keys and weights / time (8 bytes an element with float32 weights).
histkit's sums are checked bit for bit against oracles.histogram before they
are timed. The peers add in whatever order their atomics run: each is timed
anyway, and beside its figure the row notes in how many bins its sums differ
from the exact ones, and whether two of its calls gave the same bits.
"""

from __future__ import annotations

import numpy as np

from histkit import oracles
from histkit.bench.common import Timer, keys_of, skip_note
from histkit.gpu import registry
from histkit.gpu.device import runtime
from histkit.gpu.launch.weighted import Weights

BINS = (1, 16, 256, 4096, 65536)
WEIGHT_DTYPES = ("float32", "float64")
DISTRIBUTIONS = ("uniform", "onebin", "sorted")


def _device_inputs(cupy, distribution: str, n: int, num_bins: int, dtype: str, seed: int = 0):
    rs = cupy.random.RandomState(seed)
    if distribution == "onebin":
        keys = cupy.full(n, num_bins // 2, dtype=cupy.int32)
    else:
        keys = rs.randint(0, num_bins, n, dtype=cupy.int32)
        if distribution == "sorted":
            keys = cupy.sort(keys)
    scale = 10.0 ** rs.randint(-3, 4, n).astype(cupy.float64)
    weights = (rs.standard_normal(n, dtype=cupy.float64) * scale).astype(dtype)
    return keys, weights


def _peer(row: dict, name: str, time_with, call, exact: np.ndarray, to_host,
          nbytes: int) -> None:
    """Time a peer; note how far its sums are from the exact ones."""
    try:
        first = np.asarray(to_host(call()), dtype=np.float64)
        second = np.asarray(to_host(call()), dtype=np.float64)
        seconds = time_with(call)
    except Exception as error:  # a peer that fails is reported, never estimated
        row["notes"][name] = skip_note(error)
        return
    row["TBps"][name] = nbytes / seconds / 1e12
    inexact = int(np.count_nonzero(first.view(np.uint64) != exact.view(np.uint64)))
    repeats = first.tobytes() == second.tobytes()
    row["notes"][name] = (f"{inexact} of {len(exact)} bins differ from the exact sums; two "
                          f"calls gave {'the same' if repeats else 'different'} bits")


def weighted_row(cupy, torch, timer: Timer, n: int, num_bins: int, dtype: str,
                 distribution: str) -> dict:
    """One configuration: histkit's kernel and call, then the peers."""
    from histkit import gpu

    rt = runtime()
    keys, weights = _device_inputs(cupy, distribution, n, num_bins, dtype)
    exact = oracles.histogram(cupy.asnumpy(keys), num_bins, cupy.asnumpy(weights))
    nbytes = keys.nbytes + weights.nbytes
    row = {"K": num_bins, "weights": dtype, "distribution": distribution, "N": n,
           "TBps": {}, "notes": {}, "geometry": {}}
    sums = rt.empty(num_bins, np.uint64)
    first_bad = rt.empty(1, np.uint64)
    rt.memset(first_bad.ptr, 0xFF, 8)
    device_keys = keys_of(keys)
    device_weights = Weights(int(weights.data.ptr), np.dtype(dtype))
    kernel = registry.weighted_kernel()

    def launch():
        return kernel.run(rt, device_keys, device_weights, num_bins, sums, first_bad)

    row["geometry"]["histkit kernel"] = " + ".join(str(g) for g in launch())
    got = rt.copy_to_host(sums.ptr, np.empty(num_bins, np.uint64))
    if np.array_equal(got, exact.view(np.uint64)):
        row["TBps"]["histkit kernel"] = nbytes / timer.ours(launch) / 1e12
    else:
        row["notes"]["histkit kernel"] = "WRONG RESULT: not timed"
    _peer(row, "histkit gpu.histogram(weights=)", timer.cupy_call,
          lambda: gpu.histogram(keys, num_bins, weights=weights), exact, cupy.asnumpy, nbytes)
    _peer(row, "cupy.bincount(weights=)", timer.cupy_call,
          lambda: cupy.bincount(keys, weights, minlength=num_bins), exact, cupy.asnumpy,
          nbytes)
    if torch is None:
        row["notes"]["torch.bincount(weights=)"] = "skipped: PyTorch is not installed"
    else:
        tkeys = torch.as_tensor(keys, device="cuda")
        tweights = torch.as_tensor(weights, device="cuda")
        _peer(row, "torch.bincount(weights=)", timer.torch_call,
              lambda: torch.bincount(tkeys, tweights, minlength=num_bins), exact,
              lambda t: t.cpu().numpy(), nbytes)
    return row


def weighted_rows(cupy, torch, timer: Timer, n: int, quick: bool = False):
    """Every configuration of the module's docstring, as rows (a generator)."""
    for dtype in WEIGHT_DTYPES[:1] if quick else WEIGHT_DTYPES:
        for num_bins in BINS:
            for distribution in DISTRIBUTIONS:
                yield weighted_row(cupy, torch, timer, n, num_bins, dtype, distribution)
