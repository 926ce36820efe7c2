"""histkit.dask.histogram: counts, and exact weighted sums, of Dask arrays of
integer keys, each chunk counted where it lives and the parts summed in a tree."""

from __future__ import annotations

import numpy as np

from histkit import oracles
from histkit.dask._chunks import (
    THREADS_PER_TASK,
    is_device_chunk,
    offsets_of,
    require_dask_array,
    to_host,
    tree,
    weights_chunked_as,
    xp_of,
)
from histkit.oracles._inputs import BadKeyError, bin_count
from histkit.oracles._threads import at_most


def _chunk_counts(block, num_bins: int, offset: int, method: str):
    """(int64 counts on the host, (global index, value) of the first bad key or None)."""
    try:
        if is_device_chunk(block):
            from histkit import gpu

            counts = gpu.histogram(block, num_bins, method=method).get()
        else:
            with at_most(THREADS_PER_TASK):
                counts = oracles.histogram(block, num_bins)
    except BadKeyError as error:
        return None, (offset + error.index, error.value)
    return counts, None


def _combine(*parts):
    bad = [p[1] for p in parts if p[1] is not None]
    if bad:
        return None, min(bad)
    total = parts[0][0].copy()
    for counts, _ in parts[1:]:
        total += counts
    return total, None


def _finish(part, num_bins: int) -> np.ndarray:
    counts, bad = part
    if bad is not None:
        raise BadKeyError(bad[0], bad[1], num_bins)
    return counts


def _total(num_bins: int, *parts) -> np.ndarray:
    """The tree's root: the last parts summed, or the first bad key raised."""
    return _finish(_combine(*parts), num_bins)


def histogram(keys, num_bins: int, *, weights=None, method: str = "auto"):
    """Lazy histogram (shape (num_bins,)) of a 1-d Dask array of integer keys.

    Each chunk is counted where it lives (``oracles.histogram`` for NumPy
    chunks, ``gpu.histogram`` for CuPy chunks) and the partial histograms
    are summed in a tree.

    Parameters
    ----------
    keys : dask.array.Array
        1-d integer keys in ``[0, num_bins)``, NumPy or CuPy chunks.
    num_bins : int
        The number of bins, at least 1.
    weights : dask.array.Array or numpy.ndarray, optional
        One weight a key (float16, float32, float64 or integer), rechunked to
        the keys' chunks. Each bin is then the exact sum of its weights
        rounded once to float64, however the input is chunked: the value of
        ``oracles.histogram(keys, num_bins, weights)`` on the whole input.
    method : str, optional
        The oracle's or the GPU's method for each chunk (``"auto"``).

    Returns
    -------
    dask.array.Array
        int64 counts, or float64 sums with `weights`, of shape (num_bins,).

    Raises
    ------
    TypeError
        keys is not a Dask array.
    ValueError
        num_bins below 1, or weights of another shape; at compute time, the
        oracles' ``BadKeyError`` naming the first bad key's index in the
        whole input.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from histkit import dask as hd
    >>> keys = da.from_array(np.array([3, 1, 3, 0, 1, 3]), chunks=4)
    >>> hd.histogram(keys, 4).compute()
    array([1, 2, 0, 3])
    >>> weights = da.from_array(np.array([1e16, 0.5, 1.0, 2.0, 0.25, -1e16]), chunks=4)
    >>> hd.histogram(keys, 4, weights=weights).compute()  # bin 3: 1e16 + 1 - 1e16, exactly
    array([2.  , 0.75, 0.  , 1.  ])
    """
    da = require_dask_array(keys)
    import dask

    num_bins = bin_count(num_bins)
    offsets = offsets_of(keys)
    blocks = keys.to_delayed().ravel()
    if weights is not None:
        if method != "auto":
            raise ValueError(f"with weights, method must be 'auto'; got {method!r}")
        return _weighted_histogram(da, keys, weights, num_bins, offsets, blocks)
    parts = [dask.delayed(_chunk_counts, pure=True)(block, num_bins, offsets[c], method)
             for c, block in enumerate(blocks)]
    total = dask.delayed(_total)(num_bins, *tree(parts, _combine))  # one task at the root
    return da.from_delayed(total, shape=(num_bins,), dtype=np.int64)


# --- exact weighted sums over chunks ---------------------------------------------------
#
# A chunk's exact per-bin sum S is not a float64, and rounding it per chunk
# would round twice. So each chunk hands over S as a few rows of float64 parts
# whose exact sum is S: s1 = round(S) by the exact oracle (the GPU's exact
# histogram for CuPy chunks), then s2 = round(S - s1), found by the same sum
# over the chunk with -s1 added to each bin, and so on until every bin's
# remainder is zero (each part holds 53 more bits of S: normal float32
# weights take two or three passes). The root sums every chunk's parts once
# more with the oracle, which rounds only the total. A chunk whose S
# overflows float64 in some bin (finite weights past 10^308) is split in two
# until no half overflows; the total then overflows, or not, as the whole
# input's exact sum does. An integer weight w enters as two float64 weights
# with the same exact sum: w with its low 11 bits cleared, and those bits.

