// Counting sort: count, exclusive scan, scatter.
//
// The chapter's scatter (7.3), judged by oracles.counting_sort as "sorted and
// a permutation", its stability violations counted and reported. It counts
// with atomic_histogram.cu, scans with exclusive_scan.cu, then
//   scatter_atomic_cursor  pos = atomicAdd(&cursor[bin], 1). The order in which
//                          lanes of different warps win the cursor is the
//                          hardware's, so equal keys may leave input order.
//
// The stable sort, judged by oracles.counting_sort: keys and original indices
// equal. It is a least-significant-digit radix sort on the key's bin, one
// 8-bit digit per pass (one pass when num_bins <= 256); each pass is a stable
// counting sort by its digit, so after the last pass equal bins keep input
// order. The count and the scan of every pass come first, in one read of the
// keys; then each pass reads its keys once ("onesweep": Merrill and Garland's
// single-pass scan with decoupled look-back, as CUB's radix sort does it):
//   digit_histograms  counts each pass's digits (pass p's digit is bits
//                     [p * DIGIT_BITS, +DIGIT_BITS) of the key's bin) and
//                     reports bad keys; the last block to finish turns each
//                     pass's counts into the digits' first output slots.
//   onesweep_scatter  one launch per pass. Blocks take tiles (TILE_KEYS keys)
//                     in input order from a counter. A tile is ranked stably
//                     in shared memory (each warp walks its own slice in input
//                     order, its lanes finding their peers through digit
//                     masks, then digits are offset warp by warp) and each
//                     digit's count in it published;
//                     thread d then walks back over the earlier tiles' words
//                     for digit d, adding counts until it meets one that holds
//                     the keys of digit d in all tiles before it (a prefix),
//                     and publishes its own prefix. The tile, staged in digit
//                     order, goes out run by run, so neighbouring threads
//                     store to neighbouring addresses. A tile only waits on
//                     tiles taken before it, by blocks already running, so
//                     every walk ends.
// A pass after the first carries the previous pass's original indices along
// (in_index); the first pass makes them from the key's position.
//   resident_sort     the same passes in ONE launch when every tile fits on
//                     the GPU at once (small N): blocks wait for each other
//                     between the steps of a pass instead of counting first
//                     and looking back (see its section below).
//   rank_sort         the smallest inputs (up to RANK_MAX_KEYS keys): each
//                     key's output slot counted directly, one launch, no
//                     passes and no waits (its section, at the end).
//
// Built with -DRADIX_KEYS=1, the same passes sort full-width keys (gpu.radix_sort,
// one pass per byte of the key): a key's digits come from its order-preserving
// unsigned image, and every key is valid (num_bins and first_bad are not read).
#include "common.cuh"

#ifdef RADIX_KEYS
// The key's bits as unsigned, with a signed key's sign bit flipped: negative
// keys then come before non-negative ones, each in increasing order.
__device__ __forceinline__ u64 sort_bin(hk_key key) {
    const unsigned bits = 8 * sizeof(hk_key);
    const u64 width = ~0ULL >> (64 - bits);
    const u64 sign = (hk_key)-1 < (hk_key)0 ? 1ULL << (bits - 1) : 0ULL;
    return ((u64)key & width) ^ sign;
}
__device__ __forceinline__ bool sort_key_valid(u64, u64) { return true; }
#else
__device__ __forceinline__ u64 sort_bin(hk_key key) { return hk_bin(key); }
__device__ __forceinline__ bool sort_key_valid(u64 bin, u64 num_bins) { return bin < num_bins; }
#endif

// The count (atomic_histogram.cu) reported any bad key; cursor starts as the
// exclusive scan of the counts. A bad key is skipped here, as the count skipped
// it, so a call that does not wait for the count's verdict (check=False) still
// writes nothing out of bounds.
extern "C" __global__ void scatter_atomic_cursor(const hk_key* keys, i64 n, u64 num_bins,
                                                 u64* cursor, hk_key* out_keys,
                                                 hk_index* out_index) {
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        hk_key key = keys[i];
        const u64 bin = hk_bin(key);
        if (bin >= num_bins) continue;
        u64 pos = atomicAdd(&cursor[bin], 1ULL);
        out_keys[pos] = key;
        out_index[pos] = (hk_index)i;
    }
}

// --- the stable sort's tiles ---------------------------------------------------

