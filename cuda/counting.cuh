#pragma once
// The counting machinery of the fast histograms (fast_histogram.cu, and
// bin_histogram.cu for real-valued samples): walks over the keys and the
// counters they add to. A key's bin comes from a functor `bin(key) -> u64`
// (hk_bin for integer keys); a bin >= num_bins is reported as a bad key at
// the lowest index of its run.
//
// Reading, when most bins live in shared memory: a persistent grid-stride walk
// over 16-byte vectors (one load brings 16 / sizeof(key) keys), with a scalar
// head and tail; a run of equal keys inside one vector is added as one
// increment. When most bins are global (built with -DCOALESCED=1), lane l
// reads key i + l instead, so the 32 global atomics of one instruction fall on
// neighbouring bins whenever neighbouring keys do (round-robin, sorted input),
// and four equal keys of one thread are still added at once.
//
// Counting: bins [0, shared_bins) live in shared memory as COPIES private
// 32-bit sub-histograms per block; bins past shared_bins (when num_bins is too
// large for shared memory) go straight to the 64-bit global histogram.
//
// Narrow counters (-DNARROW_COUNTERS=1, one copy): 16 bits per bin, two bins
// per shared word, so twice as many bins fit (65536 in 128 KiB: a whole
// 16-bit histogram in one block, no global atomics). Of shared_bins, the first
// low_bins = ceil(shared_bins / 2) count in the low halves of words
// 0 .. low_bins - 1 and the rest in the high halves, so neighbouring bins
// (Zipf's hot head, sorted runs) sit in separate words and their atomics do
// not queue on one address. A counter spills before
// it can wrap: the add that takes it to NARROW_SPILL or past sets its top bit;
// every thread whose add leaves that bit set clears it with atomicAnd, and the
// one that finds it still set adds NARROW_SPILL to the global bin. From the
// moment the bit is set until it is cleared each thread adds at most once
// more (its next step is the clearing), so a counter stays below
// NARROW_SPILL + (blockDim.x + 1) x 16 <= 0xC010 and never carries into its
// neighbour (an add is at most 16: a run inside one 16-byte vector).
//
// Shared layout: copy-major, each copy padded by one word
// (counter of bin b in copy c at c * (shared_bins + 1) + b), and lane l uses
// copy l / (32 / COPIES). The pad shifts each copy by one bank, so with
// COPIES = 32 a warp never puts two lanes on one bank, whatever the keys
// (an all-equal input runs as fast as a uniform one), and strided patterns
// such as round-robin keys spread over the banks too.
//
// Global adds are warp-aggregated when every lane of the warp holds the same
// bin (one hot bin, sorted input): one atomic per warp instead of 32. Built
// with -DHOLD_RUNS=1, each lane also holds its last global bin in registers
// and adds a run of it once: 5x faster when one hot bin lies past shared
// memory, ~10% slower on other inputs (docs/performance.md), so auto picks it from
// a sample of the keys.
#include "common.cuh"

#ifndef COPIES
#define COPIES 32  // shared sub-histograms per block: 1, 2, 4, 8, 16 or 32
#endif
#ifndef COALESCED
#define COALESCED 0
#endif
#ifndef HOLD_RUNS
#define HOLD_RUNS 0  // 1: hold runs of one global bin in registers (auto picks it)
#endif
#ifndef NARROW_COUNTERS
#define NARROW_COUNTERS 0  // 1: 16-bit shared counters, two per word (COPIES must be 1)
#endif
#if NARROW_COUNTERS && COPIES != 1
#error "narrow counters come in one copy per block"
#endif
#ifndef NARROW_SPILL
#define NARROW_SPILL 32768  // 0x8000: a 16-bit counter's top bit (contract.FAST_NARROW_SPILL)
#endif
static_assert(NARROW_SPILL == 0x8000, "the spill bit is the top bit of a 16-bit counter");
#ifndef HK_QUICK_BINS
#define HK_QUICK_BINS 0  // 1: the bin functor has quick(keys, bins) -> placed (for_each_run)
#endif
#ifndef VECTORS_PER_THREAD
#define VECTORS_PER_THREAD 4  // loads in flight per thread before counting
#endif

#define PER_VECTOR ((int)(16 / sizeof(hk_key)))
#define NOT_A_BIN 0xffffffffu
#define NOT_HELD 0xffffffffffffffffULL

union KeyVector {
    uint4 raw;
    hk_key key[PER_VECTOR];
};

