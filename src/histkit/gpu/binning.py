"""gpu.bin_histogram: real-valued samples into bins on the GPU, bin-exactly as
``np.histogram`` (and ``oracles.bin_histogram``) bins them.

numpy's rule for a call (its edges, the samples it keeps, the precision of
each step of its estimate) is derived on the host by the oracle's own code
(histkit.oracles._bin_rule); bin_histogram.cu then places every sample by it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from histkit.gpu import registry
from histkit.gpu._arrays import check_same_kind, is_device_array, stream_handle
from histkit.gpu._calls import allocate, begin, host_gpu_weights, weights_on_device
from histkit.gpu.contract import NO_BAD_KEY
from histkit.gpu.device import runtime
from histkit.gpu.launch.binning import (
    TALLIES,
    KernelRule,
    edges_kernel_rule,
    even_kernel_rule,
    weighted_bin_histogram,
)
from histkit.oracles._bin_rule import (
    FLOAT_BITS,
    Flow,
    as_sample_array,
    checked_edges,
    even_rule,
    numpy_fails_error,
    parse_bins,
    search_edges,
)
from histkit.oracles._binned import even_bins_fit
from histkit.oracles._binning import sample_span
from histkit.oracles._inputs import as_array, boolean, flat_sample_weights
from histkit.oracles._threads import idle_cpus

# Rules of explicit edges up to this many bytes (8192 float64 edges) are
# cached by the edges' bytes (_edges_rule), and a cached rule's edges keep a
# device copy (_device_edges); larger ones are derived and copied each call.
CACHED_EDGES_MAX = 64 * 1024

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray


def _device_span(samples, dtype: np.dtype):
    """(min, max, NaN seen) of device samples, by their own framework (numpy's
    min and max propagate NaN, as CuPy's and PyTorch's do)."""
    low, high = samples.min(), samples.max()
    low, high = (v.item() for v in (low, high))
    nan = dtype.kind == "f" and (low != low or high != high)
    return low, high, nan


def _sample_dtype(dtype: np.dtype) -> np.dtype:
    if not (dtype.kind in "iu" or dtype in FLOAT_BITS):
        raise TypeError(f"samples must have a float16, float32, float64 or integer dtype; "
                        f"got {dtype}")
    return dtype


def _kernel_rule(samples, dtype: np.dtype, n: int, num_bins, edges, range,
                 right_closed_last: bool, span):
    """(KernelRule, the edges np.histogram returns, the even rule or None)."""
    if edges is not None:
        edges = checked_edges(edges)
        return _edges_rule(search_edges(dtype, edges), right_closed_last), edges, None
    if range is not None:
        key = _range_key(range)
        if key is not None:
            return _even_rule_for_range(dtype, num_bins, key, right_closed_last)
    # The rule reads the samples for their dtype, their count and, with no
    # range, the sign of a zero min or max; device samples lend a stand-in.
    stand_in = samples
    if not isinstance(samples, np.ndarray):
        low_high = span() if (range is None and n) else (0, 0, False)
        stand_in = np.array(low_high[:2] if n else [], dtype)

        def span():
            return low_high
    rule = even_rule(stand_in, num_bins, range, span)
    return even_kernel_rule(rule, dtype, right_closed_last), rule.edges, rule


def _edges_rule(searched: np.ndarray, right_closed_last: bool) -> KernelRule:
    """The kernel's rule for explicit edges (in the search's dtype). Deriving
    it (the walk's bound and margin over every edge) costs about 0.2 ms at
    4096 edges, more than the kernel over 2^26 samples, so edges up to
    CACHED_EDGES_MAX bytes are looked up by their bytes."""
    if searched.nbytes > CACHED_EDGES_MAX:
        return edges_kernel_rule(searched, right_closed_last)
    return _edges_rule_for(searched.dtype, searched.tobytes(), right_closed_last)


@functools.lru_cache(maxsize=64)
def _edges_rule_for(dtype: np.dtype, raw: bytes, right_closed_last: bool) -> KernelRule:
    rule = edges_kernel_rule(np.frombuffer(raw, dtype).copy(), right_closed_last)
    rule.edges.flags.writeable = False  # read-only: _device_edges keeps a copy of them
    return rule


def _range_key(range) -> tuple | None:
    """range as a cache key that tells 0.0 from -0.0, 1 from 1.0 and a Python
    float from a numpy one (numpy's promotion tells them apart); None for
    anything else (the rule then reports it)."""
    try:
        lo, hi = range
    except (TypeError, ValueError):
        return None
    key = []
    for value in (lo, hi):
        if type(value) not in (int, float) and not isinstance(value, np.integer | np.floating):
            return None
        key.append((type(value), value, np.asarray(value).tobytes()))
    return tuple(key)


@functools.lru_cache(maxsize=256)
def _even_rule_for_range(dtype: np.dtype, num_bins: int, key: tuple, right_closed_last: bool):
    """numpy's rule for even bins over an explicit range: it depends on the
    samples' dtype alone, and deriving it (the kept interval is found by
    bisection over the dtype's values) costs more than a kernel at a few
    million samples, so a repeated call looks it up."""
    range = (key[0][1], key[1][1])
    rule = even_rule(np.empty(0, dtype), num_bins, range, lambda: (0, 0, False))
    rule.edges.flags.writeable = False
    kernel_rule = even_kernel_rule(rule, dtype, right_closed_last)
    kernel_rule.edges.flags.writeable = False  # read-only: _device_edges keeps a copy of them
    return kernel_rule, rule.edges, rule


def kernel_rule_for(samples: np.ndarray, num_bins: int | None, edges, range,
                    right_closed_last: bool):
    """(KernelRule, the edges np.histogram returns, the even rule or None)
    for host samples (as_sample_array's) and bins as parse_bins splits them."""
    half = samples.dtype == np.float16
    view = samples.view(np.uint16) if half else samples
    return _kernel_rule(samples, samples.dtype, len(samples), num_bins, edges, range,
                        right_closed_last, lambda: sample_span(view, half, idle_cpus(len(view))))


def bin_histogram(samples: Any, bins: int | Any, range: tuple[float, float] | None = None, *,
                  right_closed_last: bool = True, flow: bool = False, weights: Any = None,
                  stream: Any = None) -> tuple[Any, NDArray] | tuple[Any, NDArray, Flow]:
    """Histogram of real-valued samples on the GPU, bin-exactly as ``np.histogram``.

    Equals `histkit.oracles.bin_histogram` (and so ``np.histogram``) bit for
    bit: the same edges, and each sample in the bin numpy's rule gives it,
    its estimate computed step by step in numpy's precisions and corrected
    against the edges as numpy corrects it.

    Parameters
    ----------
    samples : array
        Values of a float16, float32, float64 or integer dtype: a NumPy array
        (any shape, flattened; copied to the device) or a one-dimensional
        contiguous device array from CuPy, PyTorch or anything speaking DLPack
        or ``__cuda_array_interface__`` (read in place). NaN is never counted.
    bins : int or array_like
        The number of even bins over `range`, or a 1-d array of edges, not
        decreasing (then `range` is ignored).
    range : (lo, hi), optional
        The span of the even bins. Default: the samples' min and max (for
        device samples, found by their framework; a zero bound then takes the
        sign its framework's min or max gives).
    right_closed_last : bool, default True
        False gives CUB's convention: every bin half-open, so a sample on the
        top edge is not counted.
    flow : bool, default False
        Also return ``Flow(underflow, overflow, nan)``.
    weights : array, optional
        One weight per sample, the same kind of array as the samples: NumPy
        weights of their shape, float16, float32 or float64; device weights
        one contiguous float32 or float64 vector as long. Each bin then holds the exact sum of its
        samples' weights rounded once to float64, equal bit for bit to
        `histkit.oracles.bin_histogram` with the same weights; the flow
        tallies are the sums of theirs. It costs a pass more than counting:
        each sample's bin is written out (4 bytes a sample, on the device),
        then the weighted histogram sums into it.
    stream : stream, optional
        The stream to run on; default: the samples' framework's current
        stream, else histkit's own.

    Returns
    -------
    counts : array
        int64, one per bin, of the samples' kind (NumPy samples: NumPy);
        with `weights`, float64 sums.
    edges : numpy.ndarray
        The bin edges, as ``np.histogram`` returns them.
    flow : Flow
        Only with ``flow=True``.

    Raises
    ------
    TypeError, ValueError, OverflowError
        What `histkit.oracles.bin_histogram` raises, before any sample is
        binned; a ValueError naming the first sample numpy's own code fails
        on (its estimate overflows), after.
    GpuUnavailableError
        No usable GPU, driver or cuda-python.

    Notes
    -----
    On device samples the call returns with its work queued on the stream,
    as CuPy's calls do, unless numpy's rule may fail on some sample (even
    bins over a span whose estimate is not bounded within one bin, such as
    one whose ``x - lo`` overflows): then it waits for the kernels, to raise
    the error above.

    Examples
    --------
    >>> import numpy as np
    >>> from histkit import gpu
    >>> gpu.bin_histogram(np.array([0.5, 1.0, 2.0, 3.0]), 3, range=(0, 3))  # doctest: +SKIP
    (array([1, 1, 2]), array([0., 1., 2., 3.]))

    Bad arguments are refused before a GPU is looked for:

    >>> gpu.bin_histogram(np.array([0.5]), 3, range=(1, 0))
    Traceback (most recent call last):
    ...
    ValueError: range must have lo <= hi; got lo=1, hi=0
    """
    right_closed_last = boolean(right_closed_last, "right_closed_last")
    flow = boolean(flow, "flow")
    on_device = is_device_array(samples)
    if weights is not None:
        check_same_kind(samples, weights, on_device, "weights")
    if not on_device:  # checked in the oracle's order: samples, weights, then bins
        if samples is not None:  # a ragged list named as samples, before its shape is read
            samples = as_array(samples, "samples")
        shape = np.shape(samples)
        samples = as_sample_array(samples)
        if weights is not None:
            weights = host_gpu_weights(flat_sample_weights(weights, shape), len(samples),
                                       per="sample")
    num_bins, edges = parse_bins(bins)
    if edges is None:
        even_bins_fit(num_bins)
    handle = stream_handle(stream)
    if on_device:
        # Device samples: their layout and dtype are read (no work queued)
        # before the rule is derived.
        call = begin(runtime(), samples, handle, True, "samples", integer=False)
        dtype, n = _sample_dtype(call.keys.dtype), call.keys.n
        span = lambda: _device_span(samples, dtype)  # noqa: E731
        rule, returned_edges, even = _kernel_rule(samples, dtype, n, num_bins, edges, range,
                                                  right_closed_last, span)
    else:
        dtype = samples.dtype
        rule, returned_edges, even = kernel_rule_for(samples, num_bins, edges, range,
                                                     right_closed_last)
        call = begin(runtime(), np.ascontiguousarray(samples), handle, False, "samples")
    total = rule.num_bins + TALLIES
    slot = call.rt.bad_key_slot()
    if weights is None:
        hist = allocate(call, total, np.int64, "bins={} (int64 counts)", rule.num_bins)
        if call.keys.n:
            registry.binning_kernel().run(call.rt, call.keys, rule, hist, slot,
                                          _device_edges(call.rt, rule))
        else:
            call.rt.memset(hist.ptr, 0, total * 8)
    else:
        hist = _weighted_sums(call, rule, weights, on_device, slot)
    # Waiting for the kernels to read the slot back costs the call its
    # overlap with the next; a rule no sample can fail leaves the slot
    # untouched, and the call returns with its work queued, as CuPy's do.
    failed = call.rt.read_bad_key(slot) if rule.may_fail else NO_BAD_KEY
    if failed != NO_BAD_KEY:
        value = call.rt.copy_to_host(call.keys.ptr + failed * dtype.itemsize,
                                     np.empty(1, dtype))[0]
        raise numpy_fails_error(even, failed, value.item())
    # np.histogram's edges are the caller's to keep (the cached rule's are read-only).
    return _results(call, hist, rule, np.array(returned_edges), flow)


def _device_edges(rt, rule: KernelRule):
    """rule.edges on the device. A rule looked up by its range or its edges
    (_even_rule_for_range, _edges_rule_for: its edges read-only) keeps one
    copy with the runtime's launch plans, so a repeated call copies nothing:
    keyed by the edges' id, which no other array can take while the plan
    holds them."""
    edges = rule.edges
    if edges.flags.writeable or edges.nbytes > CACHED_EDGES_MAX:
        return rt.to_device(edges)
    return rt.plan(("bin_histogram edges", id(edges)), lambda: (edges, _copy_once(rt, edges)))[1]


def _copy_once(rt, edges: np.ndarray):
    """A device copy of edges that any stream may read: the copy is waited for."""
    device = rt.to_device(edges)
    rt.sync("copying the bin edges to the device")
    return device


def _weighted_sums(call, rule: KernelRule, weights, on_device: bool, slot):
    """The bins' and tallies' exact weight sums (float64, num_bins + 3;
    launch.binning.weighted_bin_histogram)."""
    device_weights, owner = weights_on_device(call, weights, on_device, per="sample")
    total = rule.num_bins + TALLIES
    sums = allocate(call, total, np.float64, "bins={} (float64 sums)", rule.num_bins)
    if not call.keys.n:
        call.rt.memset(sums.ptr, 0, total * 8)
        return sums
    weighted_bin_histogram(call.rt, call.keys, rule, device_weights, sums, slot,
                           _device_edges(call.rt, rule))
    del owner  # freed stream-ordered: after the kernels that read them
    return sums


def _results(call, hist, rule: KernelRule, edges: np.ndarray, flow: bool):
    """(counts, edges[, flow]): counts (or weight sums) of the samples' kind."""
    dtype = hist.dtype
    if call.framework == "numpy":
        every = call.rt.copy_to_host(hist.ptr, np.empty(rule.num_bins + TALLIES, dtype))
        counts, tallies = every[:rule.num_bins], every[rule.num_bins:]
    else:
        counts = hist.handed[:rule.num_bins]
        tallies = (call.rt.copy_to_host(hist.ptr + rule.num_bins * 8, np.empty(TALLIES, dtype))
                   if flow else None)
    if flow:
        return counts, edges, Flow(*(t.item() for t in tallies))
    return counts, edges