#ifndef TILE_WARPS
#define TILE_WARPS 8
#endif
#ifndef TILE_ITEMS
#define TILE_ITEMS 20  // rounds of 32 keys per warp per tile
#endif
#ifndef WIDE_KEY_TILE_ITEMS
#define WIDE_KEY_TILE_ITEMS 12  // 8-byte keys: a tile's staging stays at 48 KiB
#endif
#define KEY_TILE_ITEMS (sizeof(hk_key) == 8 ? WIDE_KEY_TILE_ITEMS : TILE_ITEMS)
#define TILE_THREADS (TILE_WARPS * 32)
#define TILE_KEYS (TILE_THREADS * KEY_TILE_ITEMS)
#ifndef DIGIT_BITS
#define DIGIT_BITS 8
#endif
#ifndef MAX_PASSES
#define MAX_PASSES 8  // a pass per byte of a 64-bit key
#endif
#ifndef HIST_ITEMS
#define HIST_ITEMS 8  // keys each thread of digit_histograms loads per round
#endif
#ifndef STAGE_LOADS
#define STAGE_LOADS 4  // rounds whose original indices a thread loads at once
#endif
// onesweep_scatter blocks per SM the registers must allow (8-byte keys: fewer)
#ifndef ONESWEEP_MIN_BLOCKS
#define ONESWEEP_MIN_BLOCKS 3
#endif
#ifndef WIDE_KEY_ONESWEEP_MIN_BLOCKS
#define WIDE_KEY_ONESWEEP_MIN_BLOCKS 3
#endif
#ifndef RESIDENT_MIN_BLOCKS
#define RESIDENT_MIN_BLOCKS 4  // resident_sort's blocks per SM (its own tiles: host's choice)
#endif
#define KEY_ONESWEEP_MIN_BLOCKS \
    (sizeof(hk_key) == 8 ? WIDE_KEY_ONESWEEP_MIN_BLOCKS : ONESWEEP_MIN_BLOCKS)
#define KEY_RESIDENT_MIN_BLOCKS \
    (sizeof(hk_key) == 8 ? WIDE_KEY_ONESWEEP_MIN_BLOCKS : RESIDENT_MIN_BLOCKS)
#define MAX_DIGITS (1 << DIGIT_BITS)
#define NO_DIGIT 0xffffffffu

#if TILE_THREADS < MAX_DIGITS
#error "the tile offsets digits with one thread per digit"
#endif

__device__ __forceinline__ unsigned lanes_below() {
    unsigned mask;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
    return mask;
}

__device__ __forceinline__ unsigned digit_of(u64 bin, unsigned shift) {
    return (unsigned)(bin >> shift) & (MAX_DIGITS - 1);
}

template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T value) {
    const unsigned lane = threadIdx.x & 31;
    for (int d = 1; d < 32; d <<= 1) {
        T up = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value += up;
    }
    return value;
}

// Exclusive prefix sum of one value per thread over a TILE_THREADS block.
template <typename T>
__device__ T tile_exclusive_sum(T value) {
    __shared__ T warp_offsets[TILE_WARPS];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const T inclusive = warp_inclusive_sum(value);
    if (lane == 31) warp_offsets[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const T mine = lane < TILE_WARPS ? warp_offsets[lane] : (T)0;
        const T running = warp_inclusive_sum(mine);
        if (lane < TILE_WARPS) warp_offsets[lane] = running - mine;
    }
    __syncthreads();
    const T exclusive = warp_offsets[warp] + inclusive - value;
    __syncthreads();  // warp_offsets is reused by the next call
    return exclusive;
}

// Lanes holding this lane's digit. Each live lane ORs its bit into its
// digit's mask word (masks: this warp's MAX_DIGITS words of shared memory, zero
// on entry), reads the word back, and the digit's lowest lane zeroes it again:
// a shared atomic and a load a key, where one ballot per digit bit costs
// about 50 instructions a round of 32 keys (docs/performance.md). A dead
// lane (NO_DIGIT) has no peers.
__device__ __forceinline__ unsigned same_digit_lanes(unsigned digit, unsigned* masks) {
    const unsigned lane = threadIdx.x & 31;
    if (digit != NO_DIGIT) atomicOr(&masks[digit], 1u << lane);
    __syncwarp();
    const unsigned peers = digit != NO_DIGIT ? masks[digit] : 0u;
    __syncwarp();  // every lane has read its word before it is zeroed
    if (digit != NO_DIGIT && lane == __ffs(peers) - 1) masks[digit] = 0u;
    return peers;
}

// Reads of what another block may have written in the same launch
// (resident_sort's later passes) go through L2 (ld.global.cg): L1 is not kept
// coherent across SMs. What an earlier launch wrote takes the default path
// (onesweep_scatter: its code as measured).
template <bool kThroughL2, typename T>
__device__ __forceinline__ T load_global(const T* at) {
    if constexpr (kThroughL2)
        return __ldcg(at);
    else
        return *at;
}

