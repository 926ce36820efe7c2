// Histograms of real-valued samples, bin-exactly as np.histogram bins them
// (histkit.gpu.bin_histogram). Judged by oracles.bin_histogram: the counts and
// the underflow, overflow and NaN tallies equal, bit for bit.
//
// The host (histkit.oracles._bin_rule) derives numpy's rule for a call once:
// the edges, the sample values numpy keeps and the precision of each step of
// its estimate. Each sample's bin then comes from one of two rules, and
// counting.cuh's machinery counts it into num_bins + 3 counters: the bins,
// then the samples below the first edge, above the last, and NaN.
//
// - Even bins (BIN_RULE=0): numpy estimates ((x - lo) / width) * bins, each
//   step rounded to the precision it computes it in (EDGE_BITS, DIFF_BITS,
//   QUOT_BITS: 16, 32 or 64), truncates it, then corrects it once down and
//   once up against the edges. Where the launcher has bounded that
//   estimate's error below one bin (ESTIMATE_WITHIN_ONE, the common case),
//   numpy's answer is the bin whose edges bracket the sample, found here from
//   a cheap estimate. Elsewhere (float16 arithmetic, subnormal or overflowing
//   spans) numpy's steps are taken one by one, so the kernel equals numpy
//   even where its one correction leaves a sample outside its edges; a
//   sample numpy's own code fails on is reported as a bad key at its index.
// - Edges (BIN_RULE=1): a binary search over the edges, in the type numpy
//   compares samples with them in (SEARCH_T: double, or 64-bit integers for
//   integer samples against integer edges), of which the count of edges
//   <= x gives the bin.
//
// Before either rule, the estimate alone gives most samples their bin
// (FAST_ESTIMATE): where the launcher has measured how far the estimate at
// every edge, and at the value just below it, lies from the edge's index
// (oracles._estimate.estimate_margin), a sample whose estimate lies further
// than that from its nearest integer lies between the edges its integer part
// names; no edge is read. The rest take their rule's path. counting.cuh's
// quick step (HK_QUICK_BINS) asks quick() about a whole 16-byte vector of
// samples at once and adds those the estimate alone places, and those no bin
// keeps (their tallies), straight to the shared counters.
//
// The edges live in shared memory after the counters when the launcher found
// room (EDGES_SHARED), else they are read through the read-only cache.
// Bin rules place a whole vector of samples at once where they can (quick).
#define HK_QUICK_BINS 1
#include "counting.cuh"

#ifndef BIN_RULE
#define BIN_RULE 0  // 0: even bins, 1: explicit edges
#endif
#ifndef SAMPLE_FLOAT
#define SAMPLE_FLOAT 0  // 1: KEY_T is float or double, or float16 bits (SAMPLE_HALF)
#endif
#ifndef SAMPLE_HALF
#define SAMPLE_HALF 0  // 1: KEY_T (unsigned short) holds float16 bits
#endif
#ifndef SAMPLE_SIGNED
#define SAMPLE_SIGNED 1  // integer samples: KEY_T is signed
#endif
#ifndef EDGE_BITS
#define EDGE_BITS 64
#endif
#ifndef DIFF_BITS
#define DIFF_BITS 64
#endif
#ifndef QUOT_BITS
#define QUOT_BITS 64
#endif
#ifndef SEARCH_T
#define SEARCH_T double
#endif
#ifndef ESTIMATE_WITHIN_ONE
#define ESTIMATE_WITHIN_ONE 0  // 1: numpy's estimate error is bounded below one bin (the launcher's check)
#endif
#ifndef EDGES_NEAR_EVEN
#define EDGES_NEAR_EVEN 0  // 1: explicit edges the launcher found strictly increasing and near an even grid
#endif
#ifndef FAST_ESTIMATE
#define FAST_ESTIMATE 0  // 1: the launcher's margin admits the estimate alone (the margin argument)
#endif
#if FAST_ESTIMATE && !(BIN_RULE == 0 ? ESTIMATE_WITHIN_ONE : EDGES_NEAR_EVEN)
#error "the estimate alone needs the bracketing walk's bound (ESTIMATE_WITHIN_ONE, EDGES_NEAR_EVEN)"
#endif
#ifndef FLOOR_IS_THE_BIN
#define FLOOR_IS_THE_BIN 0  // 1: the launcher's margin is FLOOR_IS_THE_BIN (every estimate's floor is its bin)
#endif
#if FLOOR_IS_THE_BIN && !FAST_ESTIMATE
#error "FLOOR_IS_THE_BIN is a margin of the estimate alone (FAST_ESTIMATE)"
#endif
#ifndef EDGES_COMPUTED
#define EDGES_COMPUTED 0  // 1: the bracketing walk computes the edges (np.linspace's formula)
#endif
#ifndef EDGES_SHARED
#define EDGES_SHARED 0  // 1: the edges are copied to shared memory after the counters
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 1024  // the launch's block (contract.FAST_BLOCK): registers are budgeted for it
#endif

