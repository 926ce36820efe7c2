"""Real-valued samples into bins by numpy's rule: the counting behind bin_histogram.

Which edges, which samples are in range and the dtype of every step of the
estimate are decided once per call in Python (histkit.oracles._bin_rule);
here each sample is placed:

- even bins: numpy's estimate ``((x - lo) / width) * bins``, each step rounded
  to the dtype numpy computes it in, truncated, then corrected once downward
  and once upward against the edges, as numpy corrects it;
- explicit edges: a binary search over the edges, converted to the dtype
  numpy compares samples and edges in.

Every bin is half-open but the last, which is closed unless ``closed_last`` is
false (CUB's convention: the top edge excluded, a sample on it overflows).
NaN samples are tallied apart, never binned. Each chunk of samples counts into
its own row, and rows are summed in chunk order, so the counts and the first
failing sample do not depend on the number of threads.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport INFINITY, NAN, fabs, frexp, ldexp, rint
from libc.stdint cimport INT64_MIN, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from histkit.oracles._count cimport chunk_start, chunks_for, first_bad, padded_row, threads_for
from histkit.oracles._keys cimport sample_t
from histkit.oracles._fold import fold_rows


# Where a sample goes besides a bin. The tallies sit after the n bins of
# each chunk's row: underflow at row[n + UNDER - 1], and so on.
cdef enum:
    IN_RANGE = 0
    UNDER = 1
    OVER = 2
    NOT_A_NUMBER = 3
    TALLIES = 3
    # A sample numpy's even-bin code fails on: the estimate indexes past the
    # edges (IndexError) or the corrections leave a negative bin (bincount).
    NUMPY_FAILS = -1


# The precisions numpy computes a step in (bits of the float dtype).
cdef enum:
    HALF = 16
    SINGLE = 32
    DOUBLE = 64


# float16 rounds to infinity from here on (half-way between its largest
# finite value, 65504, and 65536).
cdef double HALF_OVERFLOW = 65520.0
# Below 2^-14 float16 is subnormal: a fixed step of 2^-24.
cdef double HALF_MIN_NORMAL = 6.103515625e-05
cdef double HALF_SUBNORMAL_SCALE = 16777216.0


cdef inline double round_half(double v) noexcept nogil:
    """The float16 nearest to v (ties to even), as a double; NaN stays NaN."""
    cdef double a = fabs(v)
    cdef int e
    cdef double step
    if a != a:
        return v
    if a >= HALF_OVERFLOW:
        return INFINITY if v > 0 else -INFINITY
    if a < HALF_MIN_NORMAL:
        return rint(v * HALF_SUBNORMAL_SCALE) / HALF_SUBNORMAL_SCALE
    frexp(a, &e)
    # a lies in [2^(e-1), 2^e): float16 keeps 10 bits after the leading one.
    step = ldexp(1.0, e - 11)
    return rint(v / step) * step


cdef inline double rounded(double v, int bits) noexcept nogil:
    """v rounded to the float dtype of `bits`, as numpy rounds each step.

    v is the exact result of one operation on values of that dtype or the
    exact result rounded to double: double carries more than twice the bits
    of float32 and float16 plus two, so rounding twice gives the correctly
    rounded result (what numpy's float32 and float16 loops give).
    """
    if bits == DOUBLE:
        return v
    if bits == SINGLE:
        return <double><float>v
    return round_half(v)


cdef inline double half_value(uint16_t h) noexcept nogil:
    """The value of the float16 with bits h, as a double (exact)."""
    cdef uint64_t exponent = (h >> 10) & 0x1F
    cdef uint64_t fraction = h & 0x3FF
    cdef uint64_t bits
    cdef double magnitude
    if exponent == 0:
        magnitude = fraction / HALF_SUBNORMAL_SCALE
    elif exponent == 0x1F:
        magnitude = INFINITY if fraction == 0 else NAN
    else:
        bits = ((exponent + 1023 - 15) << 52) | (fraction << 42)
        memcpy(&magnitude, &bits, 8)
    return -magnitude if h & 0x8000 else magnitude


cdef struct Keep:
    # numpy keeps the samples with x >= lo and x <= hi, compared in the
    # dtype its promotion rules pick; as sample values that is an interval.
    # any_low is false when no sample value passes x >= lo (any_high alike).
    bint any_low
    bint any_high
    double low_f
    double high_f
    int64_t low_i
    int64_t high_i
    uint64_t low_u
    uint64_t high_u


cdef inline int float_place(double v, const Keep* k) noexcept nogil:
    # low_f and high_f are NaN where no value passes (see _keep): one test
    # admits the in-range samples, NaN included in the rest.
    if v >= k.low_f and v <= k.high_f:
        return IN_RANGE
    if v != v:
        return NOT_A_NUMBER
    if not k.any_low or v < k.low_f:
        return UNDER
    if not k.any_high or v > k.high_f:
        return OVER
    return IN_RANGE


cdef inline int place(sample_t raw, bint half, const Keep* k, double* value) noexcept nogil:
    """IN_RANGE (value set to the sample as a double), UNDER, OVER or NOT_A_NUMBER."""
    if sample_t is float or sample_t is double:
        value[0] = raw
        return float_place(value[0], k)
    elif sample_t is uint16_t:
        if half:
            value[0] = half_value(raw)
            return float_place(value[0], k)
        if not k.any_low or raw < k.low_u:
            return UNDER
        if not k.any_high or raw > k.high_u:
            return OVER
    elif sample_t is uint64_t or sample_t is uint32_t or sample_t is uint8_t:
        if not k.any_low or raw < k.low_u:
            return UNDER
        if not k.any_high or raw > k.high_u:
            return OVER
    else:
        if not k.any_low or raw < k.low_i:
            return UNDER
        if not k.any_high or raw > k.high_i:
            return OVER
    # Integers convert to double correctly rounded (int64 and uint64 past
    # 2^53 round, as numpy's cast to the float64 edges does).
    value[0] = <double>raw
    return IN_RANGE


cdef struct Even:
    const double* edges  # n + 1 edges, exact as doubles
    int64_t n
    double lo            # numpy's first edge, in the subtraction's dtype
    double width         # numpy's norm_denom (hi - lo), in the division's dtype
    double scale         # the number of bins, in the division's dtype
    double top           # n, as a double: estimates below it are inside the bins
    int edge_bits        # dtype of the edges (samples are cast to it first)
    int diff_bits        # dtype of x - lo
    int quot_bits        # dtype of / width and * bins
    bint closed_last


cdef inline int64_t edge_at(const Even* r, int64_t i) noexcept nogil:
    # numpy indexes its edges with Python's rule: -1 is the last.
    return i + r.n + 1 if i < 0 else i


cdef inline int64_t even_bin(double x, const Even* r, int edge_bits, int diff_bits,
                             int quot_bits) noexcept nogil:
    """The bin numpy gives in-range sample x (0 ... n - 1), n for a sample on
    the top edge under the open convention, or NUMPY_FAILS."""
    cdef double xe = rounded(x, edge_bits)
    cdef double d = rounded(xe - r.lo, diff_bits)
    cdef double f = rounded(rounded(d / r.width, quot_bits) * r.scale, quot_bits)
    cdef int64_t b
    if f >= 0 and f < r.top:
        # The common case, an estimate inside the bins: numpy's two corrections
        # read edges[b] and edges[b + 1]; after a step down the step up cannot
        # happen (it would compare with the edge just found above the sample).
        b = <int64_t>f
        if xe < r.edges[b]:
            return b - 1 if b > 0 else NUMPY_FAILS
        if (b != r.n - 1 or not r.closed_last) and xe >= r.edges[b + 1]:
            return b + 1
        return b
    return even_bin_outside(xe, f, r)


cdef int64_t even_bin_outside(double xe, double f, const Even* r) noexcept nogil:
    """even_bin for an estimate outside [0, n): numpy's steps in full, Python's
    negative indexing included."""
    cdef int64_t b
    cdef int64_t n = r.n
    # A cast of NaN or of a value past int64 gives INT64_MIN on x86-64, an
    # index numpy then fails on; the range test keeps C's cast defined.
    if f >= -9.223372036854775808e18 and f < 9.223372036854775808e18:
        b = <int64_t>f
    else:
        b = INT64_MIN
    if b == n:
        b = n - 1
    if b < -(n + 1) or b > n:
        return NUMPY_FAILS
    if xe < r.edges[edge_at(r, b)]:
        b -= 1
    if (b != n - 1 or not r.closed_last) and xe >= r.edges[edge_at(r, b + 1)]:
        b += 1
    if b < 0:
        return NUMPY_FAILS
    return b


cdef inline int64_t bracket_bin(double x, const Even* r, double per_unit) noexcept nogil:
    """The bin whose edges bracket in-range sample x (n for the top edge under
    the open convention), from the estimate (x - lo) * per_unit, which
    oracles._estimate has bounded within one bin of it: one step down or up."""
    cdef double f = (x - r.lo) * per_unit
    cdef int64_t b = <int64_t>f if f > 0 else 0
    if b > r.n - 1:
        b = r.n - 1
    if x < r.edges[b]:
        return b - 1
    if (b != r.n - 1 or not r.closed_last) and x >= r.edges[b + 1]:
        return b + 1
    return b


cdef inline void put(int64_t* row, int64_t* slots, Py_ssize_t i, int64_t slot) noexcept nogil:
    """Sample i goes to counter `slot` (a bin, or n + a tally - 1): counted in
    row, or, where the caller wants every sample's place (weights), written
    to slots[i]."""
    if slots != NULL:
        slots[i] = slot
    else:
        row[slot] += 1


cdef inline Py_ssize_t even_chunk(const sample_t* first, Py_ssize_t step, Py_ssize_t start,
                                  Py_ssize_t stop, bint half, const Keep* k, const Even* r,
                                  int64_t* row, int edge_bits, int diff_bits,
                                  int quot_bits, double per_unit,
                                  int64_t* slots) noexcept nogil:
    """Count samples[start:stop] into row (bins, then the tallies), or write
    each one's counter to slots (put); -1, or the index of the first sample
    numpy fails on (counting stops there). A per_unit above 0 bins by
    bracket_bin, where numpy's steps end alike."""
    cdef Py_ssize_t i
    cdef int where
    cdef int64_t b
    cdef double x
    cdef const char* at = <const char*>first + start * step
    # Private copies: the counts are int64 like r.n, so a store to them could
    # otherwise alias the rule and force it to be read again for every sample.
    cdef Even rule = r[0]
    cdef Keep keep = k[0]
    cdef int64_t n = rule.n
    memset(row, 0, (n + TALLIES) * sizeof(int64_t))
    for i in range(start, stop):
        where = place((<const sample_t*>at)[0], half, &keep, &x)
        at += step
        if where != IN_RANGE:
            put(row, slots, i, n + where - 1)
            continue
        if per_unit > 0:
            b = bracket_bin(x, &rule, per_unit)
        else:
            b = even_bin(x, &rule, edge_bits, diff_bits, quot_bits)
        if b < 0:
            return i
        put(row, slots, i, n + OVER - 1 if b == n else b)
    return -1


def even_counts(const sample_t[:] samples, bint half, const double[::1] edges, double lo,
                double width, double scale, int edge_bits, int diff_bits, int quot_bits,
                bint closed_last, tuple keep, Py_ssize_t max_threads, double per_unit=0.0,
                int64_t[::1] slots=None):
    """Count samples into len(edges) - 1 even bins by numpy's estimate and correction.

    per_unit > 0 (float64 edges and steps only): the caller has shown with
    oracles._estimate that numpy's estimate and (x - lo) * per_unit are both
    within one bin of the bracketing bin, so every sample is binned by the
    cheaper one and two steps over the edges, to numpy's bin.

    keep is (any_low, any_high, low, high): the in-range samples as an
    interval of sample values. Returns (int64 counts, underflow, overflow,
    NaN count, index of the first sample numpy fails on or -1); the counts
    are only meaningful when that index is -1. With slots (int64, one per
    sample), each sample's counter is written there instead, and the counts
    come back zero.
    """
    cdef Even r
    cdef Keep k = _keep(keep, half or sample_t is float or sample_t is double)
    r.edges = &edges[0]
    r.n = edges.shape[0] - 1
    r.lo = lo
    r.width = width
    r.scale = scale
    r.top = <double>min(r.n, <int64_t>1 << 52)
    r.edge_bits = edge_bits
    r.diff_bits = diff_bits
    r.quot_bits = quot_bits
    r.closed_last = closed_last
    cdef Py_ssize_t n = samples.shape[0]
    cdef Py_ssize_t chunks = chunks_for(n, r.n + TALLIES, max_threads)
    cdef const sample_t* first = &samples[0] if n else NULL
    cdef Py_ssize_t step = samples.strides[0]
    cdef Py_ssize_t c
    cdef bint all_double = edge_bits == DOUBLE and diff_bits == DOUBLE and quot_bits == DOUBLE
    cdef int64_t* slots_at = &slots[0] if slots is not None and n else NULL
    rows = np.empty((chunks, padded_row(r.n + TALLIES)), dtype=np.int64)
    cdef int64_t[:, ::1] rows_v = rows
    bad = np.full(chunks, -1, dtype=np.intp)
    cdef Py_ssize_t[::1] bad_v = bad
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads_for(chunks, max_threads)):
        # float64 throughout (the common case) gets its own copy of the loop,
        # with no rounding steps in it.
        if all_double and per_unit > 0:
            bad_v[c] = even_chunk(first, step, chunk_start(n, chunks, c),
                                  chunk_start(n, chunks, c + 1), half, &k, &r,
                                  &rows_v[c, 0], DOUBLE, DOUBLE, DOUBLE, per_unit, slots_at)
        elif all_double:
            bad_v[c] = even_chunk(first, step, chunk_start(n, chunks, c),
                                  chunk_start(n, chunks, c + 1), half, &k, &r,
                                  &rows_v[c, 0], DOUBLE, DOUBLE, DOUBLE, 0.0, slots_at)
        else:
            bad_v[c] = even_chunk(first, step, chunk_start(n, chunks, c),
                                  chunk_start(n, chunks, c + 1), half, &k, &r,
                                  &rows_v[c, 0], edge_bits, diff_bits, quot_bits, 0.0,
                                  slots_at)
    return _split(fold_rows(rows, r.n + TALLIES), r.n) + (first_bad(bad_v),)