// This warp's slice of a tile: KEY_TILE_ITEMS rounds of 32 consecutive keys.
template <bool kThroughL2>
__device__ __forceinline__ void load_slice(const hk_key* keys, i64 n, i64 tile,
                                           hk_key (&slice)[KEY_TILE_ITEMS]) {
    const i64 base =
        tile * TILE_KEYS + (threadIdx.x >> 5) * (KEY_TILE_ITEMS * 32) + (threadIdx.x & 31);
#pragma unroll
    for (int k = 0; k < KEY_TILE_ITEMS; ++k) {
        const i64 i = base + k * 32;
        slice[k] = i < n ? load_global<kThroughL2>(keys + i) : (hk_key)0;
    }
}

static_assert(TILE_KEYS <= 65535, "a staged slot in a tile must fit warp_counts");

// One tile being ranked, in shared memory: the digits' counts and offsets.
struct TileStage {
    // While ranking, warp w's count of digit d; then (offset_digits) the staged
    // slot of the first key of digit d that warp w holds.
    unsigned short warp_counts[TILE_WARPS][MAX_DIGITS];
    unsigned digit_start[MAX_DIGITS];  // each digit's first slot in the staged tile
    unsigned staged;                   // keys staged in this tile
};

// The tile staged in digit order, in dynamic shared memory: TILE_KEYS keys,
// then their TILE_KEYS original indices. The indices are loaded coalesced with
// their keys and moved through shared memory like them, not gathered at the
// write. Before it is staged, the same memory holds each warp's MAX_DIGITS
// digit masks while the tile is ranked (rank_slice), so its size (the host's
// policy.staged_tile_bytes) is the larger of the two.
#define RANK_MASK_BYTES ((u64)TILE_WARPS * MAX_DIGITS * sizeof(unsigned))
#define STAGED_TILE_BYTES \
    max((u64)TILE_KEYS * (sizeof(hk_key) + sizeof(hk_index)), RANK_MASK_BYTES)
struct StagedTile {
    hk_key* keys;
    hk_index* index;
};

__device__ __forceinline__ StagedTile staged_tile(u64* words) {
    hk_key* keys = (hk_key*)words;
    return StagedTile{keys, (hk_index*)(keys + TILE_KEYS)};
}

// A key's place in its warp's slice, in one register: its digit and its rank
// among the slice's keys of that digit (< KEY_TILE_ITEMS * 32).
#define PLACE_DIGIT(place) ((place) >> 16)
#define PLACE_RANK(place) ((place) & 0xffffu)
#define NO_PLACE 0xffffffffu  // a bad key, or a slot past the tile's keys

// 1. Each warp ranks its slice (KEY_TILE_ITEMS rounds of 32 consecutive keys)
//    in input order: rank = keys of the same digit before it in this warp's
//    slice. A bad key, or a slot past the tile's tile_n keys, gets NO_PLACE.
//    The staged tile is free while ranking: its first words hold each warp's
//    digit masks (same_digit_lanes).
__device__ __forceinline__ void rank_slice(const hk_key (&held)[KEY_TILE_ITEMS], int tile_n,
                                           u64 num_bins, unsigned shift, unsigned num_digits,
                                           TileStage& stage, u64* staged_words,
                                           unsigned (&places)[KEY_TILE_ITEMS]) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned* masks = (unsigned*)staged_words + warp * MAX_DIGITS;
    for (unsigned d = lane; d < num_digits; d += 32) {
        stage.warp_counts[warp][d] = 0;
        masks[d] = 0u;
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < KEY_TILE_ITEMS; ++k) {
        const int pos = (int)(warp * (KEY_TILE_ITEMS * 32) + k * 32 + lane);
        const u64 bin = sort_bin(held[k]);
        // A bad key (the count reported it and skipped it) is skipped here
        // too: nothing is written out of bounds, even when the host does not
        // wait for the count's verdict.
        const unsigned digit =
            pos < tile_n && sort_key_valid(bin, num_bins) ? digit_of(bin, shift) : NO_DIGIT;
        const unsigned peers = same_digit_lanes(digit, masks);
        const unsigned leader = __ffs(peers) - 1;
        unsigned before = 0;
        if (digit != NO_DIGIT && lane == leader) {
            before = stage.warp_counts[warp][digit];
            stage.warp_counts[warp][digit] = (unsigned short)(before + __popc(peers));
        }
        before = __shfl_sync(0xffffffffu, before, leader);
        const unsigned rank = before + __popc(peers & lanes_below());
        places[k] = digit == NO_DIGIT ? NO_PLACE : digit << 16 | rank;
        __syncwarp();
    }
}

