"""Histogram and stable counting sort of Dask arrays: data past one machine's
memory, on many workers (``histkit[dask]``).

Each chunk is counted where it lives: ``oracles.histogram`` for NumPy chunks,
``gpu.histogram`` for CuPy chunks (one GPU per worker with dask-cuda). Partial
histograms are summed in a tree. The sort is the chapter's recipe,
distributed: per-chunk histograms, one exclusive scan over (bin, chunk), then
every chunk knows where each of its keys lands, and the output chunks are
assembled from the pieces through Dask's graph (an all-to-all, no transport
of our own).

    import dask.array as da
    from histkit import dask as hd
    keys = da.from_array(big_numpy_array, chunks=2**24)
    counts = hd.histogram(keys, 256).compute()
    sums = hd.histogram(keys, 256, weights=weights).compute()  # exact float64 sums
    sorted_keys, original_index = hd.counting_sort(keys, 256)

Bad keys raise the oracles' ``BadKeyError`` at compute time, with the GLOBAL
index of the first bad key (the lowest over all chunks, whichever chunk a
worker finished first).
"""

from __future__ import annotations

import numpy as np

from histkit import oracles
from histkit.oracles._inputs import BadKeyError, bin_count
from histkit.oracles._threads import at_most

# A task counts or sorts its chunk on one thread: Dask runs chunks in parallel
# (a worker's threads, many workers), and an oracle that also took every idle
# CPU per chunk would oversubscribe them.
THREADS_PER_TASK = 1

TREE_WIDTH = 8  # partial histograms summed per task of the reduction tree


def _require_dask_array(keys):
    try:
        import dask.array as da
    except ImportError:
        raise ImportError('histkit.dask needs Dask: python3 -m pip install "histkit[dask]"') \
            from None
    if not isinstance(keys, da.Array):
        raise TypeError(f"keys must be a dask.array.Array; got {type(keys).__name__} "
                        f"(use histkit.oracles or histkit.gpu for in-memory arrays)")
    if keys.ndim != 1:
        raise ValueError(f"keys must be one-dimensional; got shape {keys.shape}")
    if np.dtype(keys.dtype).kind not in "iu":
        raise TypeError(f"keys must have an integer dtype (int8 ... uint64); got {keys.dtype}")
    if any(np.isnan(c) for c in keys.chunks[0]):
        raise ValueError("keys must have known chunk sizes (call keys.compute_chunk_sizes())")
    return da


def _is_device_chunk(block) -> bool:
    return type(block).__module__.split(".")[0] == "cupy"


def _chunk_counts(block, num_bins: int, offset: int, method: str):
    """(int64 counts on the host, (global index, value) of the first bad key or None)."""
    try:
        if _is_device_chunk(block):
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


def _tree(parts: list, combine):
    """Parts combined TREE_WIDTH at a time, down to at most TREE_WIDTH of them."""
    import dask

    while len(parts) > TREE_WIDTH:
        parts = [dask.delayed(combine)(*parts[i:i + TREE_WIDTH])
                 for i in range(0, len(parts), TREE_WIDTH)]
    return parts


def _total(num_bins: int, *parts) -> np.ndarray:
    """The tree's root: the last parts summed, or the first bad key raised."""
    return _finish(_combine(*parts), num_bins)


def _offsets(keys) -> list[int]:
    return [int(o) for o in np.concatenate([[0], np.cumsum(keys.chunks[0])])]


def histogram(keys, num_bins: int, *, weights=None, method: str = "auto"):
    """Lazy histogram (shape (num_bins,)) of a 1-d Dask array of integer keys.

    Without `weights`, int64 counts. With `weights` (a Dask array of floats
    chunked as the keys), float64 sums equal bit for bit to
    ``oracles.histogram(keys, num_bins, weights)`` on the whole input: each
    bin's exact sum rounded once, however the input is chunked (see
    `_chunk_parts`).
    """
    da = _require_dask_array(keys)
    import dask

    num_bins = bin_count(num_bins)
    offsets = _offsets(keys)
    blocks = keys.to_delayed().ravel()
    if weights is not None:
        if method != "auto":
            raise ValueError(f"with weights, method must be 'auto'; got {method!r}")
        return _weighted_histogram(da, keys, weights, num_bins, offsets, blocks)
    parts = [dask.delayed(_chunk_counts, pure=True)(block, num_bins, offsets[c], method)
             for c, block in enumerate(blocks)]
    total = dask.delayed(_total)(num_bins, *_tree(parts, _combine))  # one task at the root
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
# input's exact sum does.

