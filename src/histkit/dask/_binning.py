"""histkit.dask.bin_histogram: real-valued samples of Dask arrays binned by
numpy's rule for the whole input."""

from __future__ import annotations

import numpy as np

from histkit import oracles
from histkit.dask._chunks import (
    THREADS_PER_TASK,
    dask_array_module,
    is_device_chunk,
    offsets_of,
    require_known_chunks,
    to_host,
    tree,
    weights_chunked_as,
    xp_of,
)
from histkit.dask._histogram import exact_parts, join_parts, sum_parts
from histkit.oracles._bin_rule import Flow, NumpyFailsError, as_sample_array, parse_bins
from histkit.oracles._binned import TALLIES, bin_samples
from histkit.oracles._inputs import boolean
from histkit.oracles._threads import at_most

# --- binning real-valued samples ------------------------------------------------------
#
# Every chunk is binned by the same rule (numpy's, for the whole input's
# range), so the counts and tallies add up. With range=None the range is the
# whole input's min and max, found from each chunk's first (the numpy
# scalars numpy's own range=None takes).

def bin_histogram(samples, bins, range=None, *, right_closed_last: bool = True,
                  flow: bool = False, weights=None):
    """Lazy ``(counts, edges)`` (and a lazy ``Flow`` with ``flow=True``) of a
    Dask array of real-valued samples, equal to ``oracles.bin_histogram`` of
    the whole input (``np.histogram``'s counts and edges, bit for bit).

    Each chunk is binned where it lives: ``oracles.bin_histogram`` for NumPy
    chunks, ``gpu.bin_histogram`` for CuPy chunks. `counts` and `edges` are
    Dask arrays (compute them together: ``dask.compute(counts, edges)``).
    Bad arguments raise as the oracle's do, before anything is computed; a
    sample numpy's own code fails on raises the oracle's error at compute
    time, naming its index in the whole input. With ``range=None``, a zero
    minimum or maximum takes the sign of the first chunk that holds one.

    With `weights` (a Dask or NumPy array of the samples' shape, float16,
    float32, float64 or integer), `counts` and the flow tallies are float64:
    each bin's exact sum of weights rounded once, as the oracle gives it,
    however the input is chunked. Each chunk hands over its exact sums as
    float64 parts (see ``histkit.dask.histogram``); CuPy chunks are binned
    on the host for this.

    Parameters
    ----------
    samples : dask.array.Array
        Real-valued or integer samples, any shape (binned flattened).
    bins : int or array_like
        The number of even bins over `range`, or monotonically increasing
        edges, as ``np.histogram`` takes them.
    range : (float, float), optional
        The even bins' lower and upper edge; None: the samples' minimum and
        maximum (an extra pass over the input).
    right_closed_last : bool, optional
        numpy's rule, the last bin closed (True), or CUB's, every bin
        half-open (False).
    flow : bool, optional
        Also return the underflow, overflow and NaN tallies.
    weights : dask.array.Array or numpy.ndarray, optional
        One weight a sample: exact float64 sums in place of counts.

    Returns
    -------
    counts : dask.array.Array
        int64 counts (float64 sums with `weights`).
    edges : dask.array.Array
        float64 edges, numpy's for the call.
    flow : Flow
        With ``flow=True``: a lazy ``Flow`` of the tallies.

    Raises
    ------
    TypeError
        samples is not a Dask array.
    ValueError
        As ``oracles.bin_histogram``: bins below 1, edges not increasing, a
        NaN or infinite range, weights of another shape.

    Examples
    --------
    >>> import dask
    >>> import dask.array as da
    >>> import numpy as np
    >>> from histkit import dask as hd
    >>> x = da.from_array(np.array([0.0, 0.25, 0.5, 1.0, 2.0]), chunks=2)
    >>> counts, edges = dask.compute(*hd.bin_histogram(x, 4, range=(0, 1)))
    >>> counts, edges
    (array([1, 1, 1, 1]), array([0.  , 0.25, 0.5 , 0.75, 1.  ]))
    """
    import dask

    da = _require_dask_samples(samples)
    right_closed_last = boolean(right_closed_last, "right_closed_last")
    flow = boolean(flow, "flow")
    if weights is not None:
        weights = weights_chunked_as(da, weights, samples, "samples")
    samples = samples.ravel()
    dtype = np.dtype(samples.dtype)
    num_bins, edges = parse_bins(bins)
    if edges is not None or range is not None or samples.size == 0:
        # The rule needs no data: every argument is checked now, as the oracle checks it.
        returned = oracles.bin_histogram(np.empty(0, dtype), bins, range,
                                         right_closed_last=right_closed_last)[1]
        span = dask.delayed(range)
        returned_edges = da.from_array(returned, chunks=-1)
    else:
        spans = [dask.delayed(_chunk_span, pure=True)(block)
                 for block in samples.to_delayed().ravel()]
        span = dask.delayed(_whole_span, pure=True)(dtype, num_bins, *spans)
        edge_dtype = oracles.bin_histogram(np.zeros(2, dtype), num_bins)[1].dtype
        returned_edges = da.from_delayed(
            dask.delayed(_edges_for, pure=True)(dtype, num_bins, span),
            shape=(num_bins + 1,), dtype=edge_dtype)
    offsets = offsets_of(samples)
    num = len(returned_edges) - 1 if edges is not None else num_bins
    blocks = samples.to_delayed().ravel()
    if weights is None:
        parts = [dask.delayed(_chunk_bins, pure=True)(block, bins, span, right_closed_last,
                                                      offsets[c])
                 for c, block in enumerate(blocks)]
        total = dask.delayed(_bins_total, pure=True)(*tree(parts, _add_bins))
    else:
        parts = [dask.delayed(_chunk_weighted_parts, pure=True)(
                     block, weight_block, bins, span, right_closed_last, offsets[c], num)
                 for c, (block, weight_block) in enumerate(zip(
                     blocks, weights.ravel().to_delayed().ravel(), strict=True))]
        total = dask.delayed(_weighted_bins_total, pure=True)(num, *tree(parts, join_parts))
    counts = da.from_delayed(dask.delayed(lambda t: t[0])(total), shape=(num,),
                             dtype=np.int64 if weights is None else np.float64)
    if flow:
        return counts, returned_edges, dask.delayed(lambda t: t[1])(total)
    return counts, returned_edges