// The counters after the bins (oracles._binning keeps the same order).
#define UNDER_SLOT 0
#define OVER_SLOT 1
#define NAN_SLOT 2
#define NO_SLOT 3  // a sample some bin keeps
// A counter's index: the launcher keeps num_bins + 3 below 2^32 - 1, so 32
// bits hold every counter and NUMPY_FAILS.
typedef unsigned counter_index;
// A sample numpy's even-bin code fails on: past every counter, so counting.cuh
// reports it as a bad key.
#define NUMPY_FAILS 0xffffffffu

// The launcher's flags argument.
#define CLOSED_LAST 1u       // the last bin includes its top edge (numpy); else CUB's rule
#define ANY_LOW 2u           // some sample value passes numpy's x >= lo
#define ANY_HIGH 4u          // some sample value passes numpy's x <= hi

// A sample's value for the keep test: floats in their own precision (float16
// widened to float, exactly), integers as themselves.
#if SAMPLE_HALF
typedef float sample_value;
#elif SAMPLE_FLOAT
typedef hk_key sample_value;
#elif SAMPLE_SIGNED
typedef i64 sample_value;
#else
typedef u64 sample_value;
#endif

// Edges of even bins in the precision numpy computes them in (float holds
// every float16 exactly).
#if EDGE_BITS == 64
typedef double edge_value;
#else
typedef float edge_value;
#endif

#if BIN_RULE == 0
typedef edge_value stored_edge;
#else
typedef SEARCH_T stored_edge;
#endif

// The value of the float16 with bits h, exactly.
__device__ __forceinline__ float half_value(unsigned short h) {
    const unsigned exponent = (h >> 10) & 0x1fu;
    const unsigned fraction = h & 0x3ffu;
    float magnitude;
    if (exponent == 0) {
        magnitude = (float)fraction * 5.9604644775390625e-8f;  // 2^-24, exact
    } else if (exponent == 0x1f) {
        magnitude = fraction ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000);
    } else {
        magnitude = __uint_as_float(((exponent + 112u) << 23) | (fraction << 13));
    }
    return (h & 0x8000u) ? -magnitude : magnitude;
}

__device__ __forceinline__ sample_value value_of(hk_key raw) {
#if SAMPLE_HALF
    return half_value(raw);
#else
    return (sample_value)raw;
#endif
}

// The sample as a double: exact for every dtype but 64-bit integers past
// 2^53, which round to nearest, as numpy's cast to float64 edges rounds them.
__device__ __forceinline__ double as_double(sample_value v) { return (double)v; }

// The float16 nearest to v (ties to even), as a double; NaN stays NaN.
__device__ __forceinline__ double round_half(double v) {
    const double a = fabs(v);
    if (a != a) return v;
    if (a >= 65520.0) return v > 0 ? __longlong_as_double(0x7ff0000000000000LL)
                                   : __longlong_as_double((long long)0xfff0000000000000ULL);
    if (a < 6.103515625e-05) return rint(v * 16777216.0) / 16777216.0;  // subnormal: steps of 2^-24
    int e;
    frexp(a, &e);
    const double step = ldexp(1.0, e - 11);  // 10 bits after the leading one
    return rint(v / step) * step;
}

