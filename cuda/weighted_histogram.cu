// Weighted histograms with exact per-bin sums (histkit.gpu.histogram with
// weights=). Judged by oracles.histogram(keys, num_bins, weights): each bin
// equal, bit for bit, to the exact sum of its weights rounded once to float64.
//
// The sum is kept as oracles._weighted keeps it: one integer in units of
// 2^-1074 (every float32 and float64 is an integer multiple of it), in
// 32-bit chunks; chunk j holds bits [32 j, 32 j + 32). A bin's row in global
// memory is the oracle's row: chunks CHUNK_LO .. CHUNK_TOP in int64 slots
// (the top one signed, the others brought into [0, 2^32) by carry), then a
// slot of IEEE special flags. Integer addition is associative, so neither
// the order of the adds nor the grid changes a bit of the result.
//
// accumulate_weights: a weight is its 24- or 53-bit mantissa shifted within
// a chunk, two or three parts below 2^32 each, added as signed int64s: no
// carries until the end. Each block keeps, in shared memory, COPIES copies of
// the chunks SHARED_LO .. SHARED_LO + SHARED_CHUNKS - 1 of every bin (every
// chunk a weight can reach when the rows fit; else a window around the
// magnitudes of everyday weights; else none), lane l adding to copy
// l % COPIES, so lanes hitting one bin hit different words. Parts outside the
// window go straight to the global rows. Each warp walks a span of its own,
// 32 consecutive weights at a time, and each thread sums a run of weights of
// one bin in registers (Run) until the bin changes: all-equal and sorted keys
// cost a few atomics a thread, not one per weight. At the end the block adds
// its copies into the global rows.
//
// Bounds (the launcher keeps them): a launch adds at most MAX_LAUNCH_WEIGHTS
// (2^28) weights, each less than 2^32 in magnitude to any one slot, so no
// int64 slot (registers, shared or global) passes 2^62 before carry_rows
// (run between launches) brings the global chunks back below 2^32.
//
// round_rows: one thread a bin carries its row and rounds it to float64 in
// integer arithmetic (round half to even), as oracles._weighted's
// round_chunks does; NaN and infinite weights follow IEEE addition.
#include "common.cuh"

#ifndef WEIGHT_DOUBLE
#define WEIGHT_DOUBLE 0  // 1: float64 weights, else float32
#endif
// The row's chunks (absolute indices) and the special flags: oracles._weighted
// defines them; the host passes them.
#ifndef CHUNK_LO
#define CHUNK_LO 28
#endif
#ifndef CHUNK_TOP
#define CHUNK_TOP 38
#endif
#ifndef SAW_NAN
#define SAW_NAN 1
#endif
#ifndef SAW_POS_INF
#define SAW_POS_INF 2
#endif
#ifndef SAW_NEG_INF
#define SAW_NEG_INF 4
#endif
// The chunks each block keeps in shared memory (absolute first, count: 0 for
// none), and how many copies (a power of two up to 32).
#ifndef SHARED_LO
#define SHARED_LO CHUNK_LO
#endif
#ifndef SHARED_CHUNKS
#define SHARED_CHUNKS (CHUNK_TOP - CHUNK_LO + 1)
#endif
#ifndef COPIES
#define COPIES 1
#endif
#ifndef WEIGHTS_PER_THREAD
#define WEIGHTS_PER_THREAD 4  // loads issued before the first add (memory-level parallelism)
#endif
#ifndef MIN_SPAN
#define MIN_SPAN 1  // weights a warp's span holds at least (more: longer runs at small n)
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 1024  // the launch's block (contract.FAST_BLOCK)
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM the registers are budgeted for
#endif

#if WEIGHT_DOUBLE
typedef double hk_weight;
#define PARTS 3  // a 53-bit mantissa shifted by up to 31 bits spans three chunks
#else
typedef float hk_weight;
#define PARTS 2
#endif
#ifndef RUN_SLOTS
#define RUN_SLOTS (PARTS + 2)  // chunks of a thread's run held in registers (0: no runs)
#endif

#define ROW (CHUNK_TOP - CHUNK_LO + 2)  // int64 slots of a global row
#define FLAGS_SLOT (CHUNK_TOP - CHUNK_LO + 1)
#define SHARED_ROW (SHARED_CHUNKS + 1)  // int64 slots of a bin in shared memory: chunks, flags
#define LOW32 0xffffffffULL