// 2. Thread d owns digit d: the digits' totals become each digit's start in
//    the tile, and each warp's count the staged slot of the warp's first key
//    of the digit (so staging a key reads one counter, not two).
//    Returns thread d's total: the tile's keys of digit d.
__device__ __forceinline__ unsigned offset_digits(unsigned num_digits, TileStage& stage) {
    __syncthreads();  // every warp has ranked its slice
    unsigned total = 0;
    if (threadIdx.x < num_digits)
        for (int w = 0; w < TILE_WARPS; ++w) total += stage.warp_counts[w][threadIdx.x];
    const unsigned start = tile_exclusive_sum(total);
    if (threadIdx.x < num_digits) {
        unsigned slot = start;
        for (int w = 0; w < TILE_WARPS; ++w) {
            const unsigned c = stage.warp_counts[w][threadIdx.x];
            stage.warp_counts[w][threadIdx.x] = (unsigned short)slot;
            slot += c;
        }
        stage.digit_start[threadIdx.x] = start;
    }
    if (threadIdx.x == num_digits - 1) stage.staged = start + total;
    __syncthreads();
    return total;
}

// 3. Stage the tile in digit order (stable within each digit), each key with
//    its original index: its position in the input on the first pass
//    (in_index == 0), else the one the previous pass carried.
template <bool kThroughL2>
__device__ __forceinline__ void stage_tile(const hk_key (&held)[KEY_TILE_ITEMS],
                                           const unsigned (&places)[KEY_TILE_ITEMS],
                                           i64 tile_base, const hk_index* in_index,
                                           const TileStage& stage, StagedTile staged) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const i64 slice = tile_base + warp * (KEY_TILE_ITEMS * 32) + lane;
    // STAGE_LOADS rounds' index loads in flight at once: all of them would
    // spill registers at KEY_ONESWEEP_MIN_BLOCKS blocks per SM.
#pragma unroll
    for (int first = 0; first < KEY_TILE_ITEMS; first += STAGE_LOADS) {
        hk_index moved[STAGE_LOADS];
#pragma unroll
        for (int j = 0; j < STAGE_LOADS; ++j) {
            const int k = first + j;
            const i64 at = slice + k * 32;
            if (k < KEY_TILE_ITEMS)
                moved[j] = in_index && places[k] != NO_PLACE ? load_global<kThroughL2>(in_index + at)
                                                             : (hk_index)at;
        }
#pragma unroll
        for (int j = 0; j < STAGE_LOADS; ++j) {
            const int k = first + j;
            if (k >= KEY_TILE_ITEMS || places[k] == NO_PLACE) continue;
            const unsigned digit = PLACE_DIGIT(places[k]);
            const unsigned local = stage.warp_counts[warp][digit] + PLACE_RANK(places[k]);
            staged.keys[local] = held[k];
            staged.index[local] = moved[j];
        }
    }
}

// 4. Each digit's run goes to consecutive output slots, so neighbouring
//    threads store to neighbouring addresses: staged slot p of digit d goes to
//    output slot p + to_output[d] (unsigned arithmetic, which wraps: the
//    digit's first output slot minus its first staged slot), one shared read
//    a key where a cursor and the digit's start were two.
__device__ __forceinline__ void write_tile(const TileStage& stage, StagedTile staged,
                                           const u64* to_output, unsigned shift,
                                           hk_key* out_keys, hk_index* out_index) {
    for (int p = threadIdx.x; p < (int)stage.staged; p += TILE_THREADS) {
        const hk_key key = staged.keys[p];
        const u64 dst = to_output[digit_of(sort_bin(key), shift)] + (u64)p;
        out_keys[dst] = key;
        out_index[dst] = staged.index[p];
    }
}

// --- onesweep ----------------------------------------------------------------

// A tile's look-back word for one digit: a flag and a count in one 64-bit
// word, so a single store publishes both. 0 = not yet published.
#define TILE_AGGREGATE (1ULL << 62)  // count = the digit's keys in this tile
#define TILE_PREFIX (1ULL << 63)     // count = the digit's keys in tiles 0 .. this one
#define TILE_COUNT_MASK (TILE_AGGREGATE - 1)

// Adds each lane's digit (NO_DIGIT: nothing) to counts. A warp whose lanes
// all hold one digit adds 32 once: all-equal and sorted keys, and the zero
// top bytes of small wide keys, would otherwise queue 32 lanes on one counter.
__device__ __forceinline__ void count_warp_digits(unsigned* counts, unsigned digit) {
    const unsigned lowest = __reduce_min_sync(0xffffffffu, digit);
    const unsigned highest = __reduce_max_sync(0xffffffffu, digit);
    if (lowest == highest) {
        if (digit != NO_DIGIT && (threadIdx.x & 31) == 0) atomicAdd(&counts[digit], 32u);
    } else if (digit != NO_DIGIT) {
        atomicAdd(&counts[digit], 1u);
    }
}