// v (an operation's exact result, or that rounded to double) rounded to the
// precision of `bits`: double holds more than twice the bits of float and
// float16 plus two, so rounding twice is rounding once.
template <int bits>
__device__ __forceinline__ double rounded(double v) {
    if (bits == 64) return v;
    if (bits == 32) return (double)__double2float_rn(v);
    return round_half(v);
}

// Which counter a sample goes to besides a bin: numpy keeps x when x >= lo
// and x <= hi (compared as its promotion rules say), which for the sample's
// dtype is the interval [low, high] of sample values (NaN bounds: no value).
struct Keep {
    sample_value low;
    sample_value high;
    unsigned flags;

    // -1 in range, else UNDER_SLOT, OVER_SLOT or NAN_SLOT.
    __device__ __forceinline__ int slot(sample_value v) const {
#if SAMPLE_FLOAT
        if (v >= low && v <= high) return -1;
        if (v != v) return NAN_SLOT;
        return (!(flags & ANY_LOW) || v < low) ? UNDER_SLOT : OVER_SLOT;
#else
        if ((flags & ANY_LOW) && (flags & ANY_HIGH) && v >= low && v <= high) return -1;
        return (!(flags & ANY_LOW) || v < low) ? UNDER_SLOT : OVER_SLOT;
#endif
    }
};

__device__ __forceinline__ sample_value bound(u64 bits) {
#if SAMPLE_FLOAT
    return (sample_value)__longlong_as_double((long long)bits);
#else
    return (sample_value)bits;
#endif
}

// (x - lo) * per_unit, each step rounded to nearest in E: the explicit
// roundings keep the compiler from fusing the product into a later
// subtraction, which the host's margin (oracles._estimate.estimate_margin) assumes.
__device__ __forceinline__ float estimate_of(float x, float lo, float per_unit) {
    return __fmul_rn(__fsub_rn(x, lo), per_unit);
}
__device__ __forceinline__ double estimate_of(double x, double lo, double per_unit) {
    return __dmul_rn(__dsub_rn(x, lo), per_unit);
}
// floor(t) for the estimate alone, with t - floor(t) (exact): adding 1.5 x
// 2^23 (2^52 for double) rounded down leaves floor(t) in the sum's low
// mantissa bits (no conversion instruction: those issue at a quarter of the
// rate of adds on sm_90). Any t outside [0, 2^22) (2^51), and NaN, gives a
// floor past every bin: the sum's bits are monotone in t, and negative t
// wraps.
__device__ __forceinline__ u64 floor_of(float t, float& fraction) {
    const float shifted = __fadd_rd(t, 12582912.0f);
    fraction = __fsub_rn(t, __fsub_rn(shifted, 12582912.0f));
    return __float_as_uint(shifted) - 0x4B400000u;
}
__device__ __forceinline__ u64 floor_of(double t, double& fraction) {
    const double shifted = __dadd_rd(t, 6755399441055744.0);
    fraction = __dsub_rn(t, __dsub_rn(shifted, 6755399441055744.0));
    return (u64)__double_as_longlong(shifted) - 0x4338000000000000ULL;
}
// 1 - margin rounded up: a fraction below it lies further than margin from 1
// (fractions in [1/2, 1) are exact in E, and the margin is below a quarter).
__device__ __forceinline__ float one_less(float margin) { return __fsub_ru(1.0f, margin); }
__device__ __forceinline__ double one_less(double margin) { return __dsub_ru(1.0, margin); }

