"""Weighted histogram with exact per-bin sums, each rounded once to float64.

NumPy equivalent: ``np.bincount(keys, weights, minlength=num_bins)``, which
sums each bin left to right in float64 and so carries the order's rounding;
here a bin's result is the exact sum of its weights correctly rounded (what
``math.fsum`` gives), whatever the order or the number of threads.

Sums are integers in units of 2^-1074, kept in 32-bit chunks (_chunks.pxd
says how and why that is exact). Where a sample of float weights fits a
window of 2^63 or so, _weighted_wide sums them in two 128-bit integers per
bin, and the paths here are the fallback and the rest.

Each weight type keeps only the chunks its values and sums can reach
(float64: 67 chunks, float32: 11, int64/uint64: 4) plus one slot of IEEE
special flags per bin. Few bins: every thread keeps such a row per bin and
adds its keys' weights in place (the rows are summed at the end); where
those rows would be large, rows that span only the chunks a sample of the
weights reaches are tried first, and a weight outside them sends the call
back to the full rows. Many bins:
the weights are first grouped by bin (a counting sort of the weights alone),
then each bin's run is summed by one thread into a single row.
"""
import numpy as np

from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t, uint64_t, uintptr_t
from libc.string cimport memcpy

from histkit.oracles._chunks cimport (
    ADDS_BEFORE_CARRY, DOUBLE_LO, DOUBLE_TOP, FLOAT_LO, FLOAT_TOP, INT_LO, INT_TOP,
    MIN_WEIGHTS_PER_WORKER, OUTSIDE,
    SAW_NAN, SAW_NEG_INF, SAW_POS_INF, add_weight, carry, chunk_lo, chunk_top, chunks_written,
    round_chunks, row_len, split_weights, weight_t,
)
from histkit.oracles._count cimport chunk_start, first_bad, load_key, threads_for
from histkit.oracles._keys cimport key_t
from histkit.oracles._histogram import histogram_counts
from histkit.oracles._inputs import require_memory
from histkit.oracles._weighted_wide import sampled_positions, wide_sums

cimport openmp


cdef enum:
    # add_in_place's answer where a weight fell outside the window.
    LEFT_THE_WINDOW = -2
    # Per-thread rows of every bin are used up to IN_PLACE_BINS bins and
    # IN_PLACE_MAX_BYTES of rows a thread; past either, and with fewer
    # weights than bins, the weights are grouped by bin first. A weight
    # touches one or two cache lines of its row, so what must stay in the
    # last-level cache grows with the bins, not the row: on the 2-core
    # machine (2^24 uniform weights) float32 in place took 31 ms at 131072
    # bins and 132 at 262144, float64 53 ms at 65536 bins (34 MiB of rows a
    # thread), where grouping took 94-122 ms at any of these.
    IN_PLACE_BINS = 1 << 17
    IN_PLACE_MAX_BYTES = 1 << 26
    # A chunk of work is at most this long, so that one thread can carry all
    # its rows between chunks before any slot can overflow.
    MAX_WEIGHTS_PER_CHUNK = 1 << 30


cdef inline Py_ssize_t add_in_place(const key_t* keys, Py_ssize_t key_step,
                                    const char* weights, Py_ssize_t weight_step,
                                    Py_ssize_t start, Py_ssize_t stop, int64_t* rows,
                                    uint64_t num_bins, Py_ssize_t base, Py_ssize_t top,
                                    const weight_t* tag) noexcept nogil:
    """Add weights[start:stop] to the rows of their keys' bins (rows of
    top + 2 slots: chunks from absolute chunk base, the signed top, flags).

    Returns -1, or the index of the first key outside [0, num_bins) (the keys
    before it are added), or LEFT_THE_WINDOW where a weight's chunks lie
    outside the rows'.
    """
    cdef Py_ssize_t i, c
    cdef uint64_t b
    cdef Py_ssize_t row = top + 2
    cdef int64_t* bin_row
    cdef const char* at = weights + start * weight_step
    for i in range(start, stop):
        b = load_key(keys, key_step, i)
        if b >= num_bins:
            return i
        bin_row = rows + b * row
        c = add_weight(bin_row, at, base, top - chunks_written(tag), tag)
        if c < 0:
            if c == -OUTSIDE:
                return LEFT_THE_WINDOW
            bin_row[top + 1] |= -c
        at += weight_step
    return -1


