"""Stable counting sort: histogram, exclusive scan, cursor scatter (7.3).

NumPy equivalent: ``order = np.argsort(keys, kind="stable")``,
``keys[order], order``.

Parallel and still stable: each contiguous chunk (several per thread, handed
out dynamically) is counted on its own, offsets are scanned bin-major then
chunk-minor (every key of bin b in chunk c lands before those of chunk c + 1),
and each chunk is scattered in input order, whichever thread takes it. Sorted
keys need no scatter at all: bin b's output run is b repeated count[b] times.
Input that is already sorted (one hot bin, presorted data) is copied with
indices 0, 1, ..., N-1 in the pass that checks its order (each chunk stops at
its first descent), with no count and no scatter.
"""
import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t

from histkit.oracles._count cimport (chunk_counters, chunk_start, chunks_for, count_chunk,
                                     first_bad, key_at, padded_row, threads_for)
from histkit.oracles._keys cimport key_t


cdef extern from *:
    """
    /* Streaming stores for the output indices: written once, never read back
       here, so they need not be fetched into the cache first (x86-64 SSE2;
       a plain store elsewhere). */
    #if defined(__x86_64__) || defined(_M_X64)
    #include <emmintrin.h>
    static inline void hk_stream_i64(long long* at, long long value) {
        _mm_stream_si64(at, value);
    }
    static inline void hk_stream_i32(int* at, int value) { _mm_stream_si32(at, value); }
    static inline void hk_stream_fence(void) { _mm_sfence(); }
    #else
    static inline void hk_stream_i64(long long* at, long long value) { *at = value; }
    static inline void hk_stream_i32(int* at, int value) { *at = value; }
    static inline void hk_stream_fence(void) {}
    #endif
    """
    void hk_stream_i64(long long* at, long long value) noexcept nogil
    void hk_stream_i32(int* at, int value) noexcept nogil
    void hk_stream_fence() noexcept nogil


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


cdef inline bint copy_if_in_order(const key_t* keys, Py_ssize_t step, Py_ssize_t start,
                                  Py_ssize_t stop, key_t* sorted_keys,
                                  int64_t* original_index) noexcept nogil:
    # Copies keys[start:stop] and writes their indices while they do not
    # descend (from the key before start); stops at the first descent, so
    # unsorted input pays a few keys per chunk.
    cdef Py_ssize_t i
    cdef const char* at = <const char*>keys + start * step
    cdef key_t previous = (<const key_t*>(at - step))[0] if start else (<const key_t*>at)[0]
    cdef key_t current
    for i in range(start, stop):
        current = (<const key_t*>at)[0]
        if current < previous:
            hk_stream_fence()
            return False
        if sizeof(key_t) == 8:
            hk_stream_i64(<long long*>&sorted_keys[i], <long long>current)
        elif sizeof(key_t) == 4:
            hk_stream_i32(<int*>&sorted_keys[i], <int>current)
        else:
            sorted_keys[i] = current
        hk_stream_i64(<long long*>&original_index[i], i)
        previous = current
        at += step
    hk_stream_fence()
    return True


def counting_sort_arrays(const key_t[:] keys, Py_ssize_t num_bins,
                         key_t[::1] sorted_keys, int64_t[::1] original_index,
                         Py_ssize_t max_threads):
    """Fill sorted_keys and original_index; return the first bad index or -1."""
    cdef Py_ssize_t n = keys.shape[0]
    if n == 0:
        return -1
    cdef Py_ssize_t chunks = chunks_for(n, num_bins, max_threads)
    cdef Py_ssize_t threads = threads_for(chunks, max_threads)
    cdef Py_ssize_t c, b
    cdef int64_t running = 0, count
    cdef const key_t* first = &keys[0]
    cdef Py_ssize_t step = keys.strides[0]
    # Already sorted (one hot bin, presorted data): the output is a copy and
    # 0..N-1, made in the same pass that checks the order. Sorted with the
    # first key >= 0 and the last < num_bins means every key is valid.
    in_order = np.zeros(chunks, dtype=np.uint8)
    cdef unsigned char[::1] in_order_v = in_order
    if <uint64_t>keys[0] < <uint64_t>num_bins and <uint64_t>keys[n - 1] < <uint64_t>num_bins:
        for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1,
                        num_threads=threads):
            in_order_v[c] = copy_if_in_order(first, step, chunk_start(n, chunks, c),
                                             chunk_start(n, chunks, c + 1), &sorted_keys[0],
                                             &original_index[0])
        if in_order.all():
            return -1

    scratch = np.empty((chunks, padded_row(chunk_counters(num_bins))), dtype=np.int64)
    bad = np.full(chunks, -1, dtype=np.intp)
    bin_end = np.empty(num_bins, dtype=np.int64)
    cdef int64_t[:, ::1] cursor = scratch
    cdef Py_ssize_t[::1] bad_v = bad
    cdef int64_t[::1] bin_end_v = bin_end

    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1, num_threads=threads):
        bad_v[c] = count_chunk(first, step, chunk_start(n, chunks, c),
                               chunk_start(n, chunks, c + 1), &cursor[c, 0], num_bins)
    if first_bad(bad_v) >= 0:
        return first_bad(bad_v)

    with nogil:
        for b in range(num_bins):
            for c in range(chunks):
                count = cursor[c, b]
                cursor[c, b] = running
                running += count
            bin_end_v[b] = running

    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1, num_threads=threads):
        scatter_indices(first, step, chunk_start(n, chunks, c),
                        chunk_start(n, chunks, c + 1), &cursor[c, 0], &original_index[0])
        fill_runs(&sorted_keys[0], &bin_end_v[0], num_bins, chunk_start(n, chunks, c),
                  chunk_start(n, chunks, c + 1))
    return -1
