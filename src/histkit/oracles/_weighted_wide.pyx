"""Exact weighted sums of float weights in two 128-bit integers per bin.

A float weight is ``m * 2^(p - 1074)`` with an integer mantissa m (see
_chunks.pxd). Where p lies in a window [base, base + span] with span < 64,
the weight is, in units of 2^(base - 1074), the integer ``m << (p - base)``,
below 2^(53 + 63): one 128-bit add puts it into its bin's accumulator of
positive weights or of negative ones, with no sign or carry handling per
weight. span leaves headroom for all n weights, n * 2^(mantissa bits + span)
<= 2^128, so no accumulator can overflow, and integer adds do not depend on
their order: any split of the weights over threads gives the same sums.

The window is placed from a sample of the weights: its top a few binades
above the largest sampled weight. Weights outside it (tiny beside the rest,
huge, NaN, infinite) are recorded by index, up to about one weight in 512,
and added to their bins' chunks when each bin is rounded; past that, the
call answers None and the caller sums in rows of chunks instead. So the
window decides the speed, never the result.

Against rows of 32-bit chunks (_weighted) this halves the instructions a
weight costs and keeps 32 bytes a bin where float64 rows take 544: on
a 2-core x86-64 VM, 2^24 uniform keys with normal weights took 17-21 ms at 10
and 256 bins and 29-32 ms at 65536 bins, against 25-31 and 55-62 in rows
(bench/cpu.py, the weighted rows).
"""
import numpy as np

from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t, uint64_t, uintptr_t

from histkit.oracles._chunks cimport (
    LOW32, FloatParts, add_weight, chunks_written, float_parts, round_chunks, signed_part,
    split_weights,
)
from histkit.oracles._count cimport chunk_start, first_bad, key_at, threads_for
from histkit.oracles._keys cimport key_t


cdef extern from *:
    void __builtin_prefetch(const void* address, int write, int locality) nogil


cdef enum:
    # Weights a worker may record outside the window before the call gives
    # up on it (8 bytes each): this many, or its share of one weight in
    # OUTSIDE_ONE_IN.
    OUTSIDE_PER_WORKER = 1 << 16
    OUTSIDE_ONE_IN = 512
    # add_wide's answer where its worker's record of outside weights is full.
    OUTSIDE_IS_FULL = -2
    # uint64 slots a bin: the positive accumulator's low and high words, then
    # the negative one's.
    SLOTS = 4
    # Each worker's accumulators are padded by a cache line of slots, so that
    # two workers never write one line.
    PAD = 8
    # Chunks of the scratch row a bin is rounded in: every absolute chunk a
    # float64 or an accumulator placed at base <= 2045 can reach (63 + 5),
    # then the signed top.
    SCRATCH_TOP = 71
    # Past this many bins (accumulators of 2 MiB a worker at 65536), the
    # accumulators of the key PREFETCH_AHEAD keys on are fetched early: on a
    # 2-core x86-64 VM, 2^24 weights into 65536 bins took 24 ms so against 30,
    # where at 256 bins it cost 17 -> 20 ms.
    PREFETCH_ABOVE_BINS = 8192
    PREFETCH_AHEAD = 16


# By numpy's dtype.char: mantissa bits (the implicit one included), the
# largest p of a finite weight, and p's offset from the exponent field.
MANTISSA_BITS = {"d": 53, "f": 24}
LARGEST_P = {"d": 2045, "f": 254 - 1 + 1074 - 149}
P_OFFSET = {"d": 0, "f": 1074 - 149}
# The window is placed from one weight in every n / WIDE_SAMPLE; its top is
# TOP_SLACK binades above the largest sampled weight's.
WIDE_SAMPLE = 4096
TOP_SLACK = 4
# Below this many weights the sample costs more than the path saves.
MIN_WEIGHTS = 1 << 12


