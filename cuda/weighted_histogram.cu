// Weighted histograms with exact per-bin sums (histkit.gpu.histogram with
// weights=). Judged by oracles.histogram(keys, num_bins, weights): each bin
// equal, bit for bit, to the exact sum of its weights rounded once to float64.
//
// The sum is one integer in units of 2^-1074 (every float32 and float64 is
// an integer multiple of it), as oracles._weighted keeps it. Here it is held
// in 16-bit digits, each in a signed int64 slot: slot j weighs 2^(16 j). A
// float32 weight is its 24-bit mantissa shifted by p mod 16, below 2^40: ONE
// add into the slot of its digit, with 2^22 such adds of room before a slot
// could overflow. A float64 weight is two adds below 2^37 (its mantissa
// shifted, split at bit 32). Integer addition is associative, so neither the
// order of the adds nor the grid changes a bit of the result.
//
// accumulate_weights: each block keeps, in shared memory, COPIES copies of
// the slots SHARED_LO .. SHARED_LO + SHARED_SLOTS - 1 of every bin (the whole
// row when it fits; else a window around the magnitudes of everyday weights;
// else none), lane l adding to copy l % COPIES, so lanes hitting one bin hit
// different words. A shared slot takes an add as two native 32-bit atomics
// (Sink::add says why, and why they sum exactly). Adds outside the window go to the
// global rows, split into parts below 2^32. Each warp walks a span of its
// own, 32 consecutive weights at a time, and each thread sums a run of
// weights of one bin in registers (Run) until the bin changes: all-equal and
// sorted keys cost a few atomics a thread, not one per weight. (The launcher
// builds without runs, RUN_SLOTS 0, where a block keeps enough copies that
// each weight's own shared add is cheaper: contract.NO_RUNS_FROM_COPIES.) At
// the end the block adds its copies into the global rows, carried into
// 16-bit digits.
//
// Bounds (the launcher keeps them): no block adds more than BLOCK_WEIGHTS
// (2^22) weights in a launch, each less than 2^40 to any one slot, so no
// register or shared slot passes 2^62, nor a warp's sum of its runs; a launch adds at most 2^28 weights,
// each less than 2^32 to a global slot, and a block's merge adds a digit
// below 2^16 (its carry out of the window below 2^46), so no global slot
// passes 2^62 before carry_rows (run between launches) carries them again.
// With no shared window (WHOLE_ADD_BITS > 0) an add below 2^WHOLE_ADD_BITS
// goes to its global slot whole, one atomic, and a launch adds at most
// GLOBAL_LAUNCH_WEIGHTS weights, at most two adds each to one slot: below
// 2^62 again.
//
// Many bins: count_parts, scatter_parts and accumulate_parts (below) first
// partition the keys by their bin's high bits, then sum each partition's
// weights as accumulate_weights sums a few bins', with the same bounds.
//
// round_rows: one thread a bin carries its row into the oracle's 32-bit
// chunks CHUNK_LO .. CHUNK_TOP and rounds it to float64 in integer arithmetic
// (round half to even), as oracles._weighted's round_chunks does; NaN and
// infinite weights follow IEEE addition.
#include "partitions.cuh"

#ifndef WEIGHT_DOUBLE
#define WEIGHT_DOUBLE 0  // 1: float64 weights, else float32
#endif
// The oracle's row, in 32-bit chunks (absolute indices), and the special
// flags: oracles._weighted defines them; the host passes them.
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
// A global row: 16-bit digit slots LO16 .. TOP16 (absolute), then the flags.
#define LO16 (2 * CHUNK_LO)
#define TOP16 (2 * CHUNK_TOP + 1)
#define ROW16 (TOP16 - LO16 + 2)
#define FLAGS16 (TOP16 - LO16 + 1)
// The slots each block keeps in shared memory (absolute first, count: 0 for
// none), and how many copies (a power of two up to 32).
#ifndef SHARED_LO
#define SHARED_LO LO16
#endif
#ifndef SHARED_SLOTS
#define SHARED_SLOTS (TOP16 - LO16 + 1)
#endif
#ifndef COPIES
#define COPIES 1
#endif
#ifndef WHOLE_ADD_BITS
#define WHOLE_ADD_BITS 0  // > 0: global adds below 2^WHOLE_ADD_BITS go whole (contract.WHOLE_ADD_BITS)
#endif
#if WHOLE_ADD_BITS > 0 && SHARED_SLOTS > 0
#error "whole global adds need launches sized for them: the global layout's alone"
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