// The bin whose edges bracket x, from a cheap estimate (x - lo) * per_unit
// that the launcher has proven within one bin of it (oracles._estimate.
// bracket_estimate_within_one_bin): two branch-free steps, one down and one
// up, each reading one edge. 0 when x < edges[0]; last when x >= edges[last + 1].
template <typename E>
struct Bracket {
    const E* edges;
    unsigned last;  // the last bin (the launcher keeps bins below 2^32 - 3)
    E lo;           // the estimate's origin and scale, in the edges' type
    E per_unit;
    E last_e;       // last, in the edges' type
    // FAST_ESTIMATE: the estimate t of every x in [edges[i], edges[i + 1])
    // lies in [i - margin, i + 1 + margin] (the launcher measured it at each
    // edge and at the value below it; t is monotone in x). So where t is
    // further than margin from its nearest integer and floor(t) is a bin, x
    // lies in bin floor(t). Where every such t lies in [i, i + 1), the
    // margin is negative (FLOOR_IS_THE_BIN): every fraction clears it.
    E margin;
    E below_one;  // one_less(margin)
    // EDGES_COMPUTED: edge i < last + 1 is (E)(i * edge_step + edge_start),
    // each step rounded to nearest in double (np.linspace's arithmetic; the
    // launcher checked every edge against it), and edge last + 1 is top. No
    // read, where the edges would be read from global memory.
    double edge_start;
    double edge_step;
    E top;

    __device__ __forceinline__ E edge(unsigned i) const {
#if EDGES_COMPUTED
        return i > last ? top : (E)__dadd_rn(__dmul_rn((double)i, edge_step), edge_start);
#else
        return edges[i];
#endif
    }

    // x's bin from its estimate alone (FAST_ESTIMATE), or false: t's
    // fraction further than margin from both 0 and 1, and floor(t) a bin.
    // With FLOOR_IS_THE_BIN every fraction clears the (negative) margin, so
    // the test is left out: the floor alone places the sample, and it names
    // no bin for NaN and for t outside [0, last + 1).
    __device__ __forceinline__ bool estimate_alone(E x, unsigned& b) const {
        E fraction;
        const u64 whole = floor_of(estimate_of(x, lo, per_unit), fraction);
        b = (unsigned)whole;
#if FLOOR_IS_THE_BIN
        return whole <= last;
#else
        return (fraction > margin) & (fraction < below_one) & (whole <= last);
#endif
    }

    // x's bin from its estimate and one edge (FAST_ESTIMATE), or false. With
    // c the integer nearest t, a bin i holding x has t within the margin
    // (below a quarter) of [i, i + 1], so i is c - 1 or c: c where x >=
    // edges[c]. Taken where both are bins (0 < c <= last): an x below the
    // first edge has t <= margin, so c = 0, and an x at or past the top edge
    // has c > last; NaN gives c past every bin. Elsewhere edge 1, which
    // exists, is read and its answer dropped.
    __device__ __forceinline__ bool one_edge(E x, unsigned& b) const {
        E fraction;
        const u64 c = floor_of(estimate_of(x, lo, per_unit), fraction) + (fraction >= (E)0.5);
        const bool both_bins = c - 1 < (u64)last;
        const unsigned at = both_bins ? (unsigned)c : 1u;
        b = at - (x < edge(at));
        return both_bins;
    }

    // estimate_alone over counting.cuh's vector of keys, each taken to E by
    // as_edge_type: bit j set where it names key j's bin (bins[j]). A key
    // whose estimate lies within the margin of an integer (0.1% of uniform
    // float32 samples over 65536 bins of (-0.1, 1.3)) then takes one_edge, so
    // a vector rarely leaves a key to the full rule.
    template <typename AsEdgeType>
    __device__ __forceinline__ unsigned estimate_vector(const hk_key* raw, unsigned* bins,
                                                        AsEdgeType as_edge_type) const {
        constexpr unsigned all = (1u << PER_VECTOR) - 1;
        // The common answer (every key placed) from the tests alone: the
        // mask of placed keys is built only where some key is not.
        bool placed_key[PER_VECTOR];
        bool every_key = true;
#pragma unroll
        for (int j = 0; j < PER_VECTOR; ++j) {
            placed_key[j] = estimate_alone(as_edge_type(raw[j]), bins[j]);
            every_key &= placed_key[j];
        }
        if (every_key) return all;
        unsigned placed = 0;
#pragma unroll
        for (int j = 0; j < PER_VECTOR; ++j) placed |= (unsigned)placed_key[j] << j;
#pragma unroll
        for (int j = 0; j < PER_VECTOR; ++j) {
            if (!placed_key[j]) placed |= (unsigned)one_edge(as_edge_type(raw[j]), bins[j]) << j;
        }
        return placed;
    }