// digit_starts[p * MAX_DIGITS + d] (zeroed by the host, as is blocks_done)
// ends as the first output slot of pass p's digit d. Bad keys are reported
// (first_bad) and not counted.
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
digit_histograms(const hk_key* keys, i64 n, u64 num_bins, unsigned num_passes,
                 u64* digit_starts, u64* blocks_done, u64* first_bad) {
    __shared__ unsigned counts[MAX_PASSES][MAX_DIGITS];
    __shared__ bool last_block;
    hk_skew_warps();
    for (unsigned j = threadIdx.x; j < MAX_PASSES * MAX_DIGITS; j += TILE_THREADS)
        (&counts[0][0])[j] = 0;
    __syncthreads();
    const i64 round_keys = (i64)TILE_THREADS * HIST_ITEMS;
    // round is the same for the whole block: every lane of a warp takes part
    // in count_warp_digits.
    for (i64 round = blockIdx.x * round_keys; round < n; round += gridDim.x * round_keys) {
        hk_key held[HIST_ITEMS];
#pragma unroll
        for (int k = 0; k < HIST_ITEMS; ++k) {
            const i64 at = round + k * TILE_THREADS + threadIdx.x;
            held[k] = at < n ? keys[at] : (hk_key)0;
        }
#pragma unroll
        for (int k = 0; k < HIST_ITEMS; ++k) {
            const i64 at = round + k * TILE_THREADS + threadIdx.x;
            const u64 bin = sort_bin(held[k]);
            const bool counted = at < n && sort_key_valid(bin, num_bins);
            if (at < n && !counted) hk_note_bad_key(first_bad, at);
            for (unsigned pass = 0; pass < num_passes; ++pass)
                count_warp_digits(counts[pass],
                                  counted ? digit_of(bin, pass * DIGIT_BITS) : NO_DIGIT);
        }
    }
    __syncthreads();
    for (unsigned j = threadIdx.x; j < num_passes * MAX_DIGITS; j += TILE_THREADS) {
        const unsigned c = (&counts[0][0])[j];
        if (c) atomicAdd(&digit_starts[j], (u64)c);
    }
    // The last block to finish sees every block's counts and scans them.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(blocks_done, 1ULL) == gridDim.x - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    for (unsigned pass = 0; pass < num_passes; ++pass) {
        volatile u64* pass_counts = digit_starts + pass * MAX_DIGITS;
        const u64 count = threadIdx.x < MAX_DIGITS ? pass_counts[threadIdx.x] : 0ULL;
        const u64 start = tile_exclusive_sum(count);
        if (threadIdx.x < MAX_DIGITS) pass_counts[threadIdx.x] = start;
    }
}

// A look-back word as another block published it (0 until then). Relaxed
// loads at GPU scope: the word carries its own flag, so no ordering with
// other memory is needed, only a fresh value on every read.
__device__ __forceinline__ u64 load_lookback(const u64* at) {
    u64 word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(at) : "memory");
    return word;
}

__device__ __forceinline__ void store_lookback(u64* at, u64 word) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(at), "l"(word) : "memory");
}

// The keys of digit d in the tiles before `tile` (its word for d is published).
__device__ u64 keys_in_earlier_tiles(const u64* lookback, i64 tile, unsigned d) {
    u64 before = 0;
    for (i64 t = tile - 1; t >= 0; --t) {
        u64 word;
        do {
            word = load_lookback(&lookback[t * MAX_DIGITS + d]);
        } while (word == 0);
        before += word & TILE_COUNT_MASK;
        if (word & TILE_PREFIX) break;
    }
    return before;
}