cdef Keep _keep(tuple keep, bint floating):
    cdef Keep k
    k.any_low, k.any_high = keep[0], keep[1]
    k.low_f = k.high_f = 0.0
    k.low_i = k.high_i = 0
    k.low_u = k.high_u = 0
    low = keep[2] if k.any_low else 0
    high = keep[3] if k.any_high else 0
    if floating:
        k.low_f = low if k.any_low else NAN
        k.high_f = high if k.any_high else NAN
    elif low >= 0 and high >= 0:
        k.low_u, k.high_u = low, high
        if high <= 2**63 - 1:
            k.low_i, k.high_i = low, high
    else:
        k.low_i, k.high_i = low, high
    return k


def _split(counts, Py_ssize_t n):
    return (counts[:n], int(counts[n + UNDER - 1]), int(counts[n + OVER - 1]),
            int(counts[n + NOT_A_NUMBER - 1]))


ctypedef fused edge_t:
    double
    int64_t
    uint64_t


cdef inline Py_ssize_t count_at_most(const edge_t* edges, Py_ssize_t m,
                                     edge_t x) noexcept nogil:
    """How many of the m ascending edges are <= x (m >= 1), without branches."""
    cdef Py_ssize_t base = 0, size = m, half
    while size > 1:
        half = size >> 1
        base = base + half if edges[base + half] <= x else base
        size -= half
    return base + (edges[base] <= x)


