# Exact sums of weights as integers in units of 2^-1074, kept in 32-bit chunks.
#
# Every weight is an integer multiple of 2^-1074 (the smallest subnormal
# double): a float64 is ``m * 2^(p - 1074)`` with an integer m < 2^53 and
# 0 <= p <= 2045, a float32 the same with p >= 925, an int64 ``x * 2^1074``.
# So a bin's sum is one integer in units of 2^-1074, kept exactly in 32-bit
# chunks (chunk i holds the bits [32 i, 32 i + 32) of it) stored in int64
# slots: the 32 spare bits of each slot absorb the adds between carries.
# Adding is integer addition, which is associative, so any split of the
# weights, merged by adding chunks, gives the same integer; the one rounding
# to float64 at the end is done in integer arithmetic too (round half to
# even), so neither the FPU's rounding mode nor flush-to-zero can touch it.
# Both weighted-sum paths (_weighted: rows of chunks per bin; _weighted_wide:
# two 128-bit integers per bin) finish here.
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy


# The weight types summed in place; float16 and narrower integers are widened
# to float32, int64 or uint64 (exactly) before they get here.
ctypedef fused weight_t:
    float
    double
    int64_t
    uint64_t


cdef extern from *:
    """
    #define HK_LOW32 0xFFFFFFFFull
    #define HK_FRACTION64 0xFFFFFFFFFFFFFull
    #define HK_NAN_BITS 0x7FF8000000000000ull
    #define HK_INF_BITS 0x7FF0000000000000ull
    #define HK_SIGN_BIT 0x8000000000000000ull
    """
    int __builtin_clzll(unsigned long long) nogil
    const uint64_t LOW32 "HK_LOW32"
    const uint64_t FRACTION64 "HK_FRACTION64"  # the 52 fraction bits of a float64
    const uint64_t NAN_BITS "HK_NAN_BITS"
    const uint64_t INF_BITS "HK_INF_BITS"
    const uint64_t SIGN_BIT "HK_SIGN_BIT"


cdef enum:
    # Absolute chunk indices (chunk i: bits [32 i, 32 i + 32) of the sum in units
    # of 2^-1074) each weight type's rows span. A float64 adds to chunks
    # p >> 5 .. (p >> 5) + 2 <= 65, a float32 to (p >> 5) .. (p >> 5) + 1 with
    # 28 <= p >> 5 <= 36, an integer to chunks 33, 34 and 35. The chunk above
    # those only takes carries and keeps the sign: holding 63 bits, it leaves
    # room for more than 2^60 weights of the largest magnitude.
    DOUBLE_LO = 0
    DOUBLE_TOP = 66
    FLOAT_LO = 28
    FLOAT_TOP = 38
    INT_LO = 33
    INT_TOP = 36
    # Chunks are kept in [0, 2^32) between carries (the top one signed) and an
    # add puts less than 2^32 into each chunk, so an int64 slot takes 2^31 - 2
    # adds before it must be carried.
    ADDS_BEFORE_CARRY = 2147483646  # 2^31 - 2
    # Bits of a bin's special flags: a NaN, a +inf, a -inf among its weights.
    SAW_NAN = 1
    SAW_POS_INF = 2
    SAW_NEG_INF = 4
    # add_weight's answer for a float outside a window's chunks (not a flag).
    OUTSIDE = 8
    # Work sharing of both weighted paths: below this many weights per worker
    # (or per handed-out chunk of work), starting threads costs more than it
    # saves.
    MIN_WEIGHTS_PER_WORKER = 1 << 16
    MIN_WEIGHTS_PER_CHUNK = 1 << 15
    CHUNKS_PER_WORKER = 8