// One pass: keys were validated by digit_histograms; digit_starts holds this
// pass's MAX_DIGITS first output slots, next_tile (zeroed) hands out tiles and
// lookback (num_tiles x MAX_DIGITS words, zeroed) holds the published counts.
// Dynamic shared memory: the staged tile (StagedTile).
extern "C" __global__ void __launch_bounds__(TILE_THREADS, KEY_ONESWEEP_MIN_BLOCKS)
onesweep_scatter(const hk_key* keys, const hk_index* in_index, i64 n, u64 num_bins,
                 unsigned shift, unsigned num_digits, i64 num_tiles,
                 const u64* digit_starts, u64* next_tile, u64* lookback, hk_key* out_keys,
                 hk_index* out_index) {
    __shared__ TileStage stage;
    __shared__ u64 to_output[MAX_DIGITS];  // staged slot of digit d + to_output[d] = output slot
    __shared__ i64 taken;
    extern __shared__ u64 staged_words[];
    const StagedTile staged = staged_tile(staged_words);
    hk_skew_warps();
    hk_require_dynamic_shared(STAGED_TILE_BYTES);
    for (;;) {
        if (threadIdx.x == 0) taken = (i64)atomicAdd(next_tile, 1ULL);
        __syncthreads();
        const i64 tile = taken;
        if (tile >= num_tiles) break;
        const i64 tile_base = tile * TILE_KEYS;
        hk_key held[KEY_TILE_ITEMS];
        unsigned places[KEY_TILE_ITEMS];
        load_slice<false>(keys, n, tile, held);
        rank_slice(held, (int)min((i64)TILE_KEYS, n - tile_base), num_bins, shift, num_digits,
                   stage, staged_words, places);
        const unsigned total = offset_digits(num_digits, stage);
        u64* mine = lookback + tile * MAX_DIGITS + threadIdx.x;
        if (threadIdx.x < num_digits)  // published early: later tiles may be waiting
            store_lookback(mine, (tile == 0 ? TILE_PREFIX : TILE_AGGREGATE) | total);
        stage_tile<false>(held, places, tile_base, in_index, stage, staged);
        if (threadIdx.x < num_digits) {
            const u64 before = keys_in_earlier_tiles(lookback, tile, threadIdx.x);
            if (tile > 0) store_lookback(mine, TILE_PREFIX | (before + total));
            to_output[threadIdx.x] =
                digit_starts[threadIdx.x] + before - stage.digit_start[threadIdx.x];
        }
        __syncthreads();
        write_tile(stage, staged, to_output, shift, out_keys, out_index);
        __syncthreads();  // every thread has read to_output, taken and the staged tile
    }
}

// --- resident: the whole sort in one launch ----------------------------------
//
// For inputs whose tiles can all be on the GPU at once (a cooperative launch
// guarantees it, or refuses): one block per tile, and blocks wait for each
// other (grid_wait) instead of for the next launch. Each pass ranks its tile
// as onesweep_scatter does, publishes the tile's count of each digit, waits;
// sums each digit's counts over the tiles before its own (with many tiles:
// scans digit columns of those counts across the tiles, waits); then writes.
// No digit_histograms, no look-back, no tile counter: one launch, which is
// what a call at small N pays for. A later pass reads only the valid keys the
// pass before wrote (the first pass skips bad keys and reports them), through
// L2 (load_slice<true>, stage_tile<true>), as L1 may hold stale lines of a
// buffer another block has rewritten since.

// Up to this many tiles (contract.RESIDENT_DIRECT_PREFIX_TILES), every block
// sums the tiles' digit counts itself (a column of at most DIRECT_PREFIX_TILES
// reads per thread, which a warp makes as 32 reads of different lines)
// instead of waiting for a scan. Measured on the H200 (docs/performance.md):
// 1.6x faster than the scan at 16 tiles, 1.3-1.4x slower at 64.
#ifndef DIRECT_PREFIX_TILES
#define DIRECT_PREFIX_TILES 32
#endif

// Every block waits here until all gridDim.x blocks have arrived for the
// `passed`-th time (arrivals is zeroed by the host before the launch).
__device__ __forceinline__ void grid_wait(u64* arrivals, unsigned& passed) {
    __syncthreads();  // the block's writes come before its arrival
    ++passed;
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(arrivals, 1ULL);
        const u64 everyone = (u64)passed * gridDim.x;
        while (*(volatile u64*)arrivals < everyone) __nanosleep(64);
        __threadfence();
    }
    __syncthreads();
}

// After a block's last grid_wait: it departs (one more arrival); the last
// block to depart -- every other has left its last wait by then -- sets
// arrivals back to zero, so the next launch needs no memset of it.
__device__ __forceinline__ void leave_arrivals_zeroed(u64* arrivals, unsigned passed) {
    if (threadIdx.x == 0) {
        const u64 departed = atomicAdd(arrivals, 1ULL) + 1;
        if (departed == (u64)(passed + 1) * gridDim.x) atomicExch(arrivals, 0ULL);
    }
}

// tile_counts is digit-major: tile_counts[d * gridDim.x + t] = tile t's keys
// of digit d. Block b turns columns d = b, b + gridDim.x, ... into exclusive
// prefixes over the tiles (the keys of digit d in tiles before t) and writes
// each column's total to digit_totals[d].
__device__ void scan_digit_columns(unsigned* tile_counts, unsigned* digit_totals) {
    const unsigned tiles = gridDim.x;
    const unsigned per_thread = (tiles + TILE_THREADS - 1) / TILE_THREADS;
    const unsigned first = threadIdx.x * per_thread;
    for (unsigned d = blockIdx.x; d < MAX_DIGITS; d += gridDim.x) {
        unsigned* column = tile_counts + (size_t)d * tiles;
        unsigned mine = 0;
        for (unsigned j = first; j < first + per_thread && j < tiles; ++j)
            mine += __ldcg(&column[j]);
        unsigned running = tile_exclusive_sum(mine);
        for (unsigned j = first; j < first + per_thread && j < tiles; ++j) {
            const unsigned count = __ldcg(&column[j]);
            column[j] = running;
            running += count;
        }
        if (threadIdx.x == TILE_THREADS - 1) digit_totals[d] = running;
    }
}