cdef inline Py_ssize_t add_chunk(const key_t* keys, Py_ssize_t key_step, const char* weights,
                                 Py_ssize_t weight_step, Py_ssize_t start, Py_ssize_t stop,
                                 int64_t* rows, Py_ssize_t num_bins, Py_ssize_t base,
                                 Py_ssize_t top, char kind) noexcept nogil:
    if kind == b'd':
        return add_in_place(keys, key_step, weights, weight_step, start, stop, rows,
                            <uint64_t>num_bins, base, top, <const double*>NULL)
    elif kind == b'f':
        return add_in_place(keys, key_step, weights, weight_step, start, stop, rows,
                            <uint64_t>num_bins, base, top, <const float*>NULL)
    elif kind == b'q':
        return add_in_place(keys, key_step, weights, weight_step, start, stop, rows,
                            <uint64_t>num_bins, base, top, <const int64_t*>NULL)
    return add_in_place(keys, key_step, weights, weight_step, start, stop, rows,
                        <uint64_t>num_bins, base, top, <const uint64_t*>NULL)


cdef void carry_rows(int64_t* rows, Py_ssize_t num_bins, Py_ssize_t row) noexcept nogil:
    cdef Py_ssize_t b
    for b in range(num_bins):
        carry(rows + b * row, 0, row - 2)


cdef inline void merge_and_round(int64_t* rows, Py_ssize_t workers, Py_ssize_t row_stride,
                                 Py_ssize_t b, double* sums, Py_ssize_t base,
                                 Py_ssize_t top) noexcept nogil:
    """sums[b]: every worker's row of bin b added into the first's, then rounded.

    Carried rows hold chunks below 2^32, so these adds cannot overflow.
    """
    cdef Py_ssize_t t, i
    cdef int64_t* merged = rows + b * (top + 2)
    cdef int64_t* other
    cdef int64_t specials = merged[top + 1]
    carry(merged, 0, top)
    for t in range(1, workers):
        other = rows + t * row_stride + b * (top + 2)
        carry(other, 0, top)
        for i in range(top + 1):
            merged[i] += other[i]
        specials |= other[top + 1]
    sums[b] = round_chunks(merged, 0, top, base, specials)


cdef void merge_bins(int64_t* rows, Py_ssize_t workers, Py_ssize_t row_stride,
                     Py_ssize_t first_bin, Py_ssize_t end_bin, double* sums,
                     Py_ssize_t base, Py_ssize_t top) noexcept nogil:
    cdef Py_ssize_t b
    for b in range(first_bin, end_bin):
        merge_and_round(rows, workers, row_stride, b, sums, base, top)


cdef inline void group_weights(const key_t* keys, Py_ssize_t key_step, const char* weights,
                               Py_ssize_t weight_step, Py_ssize_t n, uint64_t first_bin,
                               uint64_t end_bin, int64_t* cursor, char* grouped,
                               Py_ssize_t itemsize) noexcept nogil:
    """Copy the weights of bins [first_bin, end_bin) to their runs in grouped."""
    cdef Py_ssize_t i
    cdef uint64_t b
    cdef const char* at = weights
    for i in range(n):
        b = load_key(keys, key_step, i)
        if b - first_bin < end_bin - first_bin:  # first_bin <= b < end_bin
            if itemsize == 8:
                memcpy(grouped + 8 * cursor[b], at, 8)
            else:
                memcpy(grouped + 4 * cursor[b], at, 4)
            cursor[b] += 1
        at += weight_step


