"""The chapter's lockstep-wave model of a non-atomic ``hist[b]++`` (7.1).

Every wave of ``warp_size`` consecutive keys loads each touched bin once,
adds one and stores it back, so a wave adds exactly one to every DISTINCT bin
it touches, however many lanes shared that bin. Waves therefore contribute
independently and the model is additive: it is computed in O(N) total, in
parallel over waves, with no per-wave map.

Plain-Python equivalent: ``for w in waves: for b in set(w): hist[b] += 1``.
"""
import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t

from histkit.oracles._count cimport (chunk_start, chunks_for, first_bad, key_at, padded_row,
                                     threads_for)
from histkit.oracles._keys cimport key_t
from histkit.oracles._fold import fold_rows


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


cdef inline Py_ssize_t waves_small_bins(const key_t* keys, Py_ssize_t step, Py_ssize_t n,
                                        Py_ssize_t first_wave, Py_ssize_t last_wave,
                                        Py_ssize_t warp_size, int64_t* hist,
                                        uint64_t num_bins) noexcept nogil:
    # num_bins <= 64: a wave's set of distinct bins fits in one register.
    cdef Py_ssize_t wave, i, lo, hi
    cdef uint64_t b, touched
    cdef const char* at = <const char*>keys + first_wave * warp_size * step
    for wave in range(first_wave, last_wave):
        lo = wave * warp_size
        hi = min(lo + warp_size, n)
        touched = 0
        for i in range(lo, hi):
            b = key_at(keys, at)
            at += step
            if b >= num_bins:
                return i
            touched |= (<uint64_t>1) << b
        while touched:
            hist[__builtin_ctzll(touched)] += 1
            touched &= touched - 1
    return -1


cdef inline Py_ssize_t waves_any_bins(const key_t* keys, Py_ssize_t step, Py_ssize_t n,
                                      Py_ssize_t first_wave, Py_ssize_t last_wave,
                                      Py_ssize_t warp_size, int64_t* hist,
                                      int64_t* last_wave_seen,
                                      uint64_t num_bins) noexcept nogil:
    # last_wave_seen[b] is the last wave that already bumped bin b: a bin
    # counts once per wave. A lane repeating its neighbour's bin is skipped
    # early, which keeps one-bin and sorted inputs off the memory chain.
    cdef Py_ssize_t wave, i, lo, hi
    cdef uint64_t b, previous
    cdef const char* at = <const char*>keys + first_wave * warp_size * step
    for wave in range(first_wave, last_wave):
        lo = wave * warp_size
        hi = min(lo + warp_size, n)
        previous = num_bins
        for i in range(lo, hi):
            b = key_at(keys, at)
            at += step
            if b >= num_bins:
                return i
            if b == previous:
                continue
            hist[b] += last_wave_seen[b] != wave
            last_wave_seen[b] = wave
            previous = b
    return -1


def naive_wave_counts(const key_t[:] keys, Py_ssize_t num_bins, Py_ssize_t warp_size,
                      Py_ssize_t max_threads):
    """Return (int64 counts under the wave model, first bad index or -1)."""
    cdef Py_ssize_t n = keys.shape[0]
    cdef Py_ssize_t num_waves = (n + warp_size - 1) // warp_size
    cdef Py_ssize_t chunks = chunks_for(n, 2 * num_bins, max_threads)
    cdef Py_ssize_t c, first_wave, last_wave
    cdef const key_t* first = &keys[0] if n else NULL
    cdef Py_ssize_t step = keys.strides[0]
    counts = np.zeros((chunks, padded_row(num_bins)), dtype=np.int64)
    stamps = np.full((chunks, padded_row(num_bins if num_bins > 64 else 1)), -1, dtype=np.int64)
    bad = np.full(chunks, -1, dtype=np.intp)
    cdef int64_t[:, ::1] counts_v = counts
    cdef int64_t[:, ::1] stamps_v = stamps
    cdef Py_ssize_t[::1] bad_v = bad
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads_for(chunks, max_threads)):
        first_wave = chunk_start(num_waves, chunks, c)
        last_wave = chunk_start(num_waves, chunks, c + 1)
        if num_bins <= 64:
            bad_v[c] = waves_small_bins(first, step, n, first_wave, last_wave, warp_size,
                                        &counts_v[c, 0], <uint64_t>num_bins)
        else:
            bad_v[c] = waves_any_bins(first, step, n, first_wave, last_wave, warp_size,
                                      &counts_v[c, 0], &stamps_v[c, 0], <uint64_t>num_bins)
    return fold_rows(counts, num_bins), first_bad(bad_v)
