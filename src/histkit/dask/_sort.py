"""histkit.dask.counting_sort: the chapter's stable counting sort, distributed."""

from __future__ import annotations

import numpy as np

from histkit import oracles
from histkit.dask._chunks import (
    THREADS_PER_TASK,
    is_device_chunk,
    offsets_of,
    require_dask_array,
    to_host,
    xp_of,
)
from histkit.oracles._inputs import BadKeyError, bin_count
from histkit.oracles._threads import at_most

# --- the distributed counting sort --------------------------------------------------
#
# Every step runs where its chunk lives and works on NumPy or CuPy chunks alike
# (the array module of the chunk, `_xp`): only per-chunk bin counts (num_bins
# int64 each) travel to the one task that scans them; the sorted chunks go
# straight from their worker to the output chunks' workers, piece by piece.

def _local_sort(block, num_bins: int, offset: int):
    """A chunk's stable sort (keys, GLOBAL original indices), or its first bad
    key (global index, value): on the GPU for a CuPy chunk."""
    try:
        if is_device_chunk(block):
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
    xp = xp_of(sorted_keys)
    edges = xp.searchsorted(sorted_keys.astype(xp.int64), xp.arange(num_bins + 1),
                            side="left")
    return to_host(edges[1:] - edges[:-1]).astype(np.int64), None


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
    xp = xp_of(sorted_keys)
    bins = sorted_keys.astype(xp.int64)
    rank_in_bin = xp.arange(len(bins)) - xp.searchsorted(bins, bins, side="left")
    positions = xp.asarray(placement[chunk])[bins] + rank_in_bin  # increasing
    cuts = to_host(xp.searchsorted(positions, xp.asarray(bounds))).tolist()
    return tuple((positions[a:b] - bounds[j], sorted_keys[a:b], global_index[a:b])
                 for j, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)))


def _assemble(size: int, dtype, pieces):
    """One output chunk from the piece every input chunk sends it."""
    xp = xp_of(pieces[0][1])
    out_keys = xp.empty(size, dtype=dtype)
    out_index = xp.empty(size, dtype=np.int64)
    for where, keys, index in pieces:
        out_keys[where] = keys
        out_index[where] = index
    return out_keys, out_index


def counting_sort(keys, num_bins: int):
    """Lazy (sorted_keys, original_index) of a 1-d Dask array: stable, chunked
    like keys, of the keys' array type (NumPy or CuPy chunks).

    The chapter's recipe, distributed: each chunk's histogram, one exclusive
    scan over (bin, chunk), then each chunk's keys sent to the output chunks
    that hold their places.

    Parameters
    ----------
    keys : dask.array.Array
        1-d integer keys in ``[0, num_bins)``.
    num_bins : int
        The number of bins, at least 1.

    Returns
    -------
    sorted_keys : dask.array.Array
        The keys in order, equal keys in input order; chunked like keys.
    original_index : dask.array.Array
        int64: each sorted key's index in the whole input.

    Raises
    ------
    TypeError
        keys is not a Dask array.
    ValueError
        num_bins below 1; at compute time, the oracles' ``BadKeyError``
        naming the first bad key's index in the whole input.

    Examples
    --------
    >>> import dask
    >>> import dask.array as da
    >>> import numpy as np
    >>> from histkit import dask as hd
    >>> keys = da.from_array(np.array([3, 1, 3, 0, 1, 3]), chunks=4)
    >>> sorted_keys, original_index = dask.compute(*hd.counting_sort(keys, 4))
    >>> sorted_keys, original_index
    (array([0, 1, 1, 3, 3, 3]), array([3, 1, 4, 0, 2, 5]))
    """
    da = require_dask_array(keys)
    import dask

    num_bins = bin_count(num_bins)
    offsets = offsets_of(keys)
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