cdef inline double sum_run(const char* run, Py_ssize_t length, int64_t* chunks,
                           const weight_t* tag) noexcept nogil:
    """The correctly rounded sum of the weights run[0:length], in the zeroed
    scratch chunks (left zeroed)."""
    # Adds land in chunks lo .. hi + 2, so chunk hi + 3 (or the row's top) can
    # serve as the signed top, and only lo .. hi + 3 need carrying and clearing.
    cdef Py_ssize_t i, c, lo = chunk_top(tag), hi = -3
    cdef Py_ssize_t top = chunk_top(tag)
    cdef int64_t specials = 0
    cdef Py_ssize_t since_carry = 0
    for i in range(length):
        c = add_weight(chunks, run + i * sizeof(weight_t), chunk_lo(tag),
                       top - chunks_written(tag), tag)
        if c < 0:
            specials |= -c
            continue
        lo = min(lo, c)
        hi = max(hi, c)
        since_carry += 1
        if since_carry == ADDS_BEFORE_CARRY:
            carry(chunks, lo, min(hi + 3, top))
            since_carry = 0
    top = max(0, min(hi + 3, top))
    return round_chunks(chunks, min(lo, top), top, chunk_lo(tag), specials)


cdef void sum_runs(const char* grouped, const int64_t* starts, Py_ssize_t first_bin,
                   Py_ssize_t end_bin, int64_t* chunks, double* sums, char kind) noexcept nogil:
    cdef Py_ssize_t b
    for b in range(first_bin, end_bin):
        if kind == b'd':
            sums[b] = sum_run(grouped + 8 * starts[b], starts[b + 1] - starts[b], chunks,
                              <const double*>NULL)
        elif kind == b'f':
            sums[b] = sum_run(grouped + 4 * starts[b], starts[b + 1] - starts[b], chunks,
                              <const float*>NULL)
        elif kind == b'q':
            sums[b] = sum_run(grouped + 8 * starts[b], starts[b + 1] - starts[b], chunks,
                              <const int64_t*>NULL)
        else:
            sums[b] = sum_run(grouped + 8 * starts[b], starts[b + 1] - starts[b], chunks,
                              <const uint64_t*>NULL)


# The row layout the GPU kernel (cuda/weighted_histogram.cu) keeps too, as its
# defines: each float weight kind's absolute chunk span (numpy's dtype.char ->
# (first chunk, signed top chunk)) and the special flags.
CHUNK_SPAN = {"d": (DOUBLE_LO, DOUBLE_TOP), "f": (FLOAT_LO, FLOAT_TOP)}
SPECIAL_FLAGS = {"SAW_NAN": SAW_NAN, "SAW_POS_INF": SAW_POS_INF, "SAW_NEG_INF": SAW_NEG_INF}

# Chunks one weight of each float kind adds to (numpy's dtype.char).
CHUNKS_WRITTEN = {"d": chunks_written(<const double*>NULL),
                  "f": chunks_written(<const float*>NULL)}
# A window is guessed from one weight in every n / WINDOW_SAMPLE, and
# reaches WINDOW_SLACK chunks (32 binades each) past them on either side.
# It is taken where a thread's fixed rows pass WINDOW_ABOVE_BYTES: on
# a 2-core x86-64 VM (1 MiB of L2 a core; 2^24 weights spread over 10^-3 .. 10^3)
# float64 at 65536 bins took 49 ms in a window and 135 in fixed rows, at
# 4096 bins 29 and 34, at 1024 30 and 31; but at 10 bins float32 took 56
# in a window and 30 in fixed rows (tiny rows share cache lines).
WINDOW_SAMPLE = 4096
WINDOW_SLACK = 1
WINDOW_ABOVE_BYTES = 1 << 18