cdef inline Py_ssize_t split_weights(Py_ssize_t n, Py_ssize_t slots, Py_ssize_t most,
                                     Py_ssize_t* chunks) noexcept nogil:
    """How many workers (at most `most`) share n weights, each with its own
    table of `slots` int64 slots: a worker must have enough weights to pay for
    zeroing and merging its table. chunks[0] is set to the chunks of work
    they take in turn (1 when serial)."""
    cdef Py_ssize_t workers = max(1, min(most, n // max(MIN_WEIGHTS_PER_WORKER, slots)))
    chunks[0] = 1
    if workers > 1:
        chunks[0] = max(workers, min(CHUNKS_PER_WORKER * workers, n // MIN_WEIGHTS_PER_CHUNK))
    return workers


cdef inline Py_ssize_t chunk_lo(const weight_t* tag) noexcept nogil:
    if weight_t is double:
        return DOUBLE_LO
    elif weight_t is float:
        return FLOAT_LO
    else:
        return INT_LO


cdef inline Py_ssize_t chunk_top(const weight_t* tag) noexcept nogil:
    """Index, relative to chunk_lo, of the signed top chunk."""
    if weight_t is double:
        return DOUBLE_TOP - DOUBLE_LO
    elif weight_t is float:
        return FLOAT_TOP - FLOAT_LO
    else:
        return INT_TOP - INT_LO


cdef inline Py_ssize_t chunks_written(const weight_t* tag) noexcept nogil:
    """Chunks one weight adds to: its lowest, and the next ones."""
    return 2 if weight_t is float else 3


cdef inline Py_ssize_t row_len(const weight_t* tag) noexcept nogil:
    """int64 slots per bin: the chunks, then the special flags."""
    return chunk_top(tag) + 2


cdef inline int64_t signed_part(uint64_t part, int64_t negative) noexcept nogil:
    # part when negative == 0, -part when negative == -1 (branch-free).
    return (<int64_t>part ^ negative) - negative


# A float weight as mantissa * 2^(p - 1074): the mantissa with its implicit
# bit, p, and the sign bit. NaN and infinities come out with the top p (2046
# for a float64, 1179 for a float32), past every finite weight's, and with
# the implicit bit; special says which they are and fraction (nonzero for a
# NaN) tells them apart.
cdef struct FloatParts:
    uint64_t mantissa
    uint64_t p
    uint64_t negative  # 1: the weight's sign bit is set
    uint64_t fraction  # the stored fraction bits
    bint special  # NaN or an infinity


cdef inline FloatParts float_parts(const char* at, const weight_t* tag) noexcept nogil:
    """The float32 or float64 stored at `at`, decoded (the one place both
    weighted paths read a float's bits)."""
    cdef FloatParts out
    cdef uint64_t bits, exponent, normal
    cdef uint32_t bits32
    if weight_t is double:
        memcpy(&bits, at, 8)
        exponent = (bits >> 52) & 0x7FF
        out.fraction = bits & FRACTION64
        out.special = exponent == 0x7FF
        normal = exponent != 0
        out.mantissa = out.fraction | (normal << 52)
        out.p = exponent - normal
        out.negative = bits >> 63
    else:
        memcpy(&bits32, at, 4)
        exponent = (bits32 >> 23) & 0xFF
        out.fraction = bits32 & 0x7FFFFF
        out.special = exponent == 0xFF
        normal = exponent != 0
        out.mantissa = out.fraction | (normal << 23)
        out.p = exponent - normal + (1074 - 149)
        out.negative = bits32 >> 31
    return out


cdef inline Py_ssize_t add_weight(int64_t* chunks, const char* at, Py_ssize_t base,
                                  Py_ssize_t last, const weight_t* tag) noexcept nogil:
    """Add the weight stored at `at` to the chunks (chunks[0] is absolute
    chunk `base`; a float's lowest chunk written may be at most `last`).

    Returns the relative index of the lowest chunk written (every write lands
    in it and the next two), or minus the special flag for a NaN or an
    infinity, which writes nothing, or -OUTSIDE for a float whose chunks lie
    outside [base, base + last + 2], which writes nothing either (a zero
    writes nothing and returns 0).
    """
    cdef uint64_t mantissa, shifted_low, shifted_high
    cdef int64_t negative, x
    cdef unsigned int s
    cdef Py_ssize_t c
    cdef FloatParts parts
    if weight_t is int64_t or weight_t is uint64_t:
        # x * 2^1074: bit 0 of x lands on bit 18 of chunk 33, so x spans
        # 14 bits of chunk 33, 32 of chunk 34 and the rest (signed) in 35.
        memcpy(&x, at, 8)
        chunks[0] += <int64_t>((<uint64_t>x << 18) & LOW32)
        chunks[1] += <int64_t>((<uint64_t>x >> 14) & LOW32)
        if weight_t is int64_t:
            chunks[2] += x >> 46
        else:
            chunks[2] += <int64_t>(<uint64_t>x >> 46)
        return 0
    else:
        parts = float_parts(at, tag)
        if parts.special:
            if parts.fraction:
                return -SAW_NAN
            return -SAW_NEG_INF if parts.negative else -SAW_POS_INF
        mantissa = parts.mantissa
        negative = -<int64_t>parts.negative
        s = parts.p & 31
        c = <Py_ssize_t>(parts.p >> 5) - base
        if <uint64_t>c > <uint64_t>last:  # below base too (c < 0 wraps)
            return 0 if mantissa == 0 else -OUTSIDE
        # mantissa << s, up to 84 bits, as three 32-bit parts (two for a float32).
        shifted_low = (mantissa << s) & LOW32
        shifted_high = mantissa >> (32 - s)
        chunks[c] += signed_part(shifted_low, negative)
        chunks[c + 1] += signed_part(shifted_high & LOW32, negative)
        if weight_t is double:
            chunks[c + 2] += signed_part(shifted_high >> 32, negative)
        return c


cdef inline void carry(int64_t* chunks, Py_ssize_t lo, Py_ssize_t top) noexcept nogil:
    """Bring chunks lo .. top - 1 into [0, 2^32), carrying into the (signed) top."""
    cdef Py_ssize_t i
    cdef int64_t up
    for i in range(lo, top):
        up = chunks[i] >> 32  # floor division by 2^32 (arithmetic shift)
        chunks[i] &= <int64_t>LOW32
        chunks[i + 1] += up


cdef inline int bit_length(uint64_t v) noexcept nogil:
    return 64 - __builtin_clzll(v) if v else 0


cdef inline uint64_t special_bits(int64_t specials) noexcept nogil:
    if specials & SAW_NAN or (specials & SAW_POS_INF and specials & SAW_NEG_INF):
        return NAN_BITS
    return INF_BITS | (SIGN_BIT if specials & SAW_NEG_INF else 0)


cdef inline double round_chunks(int64_t* chunks, Py_ssize_t lo, Py_ssize_t top,
                                Py_ssize_t base, int64_t specials) noexcept nogil:
    """The exact sum in chunks[lo .. top], rounded once to float64; clears them.

    chunks[0] is absolute chunk `base`; chunks outside [lo, top] are zero, and
    chunks[top] is the signed top. NaN and infinities (the flags in `specials`)
    follow IEEE addition. Round half to even; a magnitude that rounds to 2^1024
    or beyond is infinite; an exact zero is +0.0.
    """
    cdef Py_ssize_t i, t
    cdef uint64_t negative = 0, v, below, window, mantissa, rest, bits
    cdef int nb, spill
    cdef int64_t position  # of the leading bit, in units of 2^-1074
    cdef bint sticky
    cdef double result
    if specials:
        bits = special_bits(specials)
    else:
        carry(chunks, lo, top)
        if chunks[top] < 0:
            negative = SIGN_BIT
            for i in range(lo, top + 1):
                chunks[i] = -chunks[i]
            carry(chunks, lo, top)
        t = top
        while t >= lo and chunks[t] == 0:
            t -= 1
        if t < lo:
            bits = 0
        else:
            v = <uint64_t>chunks[t]
            nb = bit_length(v)  # up to 32, or 63 in the top chunk
            position = 32 * (t + base) + nb - 1
            if position >= 1074 + 1024:
                bits = INF_BITS
            elif position <= 52:
                # Below 2^53 units (then t + base <= 1, and base == 0): exactly a
                # subnormal or the lowest binade of normals, whose bit pattern is
                # the integer itself.
                bits = v << (32 * (t + base))
                if t > lo:
                    bits |= <uint64_t>chunks[t - 1]
            else:
                # The leading 64 bits (position down to position - 63) in
                # window, every bit below them folded into sticky.
                below = <uint64_t>chunks[t - 1] if t - 1 >= lo else 0
                if nb > 32:
                    spill = nb - 32  # low bits of chunk t - 1 left out of window
                    window = (v << (64 - nb)) | (below >> spill)
                    sticky = (below & ((<uint64_t>1 << spill) - 1)) != 0
                    t += 1  # chunks below t - 2 go to sticky
                else:
                    window = (v << (64 - nb)) | (below << (32 - nb))
                    below = <uint64_t>chunks[t - 2] if t - 2 >= lo else 0
                    window |= below >> nb
                    sticky = (below & ((<uint64_t>1 << nb) - 1)) != 0
                for i in range(lo, t - 2):
                    sticky |= chunks[i] != 0
                mantissa = window >> 11
                rest = window & 0x7FF
                if rest > 0x400 or (rest == 0x400 and (sticky or mantissa & 1)):
                    mantissa += 1  # to 2^53 at most: the exponent field absorbs it
                # mantissa * 2^(position - 52 - 1074): biased exponent position - 51.
                bits = (<uint64_t>(position - 52) << 52) + mantissa
                if bits >= INF_BITS:
                    bits = INF_BITS
            bits |= negative
    for i in range(lo, top + 1):
        chunks[i] = 0
    memcpy(&result, &bits, 8)
    return result