MAX_PARTS = 48  # |S| lies within 2^-1074 .. 2^1031: 40 parts of 53 bits hold any S
FLOAT_WEIGHTS = ("float16", "float32", "float64")


def _weighted_histogram(da, keys, weights, num_bins: int, offsets: list[int], blocks):
    import dask

    if not isinstance(weights, da.Array):
        weights = np.asarray(weights)
        if weights.shape != keys.shape:
            raise ValueError(f"weights must have the keys' shape {keys.shape}; got "
                             f"{weights.shape}")
        weights = da.from_array(weights, chunks=keys.chunks)
    if weights.shape != keys.shape:
        raise ValueError(f"weights must have the keys' shape {keys.shape}; got {weights.shape}")
    if np.dtype(weights.dtype).name not in FLOAT_WEIGHTS:
        raise TypeError(f"weights must be float16, float32 or float64; got {weights.dtype}")
    if weights.chunks != keys.chunks:
        weights = weights.rechunk(keys.chunks)
    pieces = [dask.delayed(_chunk_parts, pure=True)(block, weight_block, num_bins, offsets[c])
              for c, (block, weight_block) in enumerate(zip(
                  blocks, weights.to_delayed().ravel(), strict=True))]
    total = dask.delayed(_weighted_total)(num_bins, *_tree(pieces, _join_parts))
    return da.from_delayed(total, shape=(num_bins,), dtype=np.float64)


def _chunk_parts(block, weights, num_bins: int, offset: int):
    """(host float64 parts, shape (m, num_bins), whose exact column sums are
    the chunk's exact per-bin sums; (global index, value) of the first bad
    key or None)."""
    xp = _xp(block)
    try:
        parts = _exact_parts(xp, block, weights, num_bins)
    except BadKeyError as error:
        return None, (offset + error.index, error.value)
    return _to_host(parts), None


def _exact_parts(xp, keys, weights, num_bins: int):
    """Rows of float64 parts whose exact column sums are the exact per-bin
    sums of `weights` (NaN and infinities in the first row, as the exact sum
    gives them)."""
    exact = _exact_sums(xp)
    first = exact(keys, num_bins, weights)
    special = ~xp.isfinite(first)
    if bool(special.any()):
        finite = xp.isfinite(weights)
        own = exact(keys, num_bins, xp.where(finite, 0.0, 1.0)) if not bool(finite.all()) \
            else xp.zeros(num_bins)
        if bool((special & (own == 0)).any()):  # a sum of finite weights overflowed
            half = len(keys) // 2
            return xp.concatenate([_exact_parts(xp, keys[:half], weights[:half], num_bins),
                                   _exact_parts(xp, keys[half:], weights[half:], num_bins)])
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


def _exact_sums(xp):
    """The exact weighted histogram for the chunk's array module."""
    if xp is np:
        def on_host(keys, num_bins, weights):
            with at_most(THREADS_PER_TASK):
                return oracles.histogram(keys, num_bins, weights)
        return on_host
    from histkit import gpu

    return lambda keys, num_bins, weights: gpu.histogram(keys, num_bins, weights=weights)


def _join_parts(*pieces):
    bad = [p[1] for p in pieces if p[1] is not None]
    if bad:
        return None, min(bad)
    return np.concatenate([p[0] for p in pieces]), None


def _weighted_total(num_bins: int, *pieces) -> np.ndarray:
    """The tree's root: every part summed exactly and rounded once."""
    parts, bad = _join_parts(*pieces)
    if bad is not None:
        raise BadKeyError(bad[0], bad[1], num_bins)
    bins = np.tile(np.arange(num_bins, dtype=np.int64), len(parts))
    with at_most(THREADS_PER_TASK):
        return oracles.histogram(bins, num_bins, parts.ravel())


# --- the distributed counting sort --------------------------------------------------
#
# Every step runs where its chunk lives and works on NumPy or CuPy chunks alike
# (the array module of the chunk, `_xp`): only per-chunk bin counts (num_bins
# int64 each) travel to the one task that scans them; the sorted chunks go
# straight from their worker to the output chunks' workers, piece by piece.

def _xp(array):
    """The array module of a chunk: CuPy for CuPy chunks, else NumPy."""
    if _is_device_chunk(array):
        import cupy

        return cupy
    return np


def _to_host(array) -> np.ndarray:
    return array.get() if _is_device_chunk(array) else np.asarray(array)