# Samples searched together: their binary searches are independent, so the
# loads of one level overlap instead of each search waiting on its own.
cdef enum:
    GROUP = 8


cdef inline void count_at_most_group(const edge_t* edges, Py_ssize_t m, const edge_t* x,
                                     Py_ssize_t* above) noexcept nogil:
    """count_at_most for GROUP samples at once, level by level (m >= 1)."""
    cdef Py_ssize_t base[GROUP]
    cdef Py_ssize_t size = m, half, j
    for j in range(GROUP):
        base[j] = 0
    while size > 1:
        half = size >> 1
        for j in range(GROUP):
            base[j] = base[j] + half if edges[base[j] + half] <= x[j] else base[j]
        size -= half
    for j in range(GROUP):
        above[j] = base[j] + (edges[base[j]] <= x[j])


cdef inline edge_t edge_value(const char* at, bint half, const edge_t* typed,
                              const sample_t* sample_type) noexcept nogil:
    """The sample at `at` in the edges' type (`typed` and `sample_type` only
    select the types)."""
    if sample_t is uint16_t:
        if half:
            return <edge_t>half_value((<const uint16_t*>at)[0])
    return <edge_t>(<const sample_t*>at)[0]


cdef inline void tally(edge_t x, Py_ssize_t above, const edge_t* edges, Py_ssize_t m,
                       bint closed_last, int64_t* row, int64_t* slots,
                       Py_ssize_t i) noexcept nogil:
    """Count sample i, x, of which `above` edges are <= x (put)."""
    cdef Py_ssize_t n = m - 1 if m else 0
    if edge_t is double:
        if x != x:
            put(row, slots, i, n + NOT_A_NUMBER - 1)
            return
    if above == 0:
        put(row, slots, i, n + UNDER - 1)
    elif above < m:
        put(row, slots, i, above - 1)
    elif closed_last and n > 0 and x <= edges[n]:
        put(row, slots, i, n - 1)
    else:
        put(row, slots, i, n + OVER - 1)