// A run keeps the digits of weights within 2^32 either way of its first
// (d0 - 2 .. d0 + 2): everyday weights of one bin never leave it.
#if WEIGHT_DOUBLE
typedef double hk_weight;
#define PARTS 2          // a float64: two adds, at digits d and d + 2
#define PART_STEP 2
#define RUN_DEFAULT 7    // digits d0 - 2 .. d0 + 4
#else
typedef float hk_weight;
#define PARTS 1          // a float32: one add
#define PART_STEP 0
#define RUN_DEFAULT 5    // digits d0 - 2 .. d0 + 2
#endif
#define RUN_BELOW 2      // digits a run keeps below its first weight's
#ifndef LONE_RUN
#define LONE_RUN 0  // 1: runs of one weight skip the other slots (contract.LONE_RUN_FROM_BINS)
#endif
#ifndef RUN_SLOTS
#define RUN_SLOTS RUN_DEFAULT  // digits of a thread's run held in registers (0: no runs)
#endif
// The digits a run's slots span past its first weight's digit, below and above.
#define RUN_REACH (RUN_SLOTS - 1 - (PARTS - 1) * PART_STEP)
#ifndef RUN_ALIGN
#define RUN_ALIGN 4  // a warp sums its lanes' runs of one bin whose starts are this many digits apart at most
#endif

#define SHARED_ROW (SHARED_SLOTS + 1)  // int64 slots of a bin in shared memory: digits, flags
#define LOW16 0xffffLL
#define LOW32 0xffffffffLL

// Slots of one copy: its bins, padded to an odd count so that the same slot
// of different copies falls on different banks.
__host__ __device__ constexpr u64 copy_stride(u64 num_bins) {
    return (num_bins * SHARED_ROW) | 1;
}

// One weight as the adds it makes: part[k] (signed) at digit digit + k *
// PART_STEP; or a special flag for NaN and infinities.
struct WeightParts {
    i64 part[PARTS];
    unsigned digit;    // absolute
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
    const unsigned s = p & 15u;
    out.digit = p >> 4;
#if WEIGHT_DOUBLE
    // mantissa << s is below 2^69: its low 32 bits at digit d, the rest at d + 2.
    const i64 low = (i64)((mantissa << s) & LOW32);
    const i64 high = (i64)(mantissa >> (32 - s));
    out.part[0] = special ? 0 : (sign ? -low : low);
    out.part[1] = special ? 0 : (sign ? -high : high);
#else
    const i64 shifted = (i64)(mantissa << s);  // below 2^40
    out.part[0] = special ? 0 : (sign ? -shifted : shifted);
#endif
    return out;
}

// Where a thread's adds go: its copy of the block's shared slots for the
// digits of the window, the global rows for the rest.
struct Sink {
    i64* slots;  // this thread's copy: SHARED_ROW per bin
    i64* rows;   // ROW16 per bin