MAX_PARTS = 48  # |S| lies within 2^-1074 .. 2^1031: 40 parts of 53 bits hold any S
LOW_BITS = 11  # 64-bit integers less their low 11 bits have 53 significant bits


def _weighted_histogram(da, keys, weights, num_bins: int, offsets: list[int], blocks):
    import dask

    weights = weights_chunked_as(da, weights, keys, "keys")
    pieces = [dask.delayed(_chunk_parts, pure=True)(block, weight_block, num_bins, offsets[c])
              for c, (block, weight_block) in enumerate(zip(
                  blocks, weights.to_delayed().ravel(), strict=True))]
    total = dask.delayed(_weighted_total)(num_bins, *tree(pieces, join_parts))
    return da.from_delayed(total, shape=(num_bins,), dtype=np.float64)


def _chunk_parts(block, weights, num_bins: int, offset: int):
    """(host float64 parts, shape (m, num_bins), whose exact column sums are
    the chunk's exact per-bin sums; (global index, value) of the first bad
    key or None)."""
    xp = xp_of(block)
    try:
        parts = exact_parts(xp, block, weights, num_bins)
    except BadKeyError as error:
        return None, (offset + error.index, error.value)
    return to_host(parts), None


def exact_parts(xp, keys, weights, num_bins: int):
    """Rows of float64 parts whose exact column sums are the exact per-bin
    sums of `weights` (NaN and infinities in the first row, as the exact sum
    gives them)."""
    if weights.dtype.kind in "iu":
        keys, weights = _as_float_weights(xp, keys, weights)
    exact = _exact_sums(xp)
    first = exact(keys, num_bins, weights)
    special = ~xp.isfinite(first)
    if bool(special.any()):
        finite = xp.isfinite(weights)
        own = exact(keys, num_bins, xp.where(finite, 0.0, 1.0)) if not bool(finite.all()) \
            else xp.zeros(num_bins)
        if bool((special & (own == 0)).any()):  # a sum of finite weights overflowed
            half = len(keys) // 2
            return xp.concatenate([exact_parts(xp, keys[:half], weights[:half], num_bins),
                                   exact_parts(xp, keys[half:], weights[half:], num_bins)])
        weights = xp.where(finite, weights, 0)  # the special bins are settled by `first`
    parts = [first]
    bins = xp.arange(num_bins, dtype=xp.int64)
    wide_keys = keys.astype(xp.int64)
    wide_weights = weights.astype(xp.float64)
    remainder = xp.where(special, 0.0, first)
    while bool((remainder != 0).any()):
        if len(parts) == MAX_PARTS:
            raise AssertionError("an exact sum did not end within MAX_PARTS parts")
        taken = xp.concatenate([xp.where(special, 0.0, -p) for p in parts])
        remainder = xp.where(special, 0.0, exact(
            xp.concatenate([wide_keys, xp.tile(bins, len(parts))]), num_bins,
            xp.concatenate([wide_weights, taken])))
        parts.append(remainder)
    return xp.stack(parts[:-1] if len(parts) > 1 else parts)


def _as_float_weights(xp, keys, weights):
    """Integer weights as float64 weights of the same exact sum per key: each
    key twice, its weight's high bits (exact in float64) and its low bits."""
    wide = weights.astype(xp.int64 if weights.dtype.kind == "i" else xp.uint64)
    high = (wide >> LOW_BITS).astype(xp.float64) * float(1 << LOW_BITS)
    low = (wide & ((1 << LOW_BITS) - 1)).astype(xp.float64)
    return xp.concatenate([keys, keys]), xp.concatenate([high, low])


def _exact_sums(xp):
    """The exact weighted histogram for the chunk's array module."""
    if xp is np:
        def on_host(keys, num_bins, weights):
            with at_most(THREADS_PER_TASK):
                return oracles.histogram(keys, num_bins, weights)
        return on_host
    from histkit import gpu

    return lambda keys, num_bins, weights: gpu.histogram(keys, num_bins, weights=weights)


def join_parts(*pieces):
    """Chunks' (parts, bad) joined: all their parts, or the first bad input
    (the lowest global index) of any."""
    bad = [p[1] for p in pieces if p[1] is not None]
    if bad:
        return None, min(bad, key=lambda b: b[0])
    return np.concatenate([p[0] for p in pieces]), None


def sum_parts(parts: np.ndarray, num_bins: int) -> np.ndarray:
    """Every row of parts summed exactly per bin and rounded once."""
    bins = np.tile(np.arange(num_bins, dtype=np.int64), len(parts))
    with at_most(THREADS_PER_TASK):
        return oracles.histogram(bins, num_bins, parts.ravel())


def _weighted_total(num_bins: int, *pieces) -> np.ndarray:
    """The tree's root: every part summed exactly and rounded once."""
    parts, bad = join_parts(*pieces)
    if bad is not None:
        raise BadKeyError(bad[0], bad[1], num_bins)
    return sum_parts(parts, num_bins)