cdef inline Py_ssize_t edges_chunk(const sample_t* first, Py_ssize_t step, Py_ssize_t start,
                                   Py_ssize_t stop, bint half, const edge_t* edges,
                                   Py_ssize_t m, bint closed_last, int64_t* row,
                                   int64_t* slots) noexcept nogil:
    """Count samples[start:stop] into row (m - 1 bins, then the tallies), or
    write each one's counter to slots (put)."""
    cdef Py_ssize_t i = start, j, _i
    cdef Py_ssize_t n = m - 1 if m else 0
    cdef edge_t x[GROUP]
    cdef Py_ssize_t above[GROUP]
    cdef const char* at = <const char*>first + start * step
    memset(row, 0, (n + TALLIES) * sizeof(int64_t))
    if m:
        while i + GROUP <= stop:
            for j in range(GROUP):
                x[j] = edge_value(at + j * step, half, edges, first)
            count_at_most_group(edges, m, x, above)
            for j in range(GROUP):
                tally(x[j], above[j], edges, m, closed_last, row, slots, i + j)
            at += GROUP * step
            i += GROUP
    for _i in range(i, stop):
        x[0] = edge_value(at, half, edges, first)
        at += step
        tally(x[0], count_at_most(edges, m, x[0]) if m else 0, edges, m, closed_last, row,
              slots, _i)
    return -1


