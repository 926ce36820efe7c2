"""Exact histogram: the count every atomicAdd kernel must reproduce (chapter 7.1).

NumPy equivalent: ``np.bincount(keys, minlength=num_bins)``.
"""
import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint32_t

from histkit.oracles._count cimport (chunk_counters, chunk_start, chunks_for, count_chunk,
                                     count_t, first_bad, padded_row, threads_for)
from histkit.oracles._keys cimport key_t
from histkit.oracles._fold import fold_rows


def histogram_counts(const key_t[:] keys, Py_ssize_t num_bins, Py_ssize_t max_threads):
    """Count keys into num_bins bins; return (int64 counts, first bad index or -1).

    The keys are split into contiguous chunks, several per thread, handed out
    dynamically; each is counted into its own sub-histograms, summed at the
    end. Counts are only meaningful when the returned index is -1.
    """
    cdef Py_ssize_t n = keys.shape[0]
    cdef Py_ssize_t chunks = chunks_for(n, num_bins, max_threads)
    cdef int64_t[:, ::1] wide
    cdef uint32_t[:, ::1] narrow
    if num_bins <= NARROW_MAX_BINS and -(-n // chunks) < 2**32:
        rows = np.empty((chunks, padded_row(chunk_counters(num_bins))), dtype=np.uint32)
        narrow = rows
        bad = _count_rows(keys, narrow, num_bins, max_threads)
    else:
        rows = np.empty((chunks, padded_row(chunk_counters(num_bins))), dtype=np.int64)
        wide = rows
        bad = _count_rows(keys, wide, num_bins, max_threads)
    return fold_rows(rows, num_bins), bad


# 32-bit chunk counters up to this many bins: half the bytes under random
# increments (and, with lanes, faster stores); past it the counters leave the
# cache either way, and the int64 total beside them would cost memory.
NARROW_MAX_BINS = 1 << 22


cdef Py_ssize_t _count_rows(const key_t[:] keys, count_t[:, ::1] rows, Py_ssize_t num_bins,
                            Py_ssize_t max_threads):
    """Chunk c of the keys into rows[c] (chunks = rows); the first bad index or -1."""
    cdef Py_ssize_t n = keys.shape[0]
    cdef Py_ssize_t chunks = rows.shape[0]
    cdef Py_ssize_t c
    cdef const key_t* first = &keys[0] if n else NULL
    cdef Py_ssize_t step = keys.strides[0]
    bad = np.full(chunks, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] bad_v = bad
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads_for(chunks, max_threads)):
        bad_v[c] = count_chunk(first, step, chunk_start(n, chunks, c),
                               chunk_start(n, chunks, c + 1), &rows[c, 0], num_bins)
    return first_bad(bad_v)