    // Adds v (|v| < 2^62) times 2^(16 j) to bin b (j: an absolute digit).
    __device__ __forceinline__ void add(u64 b, unsigned j, i64 v) const {
        if (SHARED_SLOTS > 0 && j - SHARED_LO < (unsigned)SHARED_SLOTS) {
            // A 64-bit atomicAdd on shared memory is a compare-and-swap loop
            // (sm_90: ATOMS.CAST.SPIN.64); a 32-bit one is a native add. So
            // the slot takes v as its two words (the low one first: the GPU
            // is little-endian): the low word v's low 32 bits, and the high
            // word v's high bits plus the carry out of the low word, which
            // its old value tells (the sum wrapped below it).
            // Every carry is counted once, so when all adds are in, the
            // words hold the slot's sum (below 2^62) exactly, as one int64.
            unsigned* word = (unsigned*)&slots[b * SHARED_ROW + (j - SHARED_LO)];
            const unsigned low = (unsigned)v;
            const unsigned old = atomicAdd(word, low);
            const unsigned high = (unsigned)(v >> 32) + (old + low < old ? 1u : 0u);
            if (high) atomicAdd(word + 1, high);
        } else {
            i64* row = rows + b * ROW16 + (j - LO16);
            const i64 whole = (i64)1 << WHOLE_ADD_BITS;
            if (WHOLE_ADD_BITS > 0 && v > -whole && v < whole) {
                atomicAdd((u64*)row, (u64)v);
                return;
            }
            // Below 2^32 a part: its low 32 bits here, the rest two digits up
            // (where v has any: a float32's add never reaches past TOP16).
            const i64 high = v >> 32;  // floor
            atomicAdd((u64*)row, (u64)(v & LOW32));
            if (high) atomicAdd((u64*)(row + 2), (u64)high);
        }
    }

    __device__ __forceinline__ void flag(u64 b, unsigned special) const {
        if (SHARED_SLOTS > 0) {
            atomicOr((u64*)&slots[b * SHARED_ROW + SHARED_SLOTS], (u64)special);
        } else {
            atomicOr((u64*)&rows[b * ROW16 + FLAGS16], (u64)special);
        }
    }
};

// A thread's run: its consecutive weights of one bin summed in registers,
// exactly: RUN_SLOTS int64 slots for digits first .. first + RUN_SLOTS - 1.
// Flushed into the sink when the bin changes or a weight's digits fall
// outside the slots, and at the end. With LONE_RUN (the launcher sets it
// where runs of one weight are the rule: uniform keys over many bins), a
// run of one weight holds its parts at slot RUN_BELOW (and PART_STEP above)
// alone, and is started and flushed without touching the other slots.
struct Run {
    i64 slot[RUN_SLOTS > 0 ? RUN_SLOTS : 1];
    u64 bin;
    unsigned first;  // may wrap below digit 0: those slots never take an add
    bool alone;      // one weight since the last flush

    __device__ __forceinline__ void flush(const Sink& sink) {
#if RUN_SLOTS > 0
        if (LONE_RUN && alone) {
#pragma unroll
            for (int k = 0; k < PARTS; ++k) {
                i64& v = slot[RUN_BELOW + k * PART_STEP];
                if (v) sink.add(bin, first + RUN_BELOW + k * PART_STEP, v);
                v = 0;
            }
            return;
        }
#pragma unroll
        for (int k = 0; k < RUN_SLOTS; ++k) {
            if (slot[k]) sink.add(bin, first + k, slot[k]);
            slot[k] = 0;
        }
#endif
    }

    __device__ __forceinline__ void add(const Sink& sink, u64 b, const WeightParts& w) {
#if RUN_SLOTS > 0
        unsigned d = w.digit - first;
        const bool fresh = b != bin || d > (unsigned)RUN_REACH;
        if (fresh) {
            flush(sink);
            bin = b;
            first = w.digit - RUN_BELOW;  // room below
            d = RUN_BELOW;
            if (LONE_RUN) {  // every other slot is zero after the flush
#pragma unroll
                for (int k = 0; k < PARTS; ++k) slot[RUN_BELOW + k * PART_STEP] = w.part[k];
                alone = true;
                return;
            }
        }
        alone = false;
#pragma unroll
        for (int k = 0; k < RUN_SLOTS; ++k) {
            i64 v = (k == (int)d) ? w.part[0] : 0;
#if WEIGHT_DOUBLE
            v = (k == (int)d + PART_STEP) ? w.part[1] : v;
#endif
            slot[k] += v;
        }
#else
#pragma unroll
        for (int k = 0; k < PARTS; ++k) {
            if (w.part[k]) sink.add(b, w.digit + k * PART_STEP, w.part[k]);
        }
#endif
    }
};

// A key's bin: hk_bin for the caller's keys; a partition's low bins
// (accumulate_parts) are bins already.
template <typename K>
__device__ __forceinline__ u64 bin_value(K key) { return (u64)key; }
template <>
__device__ __forceinline__ u64 bin_value<hk_key>(hk_key key) { return hk_bin(key); }