// Slots of one copy: its bins' rows, padded to an odd count so that the same
// slot of different copies falls on different banks.
__host__ __device__ constexpr u64 copy_stride(u64 num_bins) {
    return (num_bins * SHARED_ROW) | 1;
}

// One weight as the integer parts it adds: magnitude mantissa * 2^s at chunk
// `chunk` (absolute), in 32-bit parts; or a special flag for NaN and infinities.
struct WeightParts {
    u64 part[PARTS];
    unsigned chunk;
    unsigned negative;
    unsigned special;  // SAW_* flag, or 0
};

__device__ __forceinline__ WeightParts parts_of(hk_weight w) {
    WeightParts out;
#if WEIGHT_DOUBLE
    const u64 bits = (u64)__double_as_longlong(w);
    const unsigned exponent = (unsigned)(bits >> 52) & 0x7ffu;
    const u64 fraction = bits & 0xfffffffffffffULL;
    const bool sign = bits >> 63;
    const bool special = exponent == 0x7ffu;
    const unsigned normal = exponent != 0;
    const u64 mantissa = fraction | ((u64)normal << 52);
    const unsigned p = exponent - normal;  // value = mantissa * 2^(p - 1074)
#else
    const unsigned bits = __float_as_uint(w);
    const unsigned exponent = (bits >> 23) & 0xffu;
    const u64 fraction = bits & 0x7fffffu;
    const bool sign = bits >> 31;
    const bool special = exponent == 0xffu;
    const unsigned normal = exponent != 0;
    const u64 mantissa = fraction | ((u64)normal << 23);
    const unsigned p = exponent - normal + (1074 - 149);
#endif
    out.special = !special ? 0u : (fraction ? SAW_NAN : (sign ? SAW_NEG_INF : SAW_POS_INF));
    const unsigned s = p & 31u;
    out.chunk = p >> 5;
    out.negative = sign;
    // mantissa << s, as 32-bit parts (a float32's fits two, a float64's three).
    const u64 high = mantissa >> (32 - s);
    out.part[0] = special ? 0 : (mantissa << s) & LOW32;
    out.part[1] = special ? 0 : high & LOW32;
#if WEIGHT_DOUBLE
    out.part[2] = special ? 0 : high >> 32;
#endif
    return out;
}

__device__ __forceinline__ i64 signed_part(u64 part, unsigned negative) {
    return negative ? -(i64)part : (i64)part;
}

// Where a thread's adds go: its copy of the block's shared slots for the
// chunks of the window, the global rows for the rest.
struct Sink {
    i64* slots;  // this thread's copy: SHARED_ROW per bin
    i64* rows;   // ROW per bin

    // Adds v (|v| < 2^62) times 2^(32 j) to bin b (j: an absolute chunk).
    __device__ __forceinline__ void add(u64 b, unsigned j, i64 v) const {
        if (SHARED_CHUNKS > 0 && j - SHARED_LO < (unsigned)SHARED_CHUNKS) {
            atomicAdd((u64*)&slots[b * SHARED_ROW + (j - SHARED_LO)], (u64)v);
        } else {
            atomicAdd((u64*)&rows[b * ROW + (j - CHUNK_LO)], (u64)v);
        }
    }

    __device__ __forceinline__ void flag(u64 b, unsigned special) const {
        if (SHARED_CHUNKS > 0) {
            atomicOr((u64*)&slots[b * SHARED_ROW + SHARED_CHUNKS], (u64)special);
        } else {
            atomicOr((u64*)&rows[b * ROW + FLAGS_SLOT], (u64)special);
        }
    }
};

// A thread's run: its consecutive weights of one bin summed in registers,
// exactly: RUN_SLOTS int64 slots for chunks first .. first + RUN_SLOTS - 1.
// Flushed into the sink when the bin changes or a weight's chunks fall
// outside the slots, and at the end.
struct Run {
    i64 slot[RUN_SLOTS > 0 ? RUN_SLOTS : 1];
    u64 bin;
    unsigned first;

    __device__ __forceinline__ void flush(const Sink& sink) {
#pragma unroll
        for (int k = 0; k < RUN_SLOTS; ++k) {
            if (slot[k]) sink.add(bin, first + k, slot[k]);
            slot[k] = 0;
        }
    }