    __device__ __forceinline__ counter_index operator()(E x) const {
        const E estimate = estimate_of(x, lo, per_unit);
        // 32-bit conversion and index arithmetic: a 64-bit float-to-integer
        // conversion costs several times more issue slots on sm_90.
        unsigned b = !(estimate >= (E)1) ? 0u
                     : (estimate >= last_e ? last : (unsigned)estimate);
        b -= (b > 0u && x < edge(b));
        b += (b < last && x >= edge(b + 1));
        return b;
    }
};

struct EvenBins {
    const stored_edge* edges;  // num_bins + 1
    u64 num_bins;
    Keep keep;
    double lo, width, scale;
    double top;  // min(num_bins, 2^52): estimates below it are inside the bins
    Bracket<edge_value> bracket;
    edge_value first_edge, top_edge;

    // The sample in the edges' precision (numpy casts it so before comparing).
    static __device__ __forceinline__ edge_value to_edge(sample_value v) {
        if constexpr (SAMPLE_FLOAT && !SAMPLE_HALF && sizeof(sample_value) == sizeof(edge_value)) {
            return v;  // a float or double sample against edges of its own type
        } else {
            return (edge_value)rounded<EDGE_BITS>(as_double(v));
        }
    }

    // numpy's bin for an in-range sample xe (cast to the edges' precision)
    // whose estimate f lies outside [0, num_bins): its steps in full, Python's
    // negative indexing included. num_bins (the top edge under CUB's rule)
    // is returned as is; NUMPY_FAILS where numpy's code raises.
    __device__ __noinline__ u64 outside(edge_value xe, double f, bool closed_last) const {
        const i64 n = (i64)num_bins;
        i64 b = (f >= -9.223372036854775808e18 && f < 9.223372036854775808e18)
                    ? (i64)f : (i64)0x8000000000000000ULL;
        if (b == n) b = n - 1;
        if (b < -(n + 1) || b > n) return NUMPY_FAILS;
        if (xe < edges[b < 0 ? b + n + 1 : b]) b -= 1;
        const i64 up = b + 1;
        if ((b != n - 1 || !closed_last) && xe >= edges[up < 0 ? up + n + 1 : up]) b += 1;
        return b < 0 ? NUMPY_FAILS : (u64)b;
    }

    // counting.cuh's vector of keys at once: bit j set where the estimate
    // alone names key j's bin (bins[j]), or where key j lies outside the
    // kept interval (bins[j] its tally's counter, as operator() names it).
    __device__ __forceinline__ unsigned quick(const hk_key* raw, unsigned* bins) const {
#if FAST_ESTIMATE
        unsigned placed = bracket.estimate_vector(
            raw, bins, [](hk_key r) { return (edge_value)value_of(r); });
        if (placed != (1u << PER_VECTOR) - 1) placed |= tally_vector(raw, bins, placed);
        return placed;
#else
        (void)raw, (void)bins;
        return 0;
#endif
    }

    // The keys quick's estimate left that no bin keeps (beyond the range, or
    // NaN): bit j set, bins[j] the tally's counter. Without it one such key
    // in a vector (0.09% of normal samples over (0, 1)) sends the vector's
    // lane through operator() while its warp waits.
    __device__ __forceinline__ unsigned tally_vector(const hk_key* raw, unsigned* bins,
                                                     unsigned placed) const {
        unsigned tallied = 0;
#pragma unroll
        for (int j = 0; j < PER_VECTOR; ++j) {
            const int slot = keep.slot(value_of(raw[j]));
            if (!((placed >> j) & 1u) && slot >= 0) {
                bins[j] = (unsigned)num_bins + (unsigned)slot;
                tallied |= 1u << j;
            }
        }
        return tallied;
    }