// The block's shared copies of num_bins bins (stride slots each), zeroed.
__device__ __forceinline__ void zero_copies(i64* slots, u64 stride) {
    const u64 shared_count = SHARED_SLOTS > 0 ? COPIES * stride : 0;
    for (u64 j = threadIdx.x; j < shared_count; j += blockDim.x) slots[j] = 0;
}

// Warp `warp` of `warps` adds weights [begin, end) of keys and weights to the
// sink: a span of consecutive weights of its own, so a thread's run follows
// sorted keys. Every lane of the warp calls it. A key outside [0, num_bins)
// is skipped and noted (its index in the call: first + i).
template <typename K>
__device__ __forceinline__ void add_span(const K* keys, const hk_weight* weights, i64 begin,
                                         i64 end_all, i64 warp, i64 warps, i64 first,
                                         u64 num_bins, const Sink& sink, u64* first_bad) {
    const unsigned lane = threadIdx.x & 31u;
    Run run;
#pragma unroll
    for (int k = 0; k < (RUN_SLOTS > 0 ? RUN_SLOTS : 1); ++k) run.slot[k] = 0;
    run.bin = 0;
    run.first = 0;
    run.alone = true;
    const i64 span = max((end_all - begin + warps - 1) / warps, (i64)MIN_SPAN);
    const i64 end = min(end_all, begin + (warp + 1) * span);  // past end_all: an idle warp
    for (i64 base = begin + warp * span; base < end; base += 32 * WEIGHTS_PER_THREAD) {
        K key[WEIGHTS_PER_THREAD];
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
            const u64 b = bin_value<K>(key[u]);
            if (b >= num_bins) {
                hk_note_bad_key(first_bad, first + i);
                continue;
            }
            const WeightParts w = parts_of(weight[u]);
            if (w.special) {
                sink.flag(b, w.special);
            } else if (w.part[0] | w.part[PARTS - 1]) {
                run.add(sink, b, w);
            }
        }
    }
    // A warp whose lanes all end in a run of one bin (all-equal keys) sums
    // the runs first: one flush, not 32 onto one bin's slots. Lanes' runs
    // may start at different digits (a run starts two below its first
    // weight's): the sum is taken per absolute digit, lowest .. lowest +
    // RUN_SLOTS + RUN_ALIGN - 1, where the starts are at most RUN_ALIGN apart.
    // (A warp's weights are a block's at most: no digit's sum passes 2^62.)
#if RUN_SLOTS > 0
    bool empty = true;
#pragma unroll
    for (int k = 0; k < RUN_SLOTS; ++k) empty &= run.slot[k] == 0;
    const unsigned holding = __ballot_sync(0xffffffffu, !empty);
    if (holding) {
        const u64 bin0 = __shfl_sync(0xffffffffu, run.bin, __ffs(holding) - 1);
        const unsigned lowest = __reduce_min_sync(0xffffffffu, empty ? ~0u : run.first);
        const unsigned highest = __reduce_max_sync(0xffffffffu, empty ? 0u : run.first);
        if (__all_sync(0xffffffffu, empty || run.bin == bin0) &&
            highest - lowest <= (unsigned)RUN_ALIGN) {
            const unsigned shift = empty ? 0u : run.first - lowest;
#pragma unroll
            for (int k = 0; k < RUN_SLOTS + RUN_ALIGN; ++k) {
                i64 v = 0;
#pragma unroll
                for (int s = 0; s < RUN_SLOTS; ++s) v = (s + shift == (unsigned)k) ? run.slot[s] : v;
                for (int step = 16; step > 0; step /= 2) v += __shfl_xor_sync(0xffffffffu, v, step);
                if (lane == 0 && v) sink.add(bin0, lowest + k, v);
            }
#pragma unroll
            for (int k = 0; k < RUN_SLOTS; ++k) run.slot[k] = 0;  // flushed: nothing left
        }
    }
#endif
    run.flush(sink);
}

