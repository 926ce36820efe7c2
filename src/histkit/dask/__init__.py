"""Histograms (of keys, exact weighted, of real-valued samples) and the stable
counting sort of Dask arrays: data past one machine's memory, on many workers
(``histkit[dask]``).

Each chunk is counted where it lives: ``oracles.histogram`` for NumPy chunks,
``gpu.histogram`` for CuPy chunks (one GPU per worker with dask-cuda). Partial
histograms are summed in a tree. The sort is the chapter's recipe,
distributed: per-chunk histograms, one exclusive scan over (bin, chunk), then
every chunk knows where each of its keys lands, and the output chunks are
assembled from the pieces through Dask's graph (an all-to-all, no transport
of our own).

    import dask.array as da
    from histkit import dask as hd
    keys = da.from_array(big_numpy_array, chunks=2**24)  # integer keys in [0, 256)
    weights = da.random.standard_normal(keys.shape, chunks=keys.chunks)
    counts = hd.histogram(keys, 256).compute()
    sums = hd.histogram(keys, 256, weights=weights).compute()  # exact float64 sums
    sorted_keys, original_index = hd.counting_sort(keys, 256)

Bad keys raise the oracles' ``BadKeyError`` at compute time, with the GLOBAL
index of the first bad key (the lowest over all chunks, whichever chunk a
worker finished first).
"""

from histkit.dask._binning import bin_histogram
from histkit.dask._histogram import histogram
from histkit.dask._sort import counting_sort

__all__ = ["bin_histogram", "counting_sort", "histogram"]
