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


def histogram(keys, num_bins: int, *, method: str = "auto"):
    """Lazy int64 histogram (shape (num_bins,)) of a 1-d Dask array of integer keys."""
    da = _require_dask_array(keys)
    import dask

    num_bins = bin_count(num_bins)
    offsets = _offsets(keys)
    blocks = keys.to_delayed().ravel()
    parts = [dask.delayed(_chunk_counts, pure=True)(block, num_bins, offsets[c], method)
             for c, block in enumerate(blocks)]
    total = dask.delayed(_total)(num_bins, *_tree(parts, _combine))  # one task at the root
    return da.from_delayed(total, shape=(num_bins,), dtype=np.int64)


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