// Visits keys [0, n): 16-byte vectors from keys + head (head makes them
// aligned), then the scalar head and tail. add(bin(key), count, first_index)
// is called once per run of keys of one bin inside a vector.
template <typename Bin, typename Add>
__device__ __forceinline__ void for_each_run(const hk_key* keys, i64 n, i64 head, const Bin& bin,
                                             Add& add) {
    const i64 num_vectors = (n - head) / PER_VECTOR;
    const uint4* vectors = (const uint4*)(keys + head);
    const i64 stride = hk_thread_count();
#if HK_QUICK_BINS
    // A functor with quick() bins a vector's keys in fewer steps where it can
    // (real-valued samples whose estimate alone names their bins, or that
    // lie outside every bin), bit j of its result set for each key it
    // placed; those are counters below add.num_bins, added straight to
    // shared memory when every counter lives there.
    const bool quick = add.num_bins <= add.shared_bins;
#endif
    i64 v = hk_thread_index();
    for (; v + (VECTORS_PER_THREAD - 1) * stride < num_vectors; v += VECTORS_PER_THREAD * stride) {
        KeyVector batch[VECTORS_PER_THREAD];
#pragma unroll
        for (int k = 0; k < VECTORS_PER_THREAD; ++k) batch[k].raw = __ldcs(vectors + v + k * stride);
#pragma unroll
        for (int k = 0; k < VECTORS_PER_THREAD; ++k) {
            const i64 first = head + (v + k * stride) * PER_VECTOR;
#if HK_QUICK_BINS
            unsigned quick_bins[PER_VECTOR];
            const unsigned placed = quick ? bin.quick(batch[k].key, quick_bins) : 0u;
            if (placed == (1u << PER_VECTOR) - 1) {
                add.add_vector_shared(quick_bins);
                continue;
            }
            if (placed) {
                // Only the keys the quick step left take the full rule: where
                // it leaves a few keys in most warps (many bins, a wide
                // margin), the whole vector's full steps cost twice as much.
#pragma unroll
                for (int j = 0; j < PER_VECTOR; ++j) {
                    if ((placed >> j) & 1u) {
                        add.add_shared(quick_bins[j], 1u);
                    } else {
                        add(bin(batch[k].key[j]), 1u, first + j);
                    }
                }
                continue;
            }
#endif
            auto run_bin = bin(batch[k].key[0]);
            unsigned run = 1;
#pragma unroll
            for (int j = 1; j < PER_VECTOR; ++j) {
                const auto b = bin(batch[k].key[j]);
                if (b == run_bin) {
                    ++run;
                } else {
                    add(run_bin, run, first + j - run);
                    run_bin = b;
                    run = 1;
                }
            }
            add(run_bin, run, first + PER_VECTOR - run);
        }
    }
    for (; v < num_vectors; v += stride) {
        KeyVector one;
        one.raw = __ldcs(vectors + v);
        const i64 first = head + v * PER_VECTOR;
#pragma unroll
        for (int j = 0; j < PER_VECTOR; ++j) add(bin(one.key[j]), 1u, first + j);
    }
    // Scalar keys: the unaligned head, and the tail after the last vector.
    const i64 tail = head + num_vectors * PER_VECTOR;
    for (i64 i = hk_thread_index(); i < head + (n - tail); i += stride) {
        const i64 index = i < head ? i : tail + (i - head);
        add(bin(keys[index]), 1u, index);
    }
}

// Visits keys [0, n) with coalesced scalar loads, four per thread in flight;
// four keys of one bin are added as one increment (a histogram does not care
// where equal keys sit).
template <typename Bin, typename Add>
__device__ __forceinline__ void for_each_key_coalesced(const hk_key* keys, i64 n, const Bin& bin,
                                                       Add& add) {
    const i64 stride = hk_thread_count();
    i64 i = hk_thread_index();
    for (; i + 3 * stride < n; i += 4 * stride) {
        decltype(bin(keys[i])) b[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) b[k] = bin(keys[i + k * stride]);
        if (b[0] == b[1] && b[1] == b[2] && b[2] == b[3]) {
            add(b[0], 4u, i);
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) add(b[k], 1u, i + k * stride);
        }
    }
    for (; i < n; i += stride) add(bin(keys[i]), 1u, i);
}

struct Counters {
    unsigned* shared;  // this lane's copy
    u64 shared_bins;
    u64 low_bins;  // narrow counters: bins in the low halves of the words
    u64* hist;
    u64 num_bins;
    u64* first_bad;
    // With HOLD_RUNS, this lane's pending global add: a run of one global bin
    // is added once (one hot bin past shared memory costs one atomic per
    // lane, not one per warp and vector).
    u64 held_bin = NOT_HELD;
    u64 held = 0;