    __device__ __forceinline__ counter_index operator()(hk_key raw) const {
        const sample_value v = value_of(raw);
#if FAST_ESTIMATE
        // The launcher enables it only for samples of the edges' type, whose
        // kept interval holds [edges[0], edges[num_bins]).
        unsigned fast_bin;
        if (bracket.estimate_alone(v, fast_bin)) return fast_bin;
#endif
        const int slot = keep.slot(v);
        if (slot >= 0) return num_bins + slot;
        const bool closed_last = keep.flags & CLOSED_LAST;
#if ESTIMATE_WITHIN_ONE
        return bracketed(v, closed_last);
#else
        return numpy_steps(v, closed_last);
#endif
    }

    // With ESTIMATE_WITHIN_ONE the launcher has bounded numpy's estimate
    // error below one bin (policy.numpy_estimate_within_one_bin): numpy's two
    // corrections then always end in the bin whose edges bracket the sample,
    // which a cheap estimate finds (bracket).
    __device__ __forceinline__ counter_index bracketed(sample_value v, bool closed_last) const {
        const edge_value xe = to_edge(v);
        const counter_index b = bracket(xe);
        if (xe < first_edge) return NUMPY_FAILS;  // numpy's index would be -1
        if (b == bracket.last && xe >= top_edge) return closed_last ? b : num_bins + OVER_SLOT;
        return b;
    }

    // numpy's own steps: its estimate in its precisions, truncated, then its
    // one correction down and one up.
    __device__ __forceinline__ counter_index numpy_steps(sample_value v, bool closed_last) const {
        u64 b;
#if EDGE_BITS == 32 && DIFF_BITS == 32 && QUOT_BITS == 32
        // float32 throughout: the float operations round as numpy's loops do.
        const float xe = (float)as_double(v);
        const float f = __fmul_rn(__fdiv_rn(__fsub_rn(xe, (float)lo), (float)width), (float)scale);
        if (!(f >= 0.0f && (double)f < top)) b = outside(xe, f, closed_last);
#elif EDGE_BITS == 64 && DIFF_BITS == 64 && QUOT_BITS == 64
        const double xe = as_double(v);
        const double f = __dmul_rn(__ddiv_rn(__dsub_rn(xe, lo), width), scale);
        if (!(f >= 0.0 && f < top)) b = outside(xe, f, closed_last);
#else
        const edge_value xe = (edge_value)rounded<EDGE_BITS>(as_double(v));
        const double d = rounded<DIFF_BITS>(__dsub_rn((double)xe, lo));
        const double f = rounded<QUOT_BITS>(__dmul_rn(rounded<QUOT_BITS>(__ddiv_rn(d, width)), scale));
        if (!(f >= 0.0 && f < top)) b = outside(xe, f, closed_last);
#endif
        else {
            // After a step down the step up cannot happen: it would compare
            // with the edge just found above the sample.
            b = (u64)f;
            if (xe < edges[b]) {
                b = b > 0 ? b - 1 : NUMPY_FAILS;
            } else if ((b != num_bins - 1 || !closed_last) && xe >= edges[b + 1]) {
                b += 1;
            }
        }
        return (counter_index)(b == num_bins ? num_bins + OVER_SLOT : b);
    }
};

struct EdgeBins {
    const stored_edge* edges;  // num_bins + 1, not decreasing
    u64 num_bins;
    unsigned flags;
#if EDGES_NEAR_EVEN
    Bracket<SEARCH_T> bracket;
    SEARCH_T first_edge, top_edge;
#endif