// One block per tile, all resident (cooperative launch; its own launch bounds,
// KEY_RESIDENT_MIN_BLOCKS, and tiles of the host's choice, at most
// contract.RESIDENT_TILE_ITEMS rounds: 528 tiles on the H200's 132 SMs, 2^21
// 4-byte keys). scratch: the arrivals word (zero at the launch, and left
// zero), then MAX_DIGITS x gridDim.x tile counts, then
// MAX_DIGITS digit totals. Passes ping-pong between (spare_keys, spare_index)
// and the outputs so that the last pass writes the outputs. Dynamic shared
// memory: the staged tile (StagedTile).
extern "C" __global__ void __launch_bounds__(TILE_THREADS, KEY_RESIDENT_MIN_BLOCKS)
resident_sort(const hk_key* keys, i64 n, u64 num_bins, unsigned num_passes, u64* scratch,
              u64* first_bad, hk_key* spare_keys, hk_index* spare_index, hk_key* out_keys,
              hk_index* out_index) {
    __shared__ TileStage stage;
    __shared__ u64 to_output[MAX_DIGITS];  // staged slot of digit d + to_output[d] = output slot
    __shared__ i64 valid_keys;          // keys the pass wrote: the next pass reads these
    extern __shared__ u64 staged_words[];
    const StagedTile staged = staged_tile(staged_words);
    hk_skew_warps();
    hk_require_dynamic_shared(STAGED_TILE_BYTES);
    u64* arrivals = scratch;
    unsigned* tile_counts = (unsigned*)(scratch + 1);
    unsigned* digit_totals = tile_counts + (size_t)MAX_DIGITS * gridDim.x;
    unsigned passed = 0;
    const i64 tile = blockIdx.x, tile_base = tile * TILE_KEYS;
    const hk_key* source = keys;
    const hk_index* source_index = nullptr;  // the first pass makes indices from positions
    i64 source_n = n;
    for (unsigned pass = 0; pass < num_passes; ++pass) {
        const unsigned shift = pass * DIGIT_BITS;
        const unsigned num_digits =
            (unsigned)min((u64)MAX_DIGITS, ((num_bins - 1) >> shift) + 1);
        const bool writes_outputs = (num_passes - 1 - pass) % 2 == 0;
        hk_key* target_keys = writes_outputs ? out_keys : spare_keys;
        hk_index* target_index = writes_outputs ? out_index : spare_index;
        hk_key held[KEY_TILE_ITEMS];
        unsigned places[KEY_TILE_ITEMS];
        load_slice<true>(source, source_n, tile, held);
        const int tile_n = (int)max((i64)0, min((i64)TILE_KEYS, source_n - tile_base));
        rank_slice(held, tile_n, num_bins, shift, num_digits, stage, staged_words, places);
        if (pass == 0) {  // only the input can hold bad keys: report the first
            const i64 slice = tile_base + (threadIdx.x >> 5) * (KEY_TILE_ITEMS * 32) +
                              (threadIdx.x & 31);
#pragma unroll
            for (int k = 0; k < KEY_TILE_ITEMS; ++k)
                if (places[k] == NO_PLACE && slice + k * 32 < n)
                    hk_note_bad_key(first_bad, slice + k * 32);
        }
        const unsigned total = offset_digits(num_digits, stage);
        if (threadIdx.x < MAX_DIGITS)  // digits past num_digits count 0
            tile_counts[(size_t)threadIdx.x * gridDim.x + tile] =
                threadIdx.x < num_digits ? total : 0u;
        stage_tile<true>(held, places, tile_base, source_index, stage, staged);
        grid_wait(arrivals, passed);
        // Thread d: the keys of digit d in the tiles before this one, and in all.
        u64 earlier = 0, digit_total = 0;
        if (gridDim.x <= DIRECT_PREFIX_TILES) {  // few tiles: each block reads them all
            if (threadIdx.x < MAX_DIGITS) {
                const unsigned* column = tile_counts + (size_t)threadIdx.x * gridDim.x;
                for (unsigned t = 0; t < gridDim.x; ++t) {
                    const unsigned count = __ldcg(&column[t]);
                    earlier += t < tile ? count : 0u;
                    digit_total += count;
                }
            }
        } else {  // many: each column scanned once, by one block
            scan_digit_columns(tile_counts, digit_totals);
            grid_wait(arrivals, passed);
            if (threadIdx.x < MAX_DIGITS) {
                earlier = __ldcg(&tile_counts[(size_t)threadIdx.x * gridDim.x + tile]);
                digit_total = __ldcg(&digit_totals[threadIdx.x]);
            }
        }
        // digit d's first slot: the keys of the digits before it, all tiles
        const u64 digit_start = tile_exclusive_sum(digit_total);
        if (threadIdx.x < MAX_DIGITS)
            to_output[threadIdx.x] = digit_start + earlier - stage.digit_start[threadIdx.x];
        if (threadIdx.x == MAX_DIGITS - 1) valid_keys = (i64)(digit_start + digit_total);
        __syncthreads();
        write_tile(stage, staged, to_output, shift, target_keys, target_index);
        source_n = valid_keys;
        source = target_keys;
        source_index = target_index;
        // Before the next pass reads what every block wrote (and rewrites
        // tile_counts, digit_totals, the stage and valid_keys).
        if (pass + 1 < num_passes) grid_wait(arrivals, passed);
    }
    leave_arrivals_zeroed(arrivals, passed);
}

