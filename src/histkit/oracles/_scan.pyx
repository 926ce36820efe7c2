"""Exclusive scan: per-bin counts become per-bin starting offsets (7.3).

NumPy equivalent: ``np.concatenate([[0], np.cumsum(counts)[:-1]])``.
"""
import numpy as np

from libc.stdint cimport INT64_MAX, int64_t, uint64_t

from histkit.oracles._keys cimport key_t


def exclusive_scan_counts(const key_t[:] counts):
    """Return (int64 offsets, index of the first negative count or -1,
    index whose count carries an offset past int64 or -1).

    The last count never enters an offset, so only counts before it can
    overflow.
    """
    cdef Py_ssize_t n = counts.shape[0]
    cdef Py_ssize_t i, negative_at = -1, overflow_at = -1
    cdef int64_t running = 0
    cdef uint64_t c
    offsets = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = offsets
    with nogil:
        for i in range(n):
            if counts[i] < 0:
                negative_at = i
                break
            out[i] = running
            c = <uint64_t>counts[i]
            if i + 1 < n and c > <uint64_t>(INT64_MAX - running):
                overflow_at = i
                break
            running += <int64_t>c
    return offsets, negative_at, overflow_at