// The block's copies of bins [0, num_bins) (stride slots a copy) into the
// global rows, a bin a thread: each digit's sum over the copies, carried
// into 16-bit digits (the row's top digit kept whole, signed), so every add
// is below 2^16 but the carry out of the window, below 2^46.
__device__ __forceinline__ void merge_copies(const i64* slots, u64 stride, u64 num_bins,
                                             i64* rows) {
    for (u64 b = threadIdx.x; b < num_bins; b += blockDim.x) {
        i64* row = rows + b * ROW16;
        i64 carried = 0;
        for (int k = 0; k < SHARED_SLOTS; ++k) {
            i64 v = carried;
            for (int c = 0; c < COPIES; ++c) v += slots[c * stride + b * SHARED_ROW + k];
            const bool top = SHARED_LO + k == TOP16;
            carried = top ? 0 : v >> 16;
            v = top ? v : (v & LOW16);
            if (v) atomicAdd((u64*)&row[SHARED_LO - LO16 + k], (u64)v);
        }
        if (carried) atomicAdd((u64*)&row[SHARED_LO - LO16 + SHARED_SLOTS], (u64)carried);
        u64 flags = 0;
        for (int c = 0; c < COPIES; ++c) flags |= (u64)slots[c * stride + b * SHARED_ROW + SHARED_SLOTS];
        if (flags) atomicOr((u64*)&row[FLAGS16], flags);
    }
}

// keys and weights [0, n) of a launch that starts at index `first` of the call.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS)
accumulate_weights(const hk_key* keys, const hk_weight* weights, i64 n, i64 first,
                   u64 num_bins, i64* rows, u64* first_bad HK_GATE_ARG) {
    extern __shared__ __align__(8) unsigned char shared_bytes[];
    if (hk_gate_closed()) return;
    hk_skew_warps();
    i64* slots = (i64*)shared_bytes;
    const u64 stride = copy_stride(num_bins);
    hk_require_dynamic_shared(SHARED_SLOTS > 0 ? COPIES * stride * sizeof(i64) : 0);
    zero_copies(slots, stride);
    __syncthreads();
    const unsigned lane = threadIdx.x & 31u;
    const Sink sink{slots + (lane % COPIES) * stride, rows};
    add_span(keys, weights, 0, n, hk_thread_index() / 32, hk_thread_count() / 32, first,
             num_bins, sink, first_bad);
    if (SHARED_SLOTS == 0) return;
    __syncthreads();
    merge_copies(slots, stride, num_bins, rows);
}

// Many bins (no window of them fits a block): the keys partitioned by their
// bin's high bits, each partition (PART_BINS bins) summed in shared memory.
// count_parts counts each partition's keys, scatter_parts moves each key's
// low bits (2 bytes) and its weight to its partition's place, and
// accumulate_parts gives each block an equal share of the partitioned
// weights, one partition after another. The order within a partition
// depends on the atomics that hand out places; integer sums do not.
#ifndef PART_BITS
#define PART_BITS 11  // bins of one partition: 2^PART_BITS (the launcher's part_bits)
#endif
#ifndef MAX_PARTS
#define MAX_PARTS 256
#endif
#define PART_BINS ((u64)1 << PART_BITS)
#ifndef SCATTER_ITEMS
#define SCATTER_ITEMS 8  // keys a thread moves in one tile
#endif
#ifndef SCATTER_THREADS
#define SCATTER_THREADS 512  // scatter_parts' block (contract.SCATTER_THREADS)
#endif
#ifndef SCATTER_MIN_BLOCKS
#define SCATTER_MIN_BLOCKS 2  // its blocks an SM that its registers are budgeted for
#endif
#define SCATTER_TILE (SCATTER_THREADS * SCATTER_ITEMS)
#if PART_BITS > 16
#error "a partition's low bins are 16-bit"
#endif