// --- Small sorts: each key's slot counted directly (rank_sort) ------------------
//
// A key's slot in the stable order is the number of keys before it there:
// those with a smaller bin, and those with an equal bin and a smaller index.
// Up to RANK_MAX_KEYS keys, rank_sort counts them by comparing every key with
// every other: n^2 comparisons (16.8M at 2^12 keys: microseconds spread over
// the GPU), where resident_sort's passes wait for each other and onesweep's
// take several launches. A bad key counts as bin num_bins, after every valid
// key: the first slots hold the valid keys' sort, as the API promises, and
// the slots stay a permutation (the host sends no num_bins past
// RANK_MAX_BINS, so a bin fits 32 bits below the padding's RANK_PAST_END).
//
// A block has RANK_WARPS warps and owns 32 keys, one per lane; its warps
// split the keys compared with into runs of whole 32-key chunks, and each
// warp stages its run in shared memory as 32-bit bins (bad keys clamped to
// num_bins) and counts. The run's chunks before the block's own chunk count
// keys whose bin is <= the lane's (an equal bin with a smaller index comes
// first), those after it count smaller bins only, and the own chunk compares
// indices too; each test is the same for the whole warp. Then the block adds
// its warps' counts and lane i writes key i to its slot.
#ifndef RADIX_KEYS
#ifndef RANK_WARPS
#define RANK_WARPS 8
#endif
#ifndef RANK_MAX_KEYS
#define RANK_MAX_KEYS 8192
#endif
#define RANK_PAST_END 0xffffffffu  // a staged slot past the last key: after every key

extern "C" __global__ void __launch_bounds__(RANK_WARPS * 32)
rank_sort(const hk_key* keys, i64 n, u64 num_bins, u64* first_bad, hk_key* out_keys,
          hk_index* out_index) {
    __shared__ __align__(16) unsigned staged[RANK_MAX_KEYS];
    __shared__ unsigned counted[RANK_WARPS][32];
    hk_skew_warps();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int chunks = (int)((n + 31) >> 5);
    const int chunks_per_warp = (chunks + RANK_WARPS - 1) / RANK_WARPS;
    const int first = min(chunks, warp * chunks_per_warp) * 32;
    const int last = min(chunks, (warp + 1) * chunks_per_warp) * 32;
    for (int j = first + lane; j < last; j += 32)
        staged[j] = j < n ? (unsigned)min(sort_bin(keys[j]), num_bins) : RANK_PAST_END;
    __syncwarp();
    const int own = blockIdx.x * 32, i = own + lane;
    const hk_key key = i < n ? keys[i] : (hk_key)0;
    const u64 bin = sort_bin(key);
    const unsigned mine = (unsigned)min(bin, num_bins);
    unsigned before = 0;
    for (int j = first; j < min(last, own); j += 4) {  // chunks before the own one
        const uint4 v = *(const uint4*)&staged[j];
        before += (v.x <= mine) + (v.y <= mine) + (v.z <= mine) + (v.w <= mine);
    }
    if (first <= own && own < last)  // the own chunk: equal bins ordered by index
        for (int j = own; j < own + 32; ++j) {
            const unsigned v = staged[j];
            before += v < mine || (v == mine && j < i);
        }
    for (int j = max(first, own + 32); j < last; j += 4) {  // chunks after it
        const uint4 v = *(const uint4*)&staged[j];
        before += (v.x < mine) + (v.y < mine) + (v.z < mine) + (v.w < mine);
    }
    counted[warp][lane] = before;
    __syncthreads();
    if (warp != 0 || i >= n) return;
    unsigned slot = 0;
#pragma unroll
    for (int w = 0; w < RANK_WARPS; ++w) slot += counted[w][lane];
    out_keys[slot] = key;
    out_index[slot] = (hk_index)i;
    if (bin >= num_bins) hk_note_bad_key(first_bad, i);
}
#endif
