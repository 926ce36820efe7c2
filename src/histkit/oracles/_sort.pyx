"""Stable counting sort: histogram, exclusive scan, cursor scatter (7.3).

NumPy equivalent: ``order = np.argsort(keys, kind="stable")``,
``keys[order], order``.

Parallel and still stable: worker w counts its contiguous chunk, offsets are
scanned bin-major then worker-minor (every key of bin b in chunk w lands
before those of chunk w + 1), and each worker scatters its chunk in input
order. Sorted keys need no scatter at all: bin b's output run is b repeated
count[b] times.
"""
import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t

from histkit.oracles._count cimport (chunk_start, count_chunk, first_bad, lanes_for,
                                     key_at, padded_row, workers_for)
from histkit.oracles._keys cimport key_t


cdef inline void scatter_indices(const key_t* keys, Py_ssize_t step, Py_ssize_t start,
                                 Py_ssize_t stop, int64_t* cursor,
                                 int64_t* original_index) noexcept nogil:
    # The cursor of the current run of equal keys stays in a register, so one
    # hot bin does not serialise on a load and store of cursor[b] per key.
    cdef Py_ssize_t i
    cdef uint64_t b, run_bin
    cdef int64_t position
    cdef const char* at = <const char*>keys + start * step
    if start >= stop:
        return
    run_bin = key_at(keys, at)
    position = cursor[run_bin]
    for i in range(start, stop):
        b = key_at(keys, at)
        at += step
        if b != run_bin:
            cursor[run_bin] = position
            run_bin = b
            position = cursor[b]
        original_index[position] = i
        position += 1
    cursor[run_bin] = position


cdef inline void fill_runs(key_t* sorted_keys, const int64_t* bin_end, Py_ssize_t num_bins,
                           Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    # Write sorted_keys[lo:hi]: position p holds the bin whose run covers p.
    cdef Py_ssize_t b = 0, top = num_bins, mid, p, stop
    while b < top:  # binary search: first bin whose run ends after lo
        mid = (b + top) // 2
        if bin_end[mid] <= lo:
            b = mid + 1
        else:
            top = mid
    p = lo
    while p < hi:
        stop = min(hi, bin_end[b])
        while p < stop:
            sorted_keys[p] = <key_t>b
            p += 1
        b += 1


def counting_sort_arrays(const key_t[:] keys, Py_ssize_t num_bins,
                         key_t[::1] sorted_keys, int64_t[::1] original_index):
    """Fill sorted_keys and original_index; return the first bad index or -1."""
    cdef Py_ssize_t n = keys.shape[0]
    if n == 0:
        return -1
    cdef Py_ssize_t workers = workers_for(n, num_bins)
    cdef Py_ssize_t w, b
    cdef int64_t running = 0, count
    cdef const key_t* first = &keys[0]
    cdef Py_ssize_t step = keys.strides[0]
    scratch = np.empty((workers, padded_row(lanes_for(num_bins) * num_bins)), dtype=np.int64)
    bad = np.full(workers, -1, dtype=np.intp)
    bin_end = np.empty(num_bins, dtype=np.int64)
    cdef int64_t[:, ::1] cursor = scratch
    cdef Py_ssize_t[::1] bad_v = bad
    cdef int64_t[::1] bin_end_v = bin_end

    for w in prange(workers, nogil=True, schedule="static", num_threads=workers):
        bad_v[w] = count_chunk(first, step, chunk_start(n, workers, w),
                               chunk_start(n, workers, w + 1), &cursor[w, 0], num_bins)
    if first_bad(bad_v) >= 0:
        return first_bad(bad_v)

    with nogil:
        for b in range(num_bins):
            for w in range(workers):
                count = cursor[w, b]
                cursor[w, b] = running
                running += count
            bin_end_v[b] = running

    for w in prange(workers, nogil=True, schedule="static", num_threads=workers):
        scatter_indices(first, step, chunk_start(n, workers, w),
                        chunk_start(n, workers, w + 1), &cursor[w, 0], &original_index[0])
        fill_runs(&sorted_keys[0], &bin_end_v[0], num_bins, chunk_start(n, workers, w),
                  chunk_start(n, workers, w + 1))
    return -1