# int64 slots per bin of each weight kind (numpy's dtype.char): the chunks,
# then the special flags.
ROW_LEN = {
    "d": row_len(<const double*>NULL),
    "f": row_len(<const float*>NULL),
    "q": row_len(<const int64_t*>NULL),
    "Q": row_len(<const uint64_t*>NULL),
}
# The most bins each thread keeps rows for, by weight kind (past them, or with
# fewer weights than bins, the weights are grouped by bin first).
IN_PLACE_MAX_BINS = {kind: min(IN_PLACE_BINS, IN_PLACE_MAX_BYTES // (8 * row))
                     for kind, row in ROW_LEN.items()}


def _window(weights, str kind):
    """(base, top) of rows that hold only the chunks a sample of the float
    weights reaches, WINDOW_SLACK chunks either side, or None (integer
    weights, no finite nonzero weight in the sample, or no narrower than
    the fixed rows). A weight outside it sends the call back to the fixed
    rows, so the guess costs time when wrong, never exactness."""
    if kind not in CHUNK_SPAN:
        return None
    p = sampled_positions(weights, kind, WINDOW_SAMPLE)
    if p.size == 0:
        return None
    lowest = int(p.min()) >> 5
    highest = int(p.max()) >> 5
    first, top = CHUNK_SPAN[kind]
    written = CHUNKS_WRITTEN[kind]
    base = max(first, lowest - WINDOW_SLACK)
    last = min(top - written, highest + WINDOW_SLACK)
    if last - base + written >= top - first:
        return None
    return base, last - base + written


def _sums_in_place(const key_t[:] keys, weights, Py_ssize_t num_bins, Py_ssize_t most,
                   Py_ssize_t base, Py_ssize_t top, char kind):
    """weighted_sums in per-thread rows of top + 2 slots from absolute chunk
    base: (sums, first bad index or -1), or None where a weight left them."""
    cdef Py_ssize_t n = keys.shape[0]
    cdef Py_ssize_t row = top + 2
    cdef const key_t* first_key = &keys[0] if n else NULL
    cdef Py_ssize_t key_step = keys.strides[0]
    cdef const char* first_weight = <const char*><uintptr_t>weights.ctypes.data
    cdef Py_ssize_t weight_step = weights.strides[0]
    cdef Py_ssize_t workers, chunks = 1, c, t, start, stop
    cdef int64_t[:, ::1] rows_v
    cdef int64_t[::1] added_v
    cdef Py_ssize_t[::1] bad_v
    sums = np.empty(num_bins, dtype=np.float64)
    cdef double[::1] sums_v = sums
    # Every worker keeps a row per bin.
    workers = split_weights(n, num_bins * row, most, &chunks)
    chunks = max(chunks, -(-n // MAX_WEIGHTS_PER_CHUNK))
    rows = np.zeros((workers, num_bins * row), dtype=np.int64)
    added = np.zeros(workers, dtype=np.int64)
    bad = np.full(chunks, -1, dtype=np.intp)
    rows_v = rows
    added_v = added
    bad_v = bad
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1, num_threads=workers):
        t = threadid()
        start = chunk_start(n, chunks, c)
        stop = chunk_start(n, chunks, c + 1)
        if added_v[t] + (stop - start) > ADDS_BEFORE_CARRY:
            carry_rows(&rows_v[t, 0], num_bins, row)
            added_v[t] = 0
        added_v[t] += stop - start
        bad_v[c] = add_chunk(first_key, key_step, first_weight, weight_step, start, stop,
                             &rows_v[t, 0], num_bins, base, top, kind)
    # A chunk that left the window stopped there, so a bad key after it may
    # be unseen: the caller starts again over the fixed rows.
    if (bad == LEFT_THE_WINDOW).any():
        return None
    if first_bad(bad_v) >= 0:
        return None, first_bad(bad_v)
    chunks = threads_for(num_bins // 4096 + 1, most)
    for c in prange(chunks, nogil=True, schedule="static", num_threads=chunks):
        merge_bins(&rows_v[0, 0], workers, num_bins * row, chunk_start(num_bins, chunks, c),
                   chunk_start(num_bins, chunks, c + 1), &sums_v[0], base, top)
    return sums, -1


def weighted_sums(const key_t[:] keys, weights, Py_ssize_t num_bins, Py_ssize_t max_threads):
    """Per-bin sums of weights, each the exact sum correctly rounded to float64.

    weights: a 1-d float64, float32, int64 or uint64 array as long as keys, any
    stride, native byte order (checked by the caller). Returns (float64 sums,
    first bad index or -1); sums is None when a key is outside [0, num_bins).

    Where a thread's rows would be large, float weights are first added
    into rows that span only the chunks a sample of them reaches (_window):
    at 65536 bins float64 rows of 68 slots are 35 MiB a thread, where rows
    for weights within about 2^-60 .. 2^60 take 8 slots.
    """
    cdef Py_ssize_t n = keys.shape[0]
    cdef str kind = weights.dtype.char.replace("l", "q").replace("L", "Q")
    cdef Py_ssize_t row = ROW_LEN[kind]
    cdef Py_ssize_t most = min(<Py_ssize_t>openmp.omp_get_max_threads(), max(1, max_threads))
    cdef const key_t* first_key = &keys[0] if n else NULL
    cdef Py_ssize_t key_step = keys.strides[0]
    cdef const char* first_weight = <const char*><uintptr_t>weights.ctypes.data
    cdef Py_ssize_t weight_step = weights.strides[0]
    cdef Py_ssize_t workers, j
    cdef int64_t[:, ::1] rows_v
    cdef int64_t[::1] starts_v, edges_v, cursor_v
    cdef char* grouped_at
    cdef Py_ssize_t itemsize = weights.itemsize

    if num_bins <= IN_PLACE_MAX_BINS[kind] and n >= num_bins:
        result = wide_sums(keys, weights, num_bins, most)
        if result is not None:
            return result
        window = _window(weights, kind) if num_bins * row * 8 > WINDOW_ABOVE_BYTES else None
        if window is not None:
            result = _sums_in_place(keys, weights, num_bins, most, window[0], window[1],
                                    ord(kind))
            if result is not None:
                return result
        first, top = CHUNK_SPAN.get(kind, (INT_LO, INT_TOP))
        return _sums_in_place(keys, weights, num_bins, most, first, top - first, ord(kind))

    # Many bins: group the weights by bin (a counting sort of the weights
    # alone), then sum each bin's run. Worker j groups and sums the bins
    # [edges[j], edges[j + 1]), about n / workers weights.
    sums = np.empty(num_bins, dtype=np.float64)
    cdef double[::1] sums_v = sums
    cdef char kind_char = ord(kind)
    workers = max(1, min(most, n // MIN_WEIGHTS_PER_WORKER))
    # sums' pages are not touched yet, so the check counts them too.
    require_memory(24 * <object>num_bins + <object>itemsize * n,
                   f"weighted histogram of {n} weights into num_bins={num_bins}")
    counts, bad_index = histogram_counts(keys, num_bins, workers)
    if bad_index >= 0:
        return None, bad_index
    starts = np.zeros(num_bins + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    del counts
    edges = np.searchsorted(starts[1:], np.arange(workers + 1) * (n / workers), side="left")
    edges[0], edges[workers] = 0, num_bins
    edges = np.maximum.accumulate(edges).astype(np.int64)
    cursor = starts[:num_bins].copy()
    grouped = np.empty(n * itemsize, dtype=np.uint8)
    scratch = np.zeros((workers, row), dtype=np.int64)
    starts_v = starts
    edges_v = edges
    cursor_v = cursor
    rows_v = scratch
    grouped_at = <char*><uintptr_t>grouped.ctypes.data
    for j in prange(workers, nogil=True, schedule="static", chunksize=1, num_threads=workers):
        group_weights(first_key, key_step, first_weight, weight_step, n, edges_v[j],
                      edges_v[j + 1], &cursor_v[0], grouped_at, itemsize)
        sum_runs(grouped_at, &starts_v[0], edges_v[j], edges_v[j + 1], &rows_v[j, 0],
                 &sums_v[0], kind_char)
    return sums, -1