def edge_counts(const sample_t[:] samples, bint half, const edge_t[::1] edges,
                bint closed_last, Py_ssize_t max_threads, int64_t[::1] slots=None):
    """Count samples into len(edges) - 1 bins between explicit ascending edges.

    Samples are converted to the edges' type (numpy's common dtype of samples
    and edges, widened to float64, int64 or uint64 without changing any
    value). Returns (int64 counts, underflow, overflow, NaN count). With
    slots (int64, one per sample), each sample's counter is written there
    instead, and the counts come back zero.
    """
    cdef Py_ssize_t m = edges.shape[0]
    cdef Py_ssize_t n_bins = m - 1 if m else 0
    cdef Py_ssize_t n = samples.shape[0]
    cdef Py_ssize_t chunks = chunks_for(n, n_bins + TALLIES, max_threads)
    cdef const sample_t* first = &samples[0] if n else NULL
    cdef const edge_t* edges_p = &edges[0] if m else NULL
    cdef Py_ssize_t step = samples.strides[0]
    cdef Py_ssize_t c
    cdef int64_t* slots_at = &slots[0] if slots is not None and n else NULL
    rows = np.empty((chunks, padded_row(n_bins + TALLIES)), dtype=np.int64)
    cdef int64_t[:, ::1] rows_v = rows
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads_for(chunks, max_threads)):
        edges_chunk(first, step, chunk_start(n, chunks, c), chunk_start(n, chunks, c + 1),
                    half, edges_p, m, closed_last, &rows_v[c, 0], slots_at)
    return _split(fold_rows(rows, n_bins + TALLIES), n_bins)