    __device__ __forceinline__ void add(const Sink& sink, u64 b, const WeightParts& w) {
#if RUN_SLOTS > 0
        unsigned d = w.chunk - first;
        if (b != bin || d > (unsigned)(RUN_SLOTS - PARTS)) {
            flush(sink);
            bin = b;
            first = w.chunk > 0 ? w.chunk - 1 : 0;  // room for a chunk below
            d = w.chunk - first;
        }
        const i64 s0 = signed_part(w.part[0], w.negative);
        const i64 s1 = signed_part(w.part[1], w.negative);
#if WEIGHT_DOUBLE
        const i64 s2 = signed_part(w.part[2], w.negative);
#endif
#pragma unroll
        for (int k = 0; k < RUN_SLOTS; ++k) {
            i64 v = (k == (int)d) ? s0 : ((k == (int)d + 1) ? s1 : 0);
#if WEIGHT_DOUBLE
            v = (k == (int)d + 2) ? s2 : v;
#endif
            slot[k] += v;
        }
#else
#pragma unroll
        for (int k = 0; k < PARTS; ++k) {
            if (w.part[k]) sink.add(b, w.chunk + k, signed_part(w.part[k], w.negative));
        }
#endif
    }
};

// keys and weights [0, n) of a launch that starts at index `first` of the call.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS)
accumulate_weights(const hk_key* keys, const hk_weight* weights, i64 n, i64 first,
                   u64 num_bins, i64* rows, u64* first_bad) {
    extern __shared__ __align__(8) unsigned char shared_bytes[];
    i64* slots = (i64*)shared_bytes;
    const u64 stride = copy_stride(num_bins);
    const u64 shared_count = SHARED_CHUNKS > 0 ? COPIES * stride : 0;
    hk_require_dynamic_shared(shared_count * sizeof(i64));
    for (u64 j = threadIdx.x; j < shared_count; j += blockDim.x) slots[j] = 0;
    __syncthreads();
    const unsigned lane = threadIdx.x & 31u;
    const Sink sink{slots + (lane % COPIES) * stride, rows};
    Run run;
#pragma unroll
    for (int k = 0; k < (RUN_SLOTS > 0 ? RUN_SLOTS : 1); ++k) run.slot[k] = 0;
    run.bin = 0;
    run.first = 0;
    // Each warp's span: consecutive weights, so a thread's run follows sorted keys.
    const i64 warps = hk_thread_count() / 32;
    const i64 warp = hk_thread_index() / 32;
    const i64 span = max((n + warps - 1) / warps, (i64)MIN_SPAN);
    const i64 end = min(n, (warp + 1) * span);  // past n: an idle warp
    for (i64 base = warp * span; base < end; base += 32 * WEIGHTS_PER_THREAD) {
        hk_key key[WEIGHTS_PER_THREAD];
        hk_weight weight[WEIGHTS_PER_THREAD];
#pragma unroll
        for (int u = 0; u < WEIGHTS_PER_THREAD; ++u) {
            const i64 i = base + 32 * u + lane;
            if (i < end) {
                key[u] = keys[i];
                weight[u] = weights[i];
            }
        }
#pragma unroll
        for (int u = 0; u < WEIGHTS_PER_THREAD; ++u) {
            const i64 i = base + 32 * u + lane;
            if (i >= end) break;
            const u64 b = hk_bin(key[u]);
            if (b >= num_bins) {
                hk_note_bad_key(first_bad, first + i);
                continue;
            }
            const WeightParts w = parts_of(weight[u]);
            if (w.special) {
                sink.flag(b, w.special);
            } else if (w.part[0] | w.part[1] | w.part[PARTS - 1]) {
                run.add(sink, b, w);
            }
        }
    }
    run.flush(sink);
    if (SHARED_CHUNKS == 0) return;
    __syncthreads();
    // The block's copies into the global rows, each add below 2^62 in magnitude.
    for (u64 j = threadIdx.x; j < num_bins * SHARED_ROW; j += blockDim.x) {
        i64 v = 0;
        for (int c = 0; c < COPIES; ++c) {
            v = (j % SHARED_ROW == SHARED_CHUNKS) ? (v | slots[c * stride + j])
                                                  : v + slots[c * stride + j];
        }
        if (!v) continue;
        const u64 b = j / SHARED_ROW;
        const unsigned k = (unsigned)(j % SHARED_ROW);
        if (k == SHARED_CHUNKS) {
            atomicOr((u64*)&rows[b * ROW + FLAGS_SLOT], (u64)v);
        } else {
            atomicAdd((u64*)&rows[b * ROW + (SHARED_LO - CHUNK_LO) + k], (u64)v);
        }
    }
}