    // As EvenBins::quick, for edges near an even grid.
    __device__ __forceinline__ unsigned quick(const hk_key* raw, unsigned* bins) const {
#if EDGES_NEAR_EVEN && FAST_ESTIMATE
        const auto as_search = [](hk_key r) { return (SEARCH_T)as_double(value_of(r)); };
        unsigned placed = bracket.estimate_vector(raw, bins, as_search);
        if (placed != (1u << PER_VECTOR) - 1) {
            // Outside the edges, as operator() counts it (the top edge
            // itself, in the last bin or not, is left to it).
#pragma unroll
            for (int j = 0; j < PER_VECTOR; ++j) {
                const SEARCH_T x = as_search(raw[j]);
                const unsigned slot = x != x ? NAN_SLOT
                                    : x < first_edge ? UNDER_SLOT
                                    : x > top_edge ? OVER_SLOT : NO_SLOT;
                if (!((placed >> j) & 1u) && slot != NO_SLOT) {
                    bins[j] = (unsigned)num_bins + slot;
                    placed |= 1u << j;
                }
            }
        }
        return placed;
#else
        (void)raw, (void)bins;
        return 0;
#endif
    }

    __device__ __forceinline__ counter_index operator()(hk_key raw) const {
#if SAMPLE_FLOAT
        const SEARCH_T x = (SEARCH_T)as_double(value_of(raw));
        if (x != x) return num_bins + NAN_SLOT;
#else
        const SEARCH_T x = (SEARCH_T)raw;
#endif
#if EDGES_NEAR_EVEN
#if FAST_ESTIMATE
        unsigned fast_bin;
        if (bracket.estimate_alone(x, fast_bin)) return fast_bin;
#endif
        // Strictly increasing edges close to an even grid (the launcher's
        // check): the bracketing bin from an estimate, no search.
        if (x < first_edge) return num_bins + UNDER_SLOT;
        if (x >= top_edge) {
            return ((flags & CLOSED_LAST) && x == top_edge) ? num_bins - 1
                                                           : num_bins + OVER_SLOT;
        }
        return bracket(x);
#endif
        // How many edges are <= x, without branches: its bin is one less.
        const u64 count = num_bins + 1;
        u64 base = 0;
        for (u64 size = count; size > 1;) {
            const u64 half = size >> 1;
            base = edges[base + half] <= x ? base + half : base;
            size -= half;
        }
        const u64 above = base + (edges[base] <= x);
        if (above == 0) return num_bins + UNDER_SLOT;
        if (above < count) return above - 1;
        if ((flags & CLOSED_LAST) && num_bins > 0 && x <= edges[num_bins]) return num_bins - 1;
        return num_bins + OVER_SLOT;
    }
};

#if BIN_RULE == 0
typedef EvenBins BinRule;
#else
typedef EdgeBins BinRule;
#endif

// The call's rule over rule_edges (in shared or global memory), from the
// kernels' arguments (bin_histogram's comment below).
__device__ __forceinline__ BinRule make_rule(const stored_edge* rule_edges, u64 num_bins,
                                             unsigned flags, double lo, double width,
                                             double scale, u64 keep_low, u64 keep_high,
                                             double margin, double edge_start,
                                             double edge_step) {
#if BIN_RULE == 0
    const Keep keep{bound(keep_low), bound(keep_high), flags};
    const Bracket<edge_value> bracket{rule_edges, (unsigned)(num_bins - 1), (edge_value)lo,
                                      (edge_value)(scale / width), (edge_value)(num_bins - 1),
                                      (edge_value)margin, one_less((edge_value)margin), edge_start, edge_step,
                                      rule_edges[num_bins]};
    return EvenBins{rule_edges, num_bins, keep, lo, width, scale,
                    (double)(num_bins < (1ULL << 52) ? num_bins : (1ULL << 52)), bracket,
                       rule_edges[0], rule_edges[num_bins]};
#elif EDGES_NEAR_EVEN
    (void)keep_low, (void)keep_high;
    const Bracket<SEARCH_T> bracket{rule_edges, (unsigned)(num_bins - 1), (SEARCH_T)lo,
                                    (SEARCH_T)(scale / width), (SEARCH_T)(num_bins - 1),
                                    (SEARCH_T)margin, one_less((SEARCH_T)margin), edge_start, edge_step,
                                    rule_edges[num_bins]};
    return EdgeBins{rule_edges, num_bins, flags, bracket, rule_edges[0], rule_edges[num_bins]};
#else
    (void)lo, (void)width, (void)scale, (void)keep_low, (void)keep_high, (void)margin,
        (void)edge_start, (void)edge_step;
    return EdgeBins{rule_edges, num_bins, flags};
#endif
}