def _require_dask_samples(samples):
    """dask.array, once samples are checked: a dtype the oracle bins, known chunks."""
    da = dask_array_module()
    if not isinstance(samples, da.Array):
        raise TypeError(f"samples must be a dask.array.Array; got {type(samples).__name__} "
                        f"(use histkit.oracles or histkit.gpu for in-memory arrays)")
    as_sample_array(np.empty(0, samples.dtype))  # the oracle's dtype check
    require_known_chunks(samples, "samples")
    return da


def _chunk_span(block):
    """(min, max) of a chunk as numpy scalars of its dtype, or None when empty."""
    if not block.size:
        return None
    xp = xp_of(block)
    low, high = xp.min(block), xp.max(block)
    if xp is not np:
        low, high = (block.dtype.type(v.item()) for v in (low, high))
    return low, high


def _whole_span(dtype: np.dtype, num_bins: int, *spans):
    """The whole input's (min, max), NaN propagating as numpy's min and max
    do; None when it holds no sample (numpy's range is then (0, 1))."""
    found = [s for s in spans if s is not None]
    if not found:
        return None
    low = np.min(np.array([s[0] for s in found], dtype))
    high = np.max(np.array([s[1] for s in found], dtype))
    # The oracle's own checks of an automatic range (NaN, infinities, too
    # many bins for the span), raised with its words.
    oracles.bin_histogram(np.array([low, high], dtype), num_bins)
    return low, high


def _edges_for(dtype: np.dtype, num_bins: int, span):
    return oracles.bin_histogram(np.empty(0, dtype), num_bins, span)[1]


def _chunk_bins(block, bins, span, right_closed_last: bool, offset: int):
    """(int64 counts, int64 [underflow, overflow, nan]), or the first sample
    numpy fails on as (global index, the oracle's error)."""
    try:
        if is_device_chunk(block):
            from histkit import gpu

            counts, _, tallies = gpu.bin_histogram(block, bins, span, flow=True,
                                                   right_closed_last=right_closed_last)
            counts = counts.get()
        else:
            with at_most(THREADS_PER_TASK):
                counts, _, tallies = oracles.bin_histogram(
                    block, bins, span, right_closed_last=right_closed_last, flow=True)
    except NumpyFailsError as error:
        return None, (offset + error.index, error)
    return (counts, np.array(tallies, dtype=np.int64)), None


def _chunk_weighted_parts(block, weights, bins, span, right_closed_last: bool, offset: int,
                          num_bins: int):
    """(float64 parts whose exact column sums are the chunk's exact sums of
    weights per counter: the bins, then the tallies), or the first sample
    numpy fails on as (global index, the oracle's error)."""
    block, weights = to_host(block), to_host(weights)
    try:
        with at_most(THREADS_PER_TASK):
            counters = bin_samples(as_sample_array(block), bins, span, right_closed_last,
                                   THREADS_PER_TASK, counters=True).counters
    except NumpyFailsError as error:
        return None, (offset + error.index, error)
    return exact_parts(np, counters, weights, num_bins + TALLIES), None


def _weighted_bins_total(num_bins: int, *pieces):
    parts, bad = join_parts(*pieces)
    if bad is not None:
        _raise_at_global_index(*bad)
    sums = sum_parts(parts, num_bins + TALLIES)
    return sums[:num_bins], Flow(*(float(v) for v in sums[num_bins:]))


def _add_bins(*parts):
    bad = [p[1] for p in parts if p[1] is not None]
    if bad:
        return None, min(bad, key=lambda b: b[0])
    counts = sum(p[0][0] for p in parts)
    tallies = sum(p[0][1] for p in parts)
    return (counts, tallies), None


def _bins_total(*parts):
    total, bad = _add_bins(*parts)
    if bad is not None:
        _raise_at_global_index(*bad)
    counts, tallies = total
    return counts, Flow(*(int(t) for t in tallies))


def _raise_at_global_index(index: int, error: NumpyFailsError):
    """The oracle's error for a chunk's sample, naming its index in the whole input."""
    local = f"index {error.index} "
    raise NumpyFailsError(str(error).replace(local, f"index {index} ", 1), index)