// part_total[p]: the valid keys of partition p among keys [0, n) (the host
// zeroes it); the first bad key is noted, its index in the call first + i.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
count_parts(const hk_key* keys, i64 n, i64 first, u64 num_bins, unsigned num_parts,
            unsigned* part_total, u64* first_bad HK_GATE_ARG) {
    __shared__ unsigned count[MAX_PARTS];
    if (hk_gate_closed()) return;
    hk_skew_warps();
    for (unsigned p = threadIdx.x; p < num_parts; p += blockDim.x) count[p] = 0;
    __syncthreads();
    for (i64 base = (i64)blockIdx.x * blockDim.x * WEIGHTS_PER_THREAD; base < n;
         base += hk_thread_count() * WEIGHTS_PER_THREAD) {
        u64 bin[WEIGHTS_PER_THREAD];
#pragma unroll
        for (int u = 0; u < WEIGHTS_PER_THREAD; ++u) {
            const i64 i = base + (i64)u * blockDim.x + threadIdx.x;
            bin[u] = i < n ? hk_bin(keys[i]) : num_bins;
        }
#pragma unroll
        for (int u = 0; u < WEIGHTS_PER_THREAD; ++u) {
            const i64 i = base + (i64)u * blockDim.x + threadIdx.x;
            const bool valid = bin[u] < num_bins;
            if (!valid && i < n) hk_note_bad_key(first_bad, first + i);
            hk_count_key(count, valid ? (unsigned)(bin[u] >> PART_BITS) : NO_PART, NO_PART);
        }
    }
    __syncthreads();
    for (unsigned p = threadIdx.x; p < num_parts; p += blockDim.x)
        if (count[p]) atomicAdd(&part_total[p], count[p]);
}

// start[p] = count[0] + ... + count[p - 1] for p <= num_parts (warp 0 scans,
// MAX_PARTS / 32 partitions a lane); the whole block waits for it.
template <typename T>
__device__ __forceinline__ void exclusive_starts(const unsigned* count, unsigned num_parts,
                                                 T* start) {
    if (threadIdx.x < 32) {
        const unsigned lane = threadIdx.x;
        const unsigned from = lane * (MAX_PARTS / 32);
        T mine = 0;
        for (unsigned p = from; p < from + MAX_PARTS / 32 && p < num_parts; ++p) mine += count[p];
        T before = mine;
        for (int d = 1; d < 32; d <<= 1) {
            const T up = __shfl_up_sync(0xffffffffu, before, d);
            if (lane >= (unsigned)d) before += up;
        }
        before -= mine;
        for (unsigned p = from; p < from + MAX_PARTS / 32 && p < num_parts; ++p) {
            start[p] = before;
            before += count[p];
        }
        if (lane == 31) start[num_parts] = before;
    }
    __syncthreads();
}

