"""``histkit bench --only binning``: real-valued samples into bins on the GPU,
histkit's binning kernel and public call against CUB HistogramEven,
torch.histc and cupy.histogram, in one process.

Samples (N = 2^28 unless --quick) are drawn on the device: uniform on [0, 1),
normal (mean 0.5, sd 0.15, so some fall outside), every sample equal, and
sorted uniform. They are binned over two ranges: (0, 1), whose edges are
dyadic, so the kernel's estimate is exact, and (-0.1, 1.3), whose edges and
estimate round, so samples near an edge take the kernel's slower path that
reads the edges (--quick: the first only). Effective bandwidth = bytes of samples / time. histkit's
result is checked against oracles.bin_histogram before it is timed. A peer
whose counts differ from numpy's rule is timed anyway (binning by its own
rule is what it does) and the difference is noted beside its figure.
"""

from __future__ import annotations

import numpy as np

from histkit import oracles
from histkit.bench.common import Timer, keys_of, skip_note
from histkit.gpu import registry
from histkit.gpu.binning import kernel_rule_for
from histkit.gpu.device import runtime
from histkit.gpu.launch.binning import TALLIES

EVEN_BINS = (16, 256, 4096, 65536)
EDGE_BINS = (64, 4096)
DTYPES = ("float32", "float64")
DISTRIBUTIONS = ("uniform", "normal", "onebin", "sorted")
RANGES = ((0.0, 1.0), (-0.1, 1.3))


def _device_samples(cupy, distribution: str, n: int, dtype: str, seed: int = 0):
    rs = cupy.random.RandomState(seed)
    if distribution == "uniform":
        return rs.random_sample(n, dtype=dtype)
    if distribution == "normal":
        return (rs.standard_normal(n, dtype=dtype) * 0.15 + 0.5).astype(dtype)
    if distribution == "onebin":
        return cupy.full(n, 0.3, dtype=dtype)
    if distribution == "sorted":
        return cupy.sort(rs.random_sample(n, dtype=dtype))
    raise ValueError(distribution)


def _cub_even(cupy, samples, num_bins: int, span: tuple[float, float]):
    from cuda.compute import make_histogram_even

    hist = cupy.zeros(num_bins, dtype=cupy.int32)
    levels = np.array([num_bins + 1], dtype=np.int32)
    lower = np.array([span[0]], samples.dtype)
    upper = np.array([span[1]], samples.dtype)
    args = dict(d_samples=samples, d_histogram=hist, h_num_output_levels=levels,
                h_lower_level=lower, h_upper_level=upper, num_samples=samples.size)
    algorithm = make_histogram_even(**args)
    temp = cupy.empty(max(1, algorithm(temp_storage=None, **args)), dtype=cupy.uint8)

    def run():
        hist.fill(0)
        algorithm(temp_storage=temp, **args)
        return hist

    return run


def _peer(row: dict, name: str, time_with, call, exact, to_host, nbytes: int) -> None:
    """Time a peer; note where its counts differ from numpy's rule."""
    try:
        got = np.asarray(to_host(call())).astype(np.int64)
        seconds = time_with(call)
    except Exception as error:  # a peer that fails is reported, never estimated
        row["notes"][name] = skip_note(error)
        return
    row["TBps"][name] = nbytes / seconds / 1e12
    if got.shape != exact.shape or not np.array_equal(got, exact):
        differ = int(np.count_nonzero(got != exact)) if got.shape == exact.shape else "all"
        row["notes"][name] = f"counts differ from numpy's rule in {differ} bins"


def binning_row(cupy, torch, timer: Timer, n: int, dtype: str, num_bins: int, rule: str,
                distribution: str, span: tuple[float, float] = RANGES[0]) -> dict:
    """One configuration: histkit's kernel and call, then the peers."""
    from histkit import gpu

    rt = runtime()
    samples = _device_samples(cupy, distribution, n, dtype)
    host = cupy.asnumpy(samples)
    bins = num_bins if rule == "even" else np.linspace(*span, num_bins + 1)
    range_ = span if rule == "even" else None
    exact = oracles.bin_histogram(host, bins, range_)[0]
    nbytes = samples.nbytes
    row = {"rule": rule, "K": num_bins, "range": list(span), "dtype": dtype,
           "distribution": distribution, "N": n, "TBps": {}, "notes": {}, "geometry": {}}
    kernel_rule, _, _ = kernel_rule_for(host[:1], num_bins if rule == "even" else None,
                                        None if rule == "even" else bins, range_, True)
    hist = rt.empty(num_bins + TALLIES, np.uint64)
    first_bad = rt.empty(1, np.uint64)
    rt.memset(first_bad.ptr, 0xFF, 8)
    edges = rt.to_device(kernel_rule.edges)
    device_samples = keys_of(samples)
    kernel = registry.binning_kernel()

    def launch():
        return kernel.run(rt, device_samples, kernel_rule, hist, first_bad, edges)

    row["geometry"]["histkit kernel"] = str(launch())
    got = rt.copy_to_host(hist.ptr, np.empty(num_bins + TALLIES, np.uint64))[:num_bins]
    if np.array_equal(got.astype(np.int64), exact):
        row["TBps"]["histkit kernel"] = nbytes / timer.ours(launch) / 1e12
    else:
        row["notes"]["histkit kernel"] = "WRONG RESULT: not timed"
    _peer(row, "histkit gpu.bin_histogram", timer.cupy_call,
          lambda: gpu.bin_histogram(samples, bins, range_)[0], exact, cupy.asnumpy, nbytes)
    if rule == "even":
        try:
            cub = _cub_even(cupy, samples, num_bins, span)
        except Exception as error:
            row["notes"]["CUB HistogramEven"] = skip_note(error)
        else:
            _peer(row, "CUB HistogramEven", timer.cupy_call, cub, exact, cupy.asnumpy, nbytes)
    else:
        row["notes"]["CUB HistogramRange"] = "skipped: cuda.compute offers HistogramEven only"
    cupy_edges = num_bins if rule == "even" else cupy.asarray(bins)
    _peer(row, "cupy.histogram", timer.cupy_call,
          lambda: cupy.histogram(samples, cupy_edges, range_)[0], exact, cupy.asnumpy, nbytes)
    if torch is None:
        row["notes"]["torch.histc"] = "skipped: PyTorch is not installed"
    elif rule == "even":
        tsamples = torch.as_tensor(samples, device="cuda")
        _peer(row, "torch.histc", timer.torch_call,
              lambda: torch.histc(tsamples, bins=num_bins, min=span[0], max=span[1]), exact,
              lambda t: t.cpu().numpy(), nbytes)
    return row


def binning_rows(cupy, torch, timer: Timer, n: int, quick: bool = False):
    """Every configuration of the module's docstring, as rows (a generator:
    each is printed as it comes)."""
    configs = [("even", k) for k in EVEN_BINS] + [("edges", k) for k in EDGE_BINS]
    for dtype in DTYPES:
        for span in RANGES[:1] if quick else RANGES:
            for rule, num_bins in configs:
                for distribution in DISTRIBUTIONS[:2] if quick else DISTRIBUTIONS:
                    yield binning_row(cupy, torch, timer, n, dtype, num_bins, rule,
                                      distribution, span)