    // B: the bin functor's type, u64 or a narrower unsigned type when every
    // counter index fits it (the compares and the address then take fewer
    // instructions).
    template <typename B>
    __device__ __forceinline__ void operator()(B b, unsigned count, i64 first_index) {
        if (b < (B)shared_bins) {
            add_shared(b, count);
            return;
        }
        if (b >= (B)num_bins) {
            hk_note_bad_key(first_bad, first_index);
            return;
        }
        add_global(b, count);
    }

#if NARROW_COUNTERS
    template <typename B>
    __device__ __forceinline__ void add_shared(B b, unsigned count) {
        const bool high = b >= (B)low_bins;
        const unsigned shift = high ? 16 : 0;
        unsigned* word = &shared[high ? b - (B)low_bins : b];
        const unsigned spill_bit = (unsigned)NARROW_SPILL << shift;
        if ((atomicAdd(word, count << shift) + (count << shift)) & spill_bit) {
            if (atomicAnd(word, ~spill_bit) & spill_bit) atomicAdd(&hist[b], (u64)NARROW_SPILL);
        }
    }
#else
    template <typename B>
    __device__ __forceinline__ void add_shared(B b, unsigned count) { atomicAdd(&shared[b], count); }
#endif

    // One vector's keys, each in a shared bin: equal bins added as one
    // increment (a run: sorted samples, one hot bin).
    __device__ __forceinline__ void add_vector_shared(const unsigned* bins) {
        bool same = true;
#pragma unroll
        for (int j = 1; j < PER_VECTOR; ++j) same &= bins[j] == bins[0];
        if (same) {
            add_shared(bins[0], (unsigned)PER_VECTOR);
            return;
        }
#pragma unroll
        for (int j = 0; j < PER_VECTOR; ++j) add_shared(bins[j], 1u);
    }

    // Lanes reach this together only when their keys fall past shared_bins;
    // __activemask names exactly those lanes.
    __device__ __forceinline__ void add_global(u64 b, unsigned count) {
        const unsigned active = __activemask();
        // num_bins <= 2^32 - 1 is checked by the host, so b fits 32 bits.
        const unsigned bin = (unsigned)b;
        if (__reduce_min_sync(active, bin) == __reduce_max_sync(active, bin)) {
            const unsigned total = __reduce_add_sync(active, count);
            if ((threadIdx.x & 31) == (unsigned)(__ffs(active) - 1)) hold(b, total);
        } else {
            hold(b, count);
        }
    }

#if HOLD_RUNS

    __device__ __forceinline__ void hold(u64 b, unsigned count) {
        if (b == held_bin) {
            held += count;
            return;
        }
        flush();
        held_bin = b;
        held = count;
    }

    __device__ __forceinline__ void flush() {
        if (held) atomicAdd(&hist[held_bin], held);
        held = 0;
    }
#else
    __device__ __forceinline__ void hold(u64 b, unsigned count) { atomicAdd(&hist[b], (u64)count); }
    __device__ __forceinline__ void flush() {}
#endif
};


// Narrow counters: bins [0, low_bins) count in the low halves of the words.
__device__ __forceinline__ u64 hk_low_bins(u64 shared_bins) { return (shared_bins + 1) / 2; }

// Words per copy, with one word of padding (the shared layout above).
__device__ __forceinline__ u64 hk_copy_stride(u64 shared_bins) {
    return (NARROW_COUNTERS ? hk_low_bins(shared_bins) : shared_bins) + 1;
}

// Zeroes the block's COPIES copies of `stride` words; returns after a barrier.
__device__ __forceinline__ void hk_zero_counters(unsigned* counters, u64 stride) {
    for (u64 j = threadIdx.x; j < COPIES * stride; j += blockDim.x) counters[j] = 0;
    __syncthreads();
}

// After the walk (and every lane's flush): the block's shared sums into hist,
// atomic adds into zeroed counts, or with `overwrite` plain stores of every
// bin, zeros included (the launcher sets it only when this block holds every
// key's count).
__device__ __forceinline__ void hk_merge_counters(const unsigned* counters, u64 shared_bins,
                                                  u64 stride, u64* hist, unsigned overwrite) {
    __syncthreads();
#if NARROW_COUNTERS
    (void)stride;
    const u64 low_bins = hk_low_bins(shared_bins);
#endif
    for (u64 b = threadIdx.x; b < shared_bins; b += blockDim.x) {
#if NARROW_COUNTERS
        const bool high = b >= low_bins;
        const u64 sum = (counters[high ? b - low_bins : b] >> (high ? 16 : 0)) & 0xffffu;
#else
        u64 sum = 0;
        for (unsigned c = 0; c < COPIES; ++c) sum += counters[c * stride + b];
#endif
        if (overwrite) {
            hist[b] = sum;
        } else if (sum) {
            atomicAdd(&hist[b], sum);
        }
    }
}