// Each valid key of keys [0, n) to its partition's place: its low bits to
// low_bins, its weight to part_weights. A tile's keys are staged in shared
// memory grouped by partition, so that each partition's run of them is
// written out by consecutive threads to consecutive places (a key's own
// place, written directly, costs a memory transaction per key). part_cursor
// (zeroed by the host) counts the places each partition has handed out; a
// tile takes its places of a partition with one atomic. SCATTER_MIN_BLOCKS
// blocks share an SM so that one block's loads overlap another's staging and
// writing, between the barriers each tile needs (docs/design.md).
extern "C" __global__ void __launch_bounds__(SCATTER_THREADS, SCATTER_MIN_BLOCKS)
scatter_parts(const hk_key* keys, const hk_weight* weights, i64 n, u64 num_bins,
              unsigned num_parts, const unsigned* part_total, unsigned* part_cursor,
              unsigned short* low_bins, hk_weight* part_weights HK_GATE_ARG) {
    extern __shared__ __align__(8) unsigned char shared_bytes[];
    hk_weight* staged_weight = (hk_weight*)shared_bytes;
    unsigned* staged_bin = (unsigned*)(staged_weight + SCATTER_TILE);  // partition << 16 | low bin
    __shared__ u64 start[MAX_PARTS + 1];     // partition p's first place
    __shared__ unsigned count[MAX_PARTS];    // the tile's keys of partition p
    __shared__ unsigned local[MAX_PARTS + 1];  // where they start in the staged tile
    __shared__ unsigned place[MAX_PARTS];    // where they go in the partitioned arrays
    if (hk_gate_closed()) return;
    hk_skew_warps();
    hk_require_dynamic_shared(SCATTER_TILE * (sizeof(hk_weight) + sizeof(unsigned)));
    exclusive_starts(part_total, num_parts, start);
    for (i64 tile = blockIdx.x; tile * SCATTER_TILE < n; tile += gridDim.x) {
        for (unsigned p = threadIdx.x; p < num_parts; p += blockDim.x) count[p] = 0;
        __syncthreads();
        u64 bin[SCATTER_ITEMS];
        hk_weight weight[SCATTER_ITEMS];
#pragma unroll
        for (int u = 0; u < SCATTER_ITEMS; ++u) {
            const i64 i = tile * SCATTER_TILE + (i64)u * blockDim.x + threadIdx.x;
            bin[u] = num_bins;
            if (i < n) {
                bin[u] = hk_bin(keys[i]);
                weight[u] = weights[i];
            }
        }
        unsigned slot[SCATTER_ITEMS];
#pragma unroll
        for (int u = 0; u < SCATTER_ITEMS; ++u)
            slot[u] = hk_take_slot(count, bin[u] < num_bins ? (unsigned)(bin[u] >> PART_BITS) : NO_PART);
        __syncthreads();
        exclusive_starts(count, num_parts, local);
        for (unsigned p = threadIdx.x; p < num_parts; p += blockDim.x)
            if (count[p]) place[p] = atomicAdd(&part_cursor[p], count[p]) + (unsigned)start[p];
#pragma unroll
        for (int u = 0; u < SCATTER_ITEMS; ++u) {
            if (bin[u] < num_bins) {
                const unsigned part = (unsigned)(bin[u] >> PART_BITS);
                const unsigned j = local[part] + slot[u];
                staged_bin[j] = part << 16 | (unsigned)(bin[u] & (PART_BINS - 1));
                staged_weight[j] = weight[u];
            }
        }
        __syncthreads();
        for (unsigned j = threadIdx.x; j < local[num_parts]; j += blockDim.x) {
            const unsigned held = staged_bin[j], part = held >> 16;
            const u64 at = (u64)place[part] + (j - local[part]);
            low_bins[at] = (unsigned short)(held & 0xffffu);
            part_weights[at] = staged_weight[j];
        }
        __syncthreads();  // count, local, place and the staged tile are reused by the next tile
    }
}

// Block g sums places [total g / G, total (g + 1) / G) of the partitioned
// weights (G blocks), partition by partition: its copies of a partition's
// bins zeroed, its weights added, the copies merged into that partition's rows.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS)
accumulate_parts(const unsigned short* low_bins, const hk_weight* part_weights, u64 num_bins,
                 unsigned num_parts, const unsigned* part_total, i64* rows HK_GATE_ARG) {
    extern __shared__ __align__(8) unsigned char shared_bytes[];
    __shared__ u64 start[MAX_PARTS + 1];
    if (hk_gate_closed()) return;
    hk_skew_warps();
    i64* slots = (i64*)shared_bytes;
    const u64 stride = copy_stride(PART_BINS);
    hk_require_dynamic_shared(SHARED_SLOTS > 0 ? COPIES * stride * sizeof(i64) : 0);
    exclusive_starts(part_total, num_parts, start);
    const u64 total = start[num_parts];
    const u64 a = total * blockIdx.x / gridDim.x, b = total * (blockIdx.x + 1) / gridDim.x;
    i64* copy = slots + ((threadIdx.x & 31u) % COPIES) * stride;
    for (unsigned p = 0; p < num_parts; ++p) {
        const u64 lo = max(a, start[p]), hi = min(b, start[p + 1]);
        if (lo >= hi) continue;  // the same for the whole block
        const u64 first_bin = (u64)p << PART_BITS;
        const u64 bins = min(PART_BINS, num_bins - first_bin);
        zero_copies(slots, stride);
        __syncthreads();
        const Sink sink{copy, rows + first_bin * ROW16};
        add_span(low_bins, part_weights, (i64)lo, (i64)hi, threadIdx.x / 32, blockDim.x / 32,
                 0, bins, sink, (u64*)0);
        if (SHARED_SLOTS == 0) continue;
        __syncthreads();
        merge_copies(slots, stride, bins, rows + first_bin * ROW16);
        __syncthreads();  // the copies are zeroed for the next partition
    }
}