// Chunks lo .. top - 1 of a row brought into [0, 2^32), carried into the signed top.
__device__ __forceinline__ void carry(i64* chunks, int lo, int top) {
    for (int i = lo; i < top; ++i) {
        const i64 up = chunks[i] >> 32;  // floor division (arithmetic shift)
        chunks[i] &= (i64)LOW32;
        chunks[i + 1] += up;
    }
}

// Between launches: every row's chunks back below 2^32 (its value unchanged).
extern "C" __global__ void carry_rows(i64* rows, u64 num_bins) {
    for (i64 b = hk_thread_index(); b < (i64)num_bins; b += hk_thread_count()) {
        carry(rows + b * ROW, 0, ROW - 2);
    }
}

__device__ __forceinline__ int bit_length(u64 v) { return v ? 64 - __clzll((i64)v) : 0; }

// A row's exact sum, rounded once to float64 (oracles._weighted.round_chunks):
// round half to even; a magnitude that rounds to 2^1024 or more is infinite;
// an exact zero is +0.0.
__device__ u64 rounded_bits(i64* chunks, i64 specials) {
    const u64 inf_bits = 0x7ff0000000000000ULL;
    const int top = ROW - 2;
    if (specials) {
        if ((specials & SAW_NAN) || ((specials & SAW_POS_INF) && (specials & SAW_NEG_INF))) {
            return 0x7ff8000000000000ULL;
        }
        return inf_bits | ((specials & SAW_NEG_INF) ? 0x8000000000000000ULL : 0);
    }
    carry(chunks, 0, top);
    u64 negative = 0;
    if (chunks[top] < 0) {
        negative = 0x8000000000000000ULL;
        for (int i = 0; i <= top; ++i) chunks[i] = -chunks[i];
        carry(chunks, 0, top);
    }
    int t = top;
    while (t >= 0 && chunks[t] == 0) --t;
    if (t < 0) return 0;
    const u64 v = (u64)chunks[t];
    const int nb = bit_length(v);  // up to 32, or 63 in the top chunk
    const i64 position = 32 * (i64)(t + CHUNK_LO) + nb - 1;  // of the leading bit
    u64 bits;
    if (position >= 1074 + 1024) {
        bits = inf_bits;
    } else if (position <= 52) {
        // Below 2^53 units (so t + CHUNK_LO <= 1, CHUNK_LO == 0): a subnormal
        // or the lowest binade of normals, whose bits are the integer itself.
        bits = v << (32 * (t + CHUNK_LO));
        if (t > 0) bits |= (u64)chunks[t - 1];
    } else {
        // The leading 64 bits in window, every bit below them in sticky.
        u64 below = t - 1 >= 0 ? (u64)chunks[t - 1] : 0;
        u64 window;
        bool sticky;
        int rest_from;  // chunks below this index go to sticky
        if (nb > 32) {
            const int spill = nb - 32;
            window = (v << (64 - nb)) | (below >> spill);
            sticky = (below & ((1ULL << spill) - 1)) != 0;
            rest_from = t - 1;
        } else {
            window = (v << (64 - nb)) | (below << (32 - nb));
            below = t - 2 >= 0 ? (u64)chunks[t - 2] : 0;
            window |= below >> nb;
            sticky = (below & ((1ULL << nb) - 1)) != 0;
            rest_from = t - 2;
        }
        for (int i = 0; i < rest_from; ++i) sticky |= chunks[i] != 0;
        u64 mantissa = window >> 11;
        const u64 rest = window & 0x7ff;
        if (rest > 0x400 || (rest == 0x400 && (sticky || (mantissa & 1)))) mantissa += 1;
        bits = ((u64)(position - 52) << 52) + mantissa;  // the exponent field absorbs 2^53
        if (bits >= inf_bits) bits = inf_bits;
    }
    return bits | negative;
}

extern "C" __global__ void round_rows(const i64* rows, u64 num_bins, u64* sums) {
    for (i64 b = hk_thread_index(); b < (i64)num_bins; b += hk_thread_count()) {
        i64 chunks[ROW];
        for (int k = 0; k < ROW; ++k) chunks[k] = rows[b * ROW + k];
        sums[b] = rounded_bits(chunks, chunks[FLAGS_SLOT]);
    }
}