cdef inline void span_chunk(const sample_t* first, Py_ssize_t step, Py_ssize_t start,
                            Py_ssize_t stop, bint half, double* f, int64_t* s,
                            uint64_t* u) noexcept nogil:
    """Min and max of samples[start:stop] into f[0:2] (floats, and f[2] = 1 if a NaN
    was seen), s[0:2] (signed integers) or u[0:2] (unsigned integers)."""
    cdef Py_ssize_t i = start, _i
    cdef double v, v1, v2, v3
    cdef double lo0, lo1, lo2, lo3, hi0, hi1, hi2, hi3
    cdef bint nan = False
    cdef const char* at = <const char*>first + start * step
    cdef sample_t raw
    if sample_t is float or sample_t is double:
        # Four running minima and maxima: one would wait on its own previous
        # compare every sample.
        lo0 = lo1 = lo2 = lo3 = f[0]
        hi0 = hi1 = hi2 = hi3 = f[1]
        while i + 4 <= stop:
            v = (<const sample_t*>at)[0]
            v1 = (<const sample_t*>(at + step))[0]
            v2 = (<const sample_t*>(at + 2 * step))[0]
            v3 = (<const sample_t*>(at + 3 * step))[0]
            nan |= (v != v) | (v1 != v1) | (v2 != v2) | (v3 != v3)
            lo0 = v if v < lo0 else lo0
            lo1 = v1 if v1 < lo1 else lo1
            lo2 = v2 if v2 < lo2 else lo2
            lo3 = v3 if v3 < lo3 else lo3
            hi0 = v if v > hi0 else hi0
            hi1 = v1 if v1 > hi1 else hi1
            hi2 = v2 if v2 > hi2 else hi2
            hi3 = v3 if v3 > hi3 else hi3
            at += 4 * step
            i += 4
        f[0] = min(min(lo0, lo1), min(lo2, lo3))
        f[1] = max(max(hi0, hi1), max(hi2, hi3))
        if nan:
            f[2] = 1
    for _i in range(i, stop):
        raw = (<const sample_t*>at)[0]
        at += step
        if sample_t is float or sample_t is double or sample_t is uint16_t:
            if sample_t is uint16_t:
                if not half:
                    u[0] = min(u[0], <uint64_t>raw)
                    u[1] = max(u[1], <uint64_t>raw)
                    continue
                v = half_value(raw)
            else:
                v = raw
            if v != v:
                f[2] = 1
            f[0] = v if v < f[0] else f[0]
            f[1] = v if v > f[1] else f[1]
        elif sample_t is uint64_t or sample_t is uint32_t or sample_t is uint8_t:
            u[0] = min(u[0], <uint64_t>raw)
            u[1] = max(u[1], <uint64_t>raw)
        else:
            s[0] = min(s[0], <int64_t>raw)
            s[1] = max(s[1], <int64_t>raw)


def sample_span(const sample_t[:] samples, bint half, Py_ssize_t max_threads):
    """(min, max, NaN seen) of at least one sample, as Python numbers (floats for
    float samples, NaN ignored by min and max; ints for integer samples)."""
    cdef Py_ssize_t n = samples.shape[0]
    cdef Py_ssize_t chunks = chunks_for(n, 1, max_threads)
    cdef const sample_t* first = &samples[0]
    cdef Py_ssize_t step = samples.strides[0]
    cdef Py_ssize_t c
    floats = np.empty((chunks, 3), dtype=np.float64)
    floats[:, 0], floats[:, 1], floats[:, 2] = np.inf, -np.inf, 0
    signed = np.empty((chunks, 2), dtype=np.int64)
    signed[:, 0], signed[:, 1] = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    unsigned = np.empty((chunks, 2), dtype=np.uint64)
    unsigned[:, 0], unsigned[:, 1] = np.iinfo(np.uint64).max, 0
    cdef double[:, ::1] f = floats
    cdef int64_t[:, ::1] s = signed
    cdef uint64_t[:, ::1] u = unsigned
    for c in prange(chunks, nogil=True, schedule="dynamic", chunksize=1,
                    num_threads=threads_for(chunks, max_threads)):
        span_chunk(first, step, chunk_start(n, chunks, c), chunk_start(n, chunks, c + 1), half,
                   &f[c, 0], &s[c, 0], &u[c, 0])
    if half or sample_t is float or sample_t is double:
        return float(floats[:, 0].min()), float(floats[:, 1].max()), bool(floats[:, 2].any())
    if sample_t is uint64_t or sample_t is uint32_t or sample_t is uint8_t or sample_t is uint16_t:
        return int(unsigned[:, 0].min()), int(unsigned[:, 1].max()), False
    return int(signed[:, 0].min()), int(signed[:, 1].max()), False