def sampled_positions(weights, str kind, Py_ssize_t sample_size):
    """p of every finite nonzero weight among one in len(weights) /
    sample_size, for weights of kind 'f' or 'd' (numpy's dtype.char)."""
    sample = weights[::max(1, len(weights) // sample_size)]
    if kind == "d":
        bits = sample.view(np.uint64)
        exponent = (bits >> np.uint64(52)).astype(np.int64) & 0x7FF
        nonzero = (bits << np.uint64(1)) != 0
        special = 0x7FF
    else:
        bits = sample.view(np.uint32)
        exponent = (bits >> np.uint32(23)).astype(np.int64) & 0xFF
        nonzero = (bits << np.uint32(1)) != 0
        special = 0xFF
    exponent = exponent[nonzero & (exponent != special)]
    return exponent - (exponent != 0) + P_OFFSET[kind]


def wide_window(weights, str kind):
    """(base, span) of a window that holds every sampled finite nonzero
    weight of kind 'f' or 'd' with headroom for len(weights) adds, or None
    (no such weight in the sample, or the sample spans too many binades)."""
    p = sampled_positions(weights, kind, WIDE_SAMPLE)
    if p.size == 0:
        return None
    span = min(63, 128 - MANTISSA_BITS[kind] - len(weights).bit_length())
    # Below LARGEST_P + 1, so NaN and infinities always fall outside.
    top = min(int(p.max()) + TOP_SLACK, LARGEST_P[kind])
    base = max(0, top - span)
    if int(p.min()) < base:
        return None
    return base, top - base


ctypedef fused float_t:
    float
    double


cdef inline Py_ssize_t add_wide(const key_t* keys, Py_ssize_t key_step, const char* weights,
                                Py_ssize_t weight_step, Py_ssize_t start, Py_ssize_t stop,
                                uint64_t* acc, uint64_t num_bins, uint64_t base,
                                uint64_t span, int64_t* outside, Py_ssize_t* num_outside,
                                Py_ssize_t capacity, const float_t* tag) noexcept nogil:
    """Add weights[start:stop] to their bins' accumulators; record those
    outside the window in outside[num_outside[0]:].

    Returns -1, or the index of the first key outside [0, num_bins) (the
    weights before it are added), or OUTSIDE_IS_FULL.
    """
    cdef Py_ssize_t i, k = num_outside[0]
    cdef uint64_t b, mantissa, s, low, high, x, negative
    cdef FloatParts parts
    cdef uint64_t* a
    cdef const char* key = <const char*>keys + start * key_step
    cdef const char* at = weights + start * weight_step
    cdef Py_ssize_t answer = -1
    # Keys before this index fetch the accumulators of the key PREFETCH_AHEAD on.
    cdef Py_ssize_t prefetch_until = (stop - PREFETCH_AHEAD if num_bins > PREFETCH_ABOVE_BINS
                                      else start)
    for i in range(start, stop):
        b = key_at(keys, key)
        if b >= num_bins:
            answer = i
            break
        if i < prefetch_until:
            __builtin_prefetch(acc + SLOTS * key_at(keys, key + PREFETCH_AHEAD * key_step), 1, 3)
        parts = float_parts(at, tag)
        mantissa = parts.mantissa
        s = parts.p - base
        negative = parts.negative
        key += key_step
        at += weight_step
        if s > span:  # below base too (s wraps)
            if mantissa != 0:  # not a zero: NaN and infinities have the implicit bit
                if k == capacity:
                    answer = OUTSIDE_IS_FULL
                    break
                outside[k] = i
                k += 1
            continue
        low = mantissa << s
        high = (mantissa >> 1) >> (63 - s)  # mantissa >> (64 - s), also for s == 0
        a = acc + SLOTS * b + 2 * negative
        x = a[0] + low
        a[1] += high + (x < low)
        a[0] = x
    num_outside[0] = k
    return answer


cdef inline void place(int64_t* chunks, uint64_t low, uint64_t high, uint64_t shift,
                       int64_t negative) noexcept nogil:
    """Add (negative == 0) or subtract (negative == -1) high:low * 2^shift to
    the chunks, chunks[i] holding the bits [32 i, 32 i + 32): five of them."""
    cdef unsigned int off = shift & 31
    cdef Py_ssize_t c = <Py_ssize_t>(shift >> 5)
    cdef uint64_t w0 = low << off
    cdef uint64_t w1 = (high << off) | ((low >> 1) >> (63 - off))
    cdef uint64_t w2 = (high >> 1) >> (63 - off)
    chunks[c] += signed_part(w0 & LOW32, negative)
    chunks[c + 1] += signed_part(w0 >> 32, negative)
    chunks[c + 2] += signed_part(w1 & LOW32, negative)
    chunks[c + 3] += signed_part(w1 >> 32, negative)
    chunks[c + 4] += signed_part(w2, negative)


cdef inline double round_bin(const uint64_t* acc, Py_ssize_t workers, Py_ssize_t stride,
                             Py_ssize_t b, uint64_t base, const int64_t* outside,
                             Py_ssize_t first, Py_ssize_t end, const char* weights,
                             Py_ssize_t weight_step, int64_t* scratch,
                             const char kind) noexcept nogil:
    """Bin b's exact sum, rounded once: every worker's accumulators and the
    weights outside the window at outside[first:end], added in the zeroed
    scratch chunks (left zeroed)."""
    cdef uint64_t positive_low = 0, positive_high = 0, negative_low = 0, negative_high = 0, x
    cdef const uint64_t* a
    cdef Py_ssize_t t, k, c, written
    cdef Py_ssize_t lo = <Py_ssize_t>(base >> 5)
    cdef Py_ssize_t top = lo + 5
    cdef int64_t specials = 0
    for t in range(workers):
        a = acc + t * stride + SLOTS * b
        x = positive_low + a[0]
        positive_high += a[1] + (x < positive_low)
        positive_low = x
        x = negative_low + a[2]
        negative_high += a[3] + (x < negative_low)
        negative_low = x
    place(scratch, positive_low, positive_high, base, 0)
    place(scratch, negative_low, negative_high, base, -1)
    for k in range(first, end):
        if kind == b'd':
            written = chunks_written(<const double*>NULL)
            c = add_weight(scratch, weights + outside[k] * weight_step, 0,
                           SCRATCH_TOP - written, <const double*>NULL)
        else:
            written = chunks_written(<const float*>NULL)
            c = add_weight(scratch, weights + outside[k] * weight_step, 0,
                           SCRATCH_TOP - written, <const float*>NULL)
        if c < 0:
            specials |= -c
        else:
            lo = min(lo, c)
            top = max(top, c + written)
    return round_chunks(scratch, lo, top, 0, specials)


cdef void round_bins(const uint64_t* acc, Py_ssize_t workers, Py_ssize_t stride,
                     Py_ssize_t first_bin, Py_ssize_t end_bin, uint64_t base,
                     const int64_t* outside, const int64_t* outside_start,
                     const char* weights, Py_ssize_t weight_step, int64_t* scratch,
                     double* sums, const char kind) noexcept nogil:
    cdef Py_ssize_t b
    for b in range(first_bin, end_bin):
        sums[b] = round_bin(acc, workers, stride, b, base, outside, outside_start[b],
                            outside_start[b + 1], weights, weight_step, scratch, kind)


def wide_sums(const key_t[:] keys, weights, Py_ssize_t num_bins, Py_ssize_t most,
              outside_per_worker=None):
    """weighted_sums of float32 or float64 weights (native order, as long as
    keys, any stride) in 128-bit accumulators: (sums, first bad index or -1)
    as weighted_sums answers, or None where no window fits a sample of the
    weights or a worker finds more than outside_per_worker weights outside
    it (then the caller sums another way)."""
    cdef Py_ssize_t n = keys.shape[0]
    cdef str kind_str = weights.dtype.char
    if n < MIN_WEIGHTS or kind_str not in MANTISSA_BITS:
        return None
    window = wide_window(weights, kind_str)
    if window is None:
        return None
    cdef uint64_t base = window[0], span = window[1]
    cdef char kind = ord(kind_str)
    cdef const key_t* first_key = &keys[0]
    cdef Py_ssize_t key_step = keys.strides[0]
    cdef const char* first_weight = <const char*><uintptr_t>weights.ctypes.data
    cdef Py_ssize_t weight_step = weights.strides[0]
    cdef Py_ssize_t workers, chunks = 1, c, t, start, stop
    cdef Py_ssize_t stride = SLOTS * num_bins + PAD
    workers = split_weights(n, SLOTS * num_bins, most, &chunks)
    cdef Py_ssize_t capacity = (max(OUTSIDE_PER_WORKER, n // OUTSIDE_ONE_IN // workers)
                                if outside_per_worker is None else outside_per_worker)
    acc = np.zeros((workers, stride), dtype=np.uint64)
    outside = np.empty((workers, max(1, capacity)), dtype=np.int64)
    num_outside = np.zeros(workers, dtype=np.intp)
    bad = np.full(chunks, -1, dtype=np.intp)
    cdef uint64_t[:, ::1] acc_v = acc
    cdef int64_t[:, ::1] outside_v = outside
    cdef Py_ssize_t[::1] num_outside_v = num_outside
    cdef Py_ssize_t[::1] bad_v = bad
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1, num_threads=workers):
        t = threadid()
        start = chunk_start(n, chunks, c)
        stop = chunk_start(n, chunks, c + 1)
        if kind == b'd':
            bad_v[c] = add_wide(first_key, key_step, first_weight, weight_step, start, stop,
                                &acc_v[t, 0], <uint64_t>num_bins, base, span, &outside_v[t, 0],
                                &num_outside_v[t], capacity, <const double*>NULL)
        else:
            bad_v[c] = add_wide(first_key, key_step, first_weight, weight_step, start, stop,
                                &acc_v[t, 0], <uint64_t>num_bins, base, span, &outside_v[t, 0],
                                &num_outside_v[t], capacity, <const float*>NULL)
    # A chunk that stopped on a full record may hide a bad key after it: the
    # caller's other path finds it.
    if (bad == OUTSIDE_IS_FULL).any():
        return None
    if first_bad(bad_v) >= 0:
        return None, first_bad(bad_v)

    # The weights outside the window, grouped by bin.
    index = np.concatenate([outside[t, :num_outside[t]] for t in range(workers)])
    bins = np.asarray(keys)[index].astype(np.int64)
    order = np.argsort(bins, kind="stable")
    index = np.ascontiguousarray(index[order])
    if index.size == 0:
        index = np.zeros(1, dtype=np.int64)
    outside_start = np.searchsorted(bins[order], np.arange(num_bins + 1)).astype(np.int64)
    cdef int64_t[::1] index_v = index
    cdef int64_t[::1] outside_start_v = outside_start

    sums = np.empty(num_bins, dtype=np.float64)
    cdef double[::1] sums_v = sums
    chunks = threads_for(num_bins // 4096 + 1, most)
    scratch = np.zeros((chunks, SCRATCH_TOP + 1), dtype=np.int64)
    cdef int64_t[:, ::1] scratch_v = scratch
    for c in prange(chunks, nogil=True, schedule="static", num_threads=chunks):
        round_bins(&acc_v[0, 0], workers, stride, chunk_start(num_bins, chunks, c),
                   chunk_start(num_bins, chunks, c + 1), base, &index_v[0],
                   &outside_start_v[0], first_weight, weight_step, &scratch_v[c, 0],
                   &sums_v[0], kind)
    return sums, -1