// samples[0, n) into hist[0, num_bins + 3). The arguments after first_bad are
// the rule: the edges (num_bins + 1 of them), the flags above, numpy's lo,
// width and scale as doubles (even bins), the kept sample values' bounds
// (double bits for float samples, the integer's bits otherwise), and the
// margin FAST_ESTIMATE trusts (a value of the edges' type, as a double), and
// the start and step of np.linspace's formula that EDGES_COMPUTED follows.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
bin_histogram(const hk_key* samples, i64 n, u64 num_bins, i64 head, u64 shared_bins, u64* hist,
              u64* first_bad, const stored_edge* edges, unsigned flags, double lo, double width,
              double scale, u64 keep_low, u64 keep_high, double margin, double edge_start,
              double edge_step) {
    extern __shared__ unsigned counters[];
    hk_skew_warps();
    const u64 stride = hk_copy_stride(shared_bins);
    // The edges follow the counters, 8-byte aligned.
    const u64 counter_words = (COPIES * stride + 1) & ~(u64)1;
    const u64 edge_count = num_bins + 1;
    hk_require_dynamic_shared(counter_words * sizeof(unsigned) +
                              (EDGES_SHARED ? edge_count * sizeof(stored_edge) : 0));
#if EDGES_SHARED
    // Known at compile time, so every edge read is a shared-memory load.
    stored_edge* shared_edges = (stored_edge*)(counters + counter_words);
    for (u64 j = threadIdx.x; j < edge_count; j += blockDim.x) shared_edges[j] = edges[j];
    const stored_edge* rule_edges = shared_edges;
#else
    (void)edge_count;
    const stored_edge* rule_edges = edges;
#endif
    hk_zero_counters(counters, stride);
    const unsigned copy = (threadIdx.x & 31) / (32 / COPIES);
    const u64 counters_total = num_bins + 3;
    Counters add{counters + copy * stride, shared_bins, hk_low_bins(shared_bins), hist,
                 counters_total, first_bad};
    const BinRule bin = make_rule(rule_edges, num_bins, flags, lo, width, scale, keep_low,
                                  keep_high, margin, edge_start, edge_step);
#if COALESCED
    (void)head;
    for_each_key_coalesced(samples, n, bin, add);
#else
    for_each_run(samples, n, head, bin, add);
#endif
    add.flush();
    hk_merge_counters(counters, shared_bins, stride, hist, 0u);
}

// Each sample's counter, for the weighted histogram of real-valued samples
// (gpu.bin_histogram with weights): bins[i] = the bin, or num_bins + the
// tally's slot, of samples[i]; 0xffffffff where numpy's own code fails (the
// weighted kernel then names the first such index as a bad key). The
// arguments after bins are bin_histogram's; the edges are read from global
// memory.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
bin_indices(const hk_key* samples, i64 n, u64 num_bins, unsigned* bins, const stored_edge* edges,
            unsigned flags, double lo, double width, double scale, u64 keep_low, u64 keep_high,
            double margin, double edge_start, double edge_step) {
    const BinRule bin = make_rule(edges, num_bins, flags, lo, width, scale, keep_low, keep_high,
                                  margin, edge_start, edge_step);
    const u64 counters = num_bins + 3;
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        const u64 b = bin(samples[i]);
        bins[i] = b < counters ? (unsigned)b : 0xffffffffu;
    }
}