// Digits lo .. top - 1 of a row brought into [0, 2^16), carried into the signed top.
__device__ __forceinline__ void carry16(i64* digits, int lo, int top) {
    for (int i = lo; i < top; ++i) {
        const i64 up = digits[i] >> 16;  // floor division (arithmetic shift)
        digits[i] &= LOW16;
        digits[i + 1] += up;
    }
}

// Between launches: every digit of every row but its signed top brought back
// to [-1, 2^16] (the row's value unchanged), far below the 2^32 from which the contract's
// launch sizes keep a slot below 2^62. A warp takes a row, its lane j the
// digits j, j + 32, ... (coalesced, in registers: a thread walking a row
// alone reads it a sector a digit), and every digit keeps its low 16 bits
// and passes the rest (floor division) up, all at once, CARRY_ROUNDS times:
// from below 2^62 in magnitude, a round leaves below 2^46 + 2^16, then
// 2^30 + 2^17, 2^14 + 2^17, and the fourth [-1, 2^16]. The signed top digit
// keeps whatever reaches it; the flags slot is not a digit.
#define CARRY_ROUNDS 4
#define CARRY_STRIPES ((ROW16 - 1 + 31) / 32)  // digits a lane holds
extern "C" __global__ void carry_rows(i64* rows, u64 num_bins HK_GATE_ARG) {
    if (hk_gate_closed()) return;
    const unsigned lane = threadIdx.x & 31u;
    for (i64 b = hk_thread_index() / 32; b < (i64)num_bins; b += hk_thread_count() / 32) {
        i64* row = rows + b * ROW16;
        i64 digit[CARRY_STRIPES];
#pragma unroll
        for (int s = 0; s < CARRY_STRIPES; ++s) {
            const int k = s * 32 + (int)lane;
            digit[s] = k < ROW16 - 1 ? row[k] : 0;
        }
#pragma unroll
        for (int round = 0; round < CARRY_ROUNDS; ++round) {
            i64 from_last_stripe = 0;  // lane 31's carry, for lane 0 of the next stripe
#pragma unroll
            for (int s = 0; s < CARRY_STRIPES; ++s) {
                const int k = s * 32 + (int)lane;
                const i64 up = k < ROW16 - 2 ? digit[s] >> 16 : 0;  // floor division
                if (k < ROW16 - 2) digit[s] &= LOW16;
                const i64 below = __shfl_up_sync(0xffffffffu, up, 1);
                digit[s] += lane == 0 ? from_last_stripe : below;
                from_last_stripe = __shfl_sync(0xffffffffu, up, 31);
            }
        }
#pragma unroll
        for (int s = 0; s < CARRY_STRIPES; ++s) {
            const int k = s * 32 + (int)lane;
            if (k < ROW16 - 1) row[k] = digit[s];
        }
    }
}

// The oracle's rows: 32-bit chunks in int64 slots, then the flags.
#define ROW (CHUNK_TOP - CHUNK_LO + 2)
#define FLAGS_SLOT (CHUNK_TOP - CHUNK_LO + 1)

// Chunks lo .. top - 1 of a row brought into [0, 2^32), carried into the signed top.
__device__ __forceinline__ void carry(i64* chunks, int lo, int top) {
    for (int i = lo; i < top; ++i) {
        const i64 up = chunks[i] >> 32;  // floor division (arithmetic shift)
        chunks[i] &= LOW32;
        chunks[i + 1] += up;
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
        i64 digits[ROW16];
        for (int k = 0; k < ROW16; ++k) digits[k] = rows[b * ROW16 + k];
        carry16(digits, 0, ROW16 - 2);
        // Two 16-bit digits a 32-bit chunk (the top chunk takes the signed top digit).
        i64 chunks[ROW];
        for (int k = 0; k < ROW - 1; ++k) chunks[k] = digits[2 * k] + digits[2 * k + 1] * 65536;
        chunks[FLAGS_SLOT] = digits[FLAGS16];
        sums[b] = rounded_bits(chunks, chunks[FLAGS_SLOT]);
    }
}