def _local_sort(block, num_bins: int, offset: int):
    """A chunk's stable sort (keys, GLOBAL original indices), or its first bad
    key (global index, value): on the GPU for a CuPy chunk."""
    try:
        if _is_device_chunk(block):
            from histkit import gpu

            sorted_keys, order = gpu.counting_sort(block, num_bins)
        else:
            with at_most(THREADS_PER_TASK):
                sorted_keys, order = oracles.counting_sort(np.asarray(block), num_bins)
    except BadKeyError as error:
        return None, (offset + error.index, error.value)
    return (sorted_keys, order + offset), None


def _sort_counts(sort, num_bins: int):
    """A sorted chunk's keys per bin (host int64), or its bad key: all that the
    placement needs from it."""
    sorted_part, bad = sort
    if bad is not None:
        return None, bad
    sorted_keys = sorted_part[0]
    xp = _xp(sorted_keys)
    edges = xp.searchsorted(sorted_keys.astype(xp.int64), xp.arange(num_bins + 1),
                            side="left")
    return _to_host(edges[1:] - edges[:-1]).astype(np.int64), None


def _placement(counts: list, num_bins: int):
    """Each chunk's per-bin start in the output: offsets scanned over (bin, chunk)."""
    bad = [bad for _, bad in counts if bad is not None]
    if bad:
        index, value = min(bad)
        raise BadKeyError(index, value, num_bins)
    table = np.stack([c for c, _ in counts])  # (chunk, bin)
    flat = oracles.exclusive_scan(table.T.ravel())  # bin-major, then chunk: stable
    return flat.reshape(num_bins, len(counts)).T  # start[chunk, bin]


def _split(sort, placement: np.ndarray, chunk: int, bounds: list[int]):
    """One chunk's sorted keys cut into the pieces each output chunk receives:
    (output slot within that chunk, key, original index) per piece."""
    (sorted_keys, global_index), _ = sort
    xp = _xp(sorted_keys)
    bins = sorted_keys.astype(xp.int64)
    rank_in_bin = xp.arange(len(bins)) - xp.searchsorted(bins, bins, side="left")
    positions = xp.asarray(placement[chunk])[bins] + rank_in_bin  # increasing
    cuts = _to_host(xp.searchsorted(positions, xp.asarray(bounds))).tolist()
    return tuple((positions[a:b] - bounds[j], sorted_keys[a:b], global_index[a:b])
                 for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)))


def _assemble(size: int, dtype, pieces):
    """One output chunk from the piece every input chunk sends it."""
    xp = _xp(pieces[0][1])
    out_keys = xp.empty(size, dtype=dtype)
    out_index = xp.empty(size, dtype=np.int64)
    for where, keys, index in pieces:
        out_keys[where] = keys
        out_index[where] = index
    return out_keys, out_index


def counting_sort(keys, num_bins: int):
    """Lazy (sorted_keys, original_index) of a 1-d Dask array: stable, chunked
    like keys, of the keys' array type (NumPy or CuPy chunks).

    Equals ``oracles.counting_sort`` on the concatenated input.
    """
    da = _require_dask_array(keys)
    import dask

    num_bins = bin_count(num_bins)
    offsets = _offsets(keys)
    blocks = keys.to_delayed().ravel()
    sorts = [dask.delayed(_local_sort, pure=True)(block, num_bins, offsets[c])
             for c, block in enumerate(blocks)]
    if not sorts:
        return da.zeros(0, dtype=keys.dtype), da.zeros(0, dtype=np.int64)
    counts = [dask.delayed(_sort_counts, pure=True)(sort, num_bins) for sort in sorts]
    placement = dask.delayed(_placement)(counts, num_bins)
    chunks = len(sorts)
    # all-to-all: chunk c's piece j goes to output chunk j (Dask moves only it)
    pieces = [dask.delayed(_split, nout=chunks)(sorts[c], placement, c, offsets)
              for c in range(chunks)]
    key_meta = keys._meta
    index_meta = key_meta.astype(np.int64)
    key_parts, index_parts = [], []
    for j in range(chunks):
        size = offsets[j + 1] - offsets[j]
        both = dask.delayed(_assemble, nout=2)(size, keys.dtype, [p[j] for p in pieces])
        key_parts.append(da.from_delayed(both[0], shape=(size,), dtype=keys.dtype,
                                         meta=key_meta))
        index_parts.append(da.from_delayed(both[1], shape=(size,), dtype=np.int64,
                                           meta=index_meta))
    return da.concatenate(key_parts), da.concatenate(index_parts)
