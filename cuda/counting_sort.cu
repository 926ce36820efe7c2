// Counting sort: count, exclusive scan (exclusive_scan.cu), scatter.
//
// The chapter's scatter (7.3), judged by oracles.counting_sort as "sorted and
// a permutation", its stability violations counted and reported. It counts
// with atomic_histogram.cu, then
//   scatter_atomic_cursor  pos = atomicAdd(&cursor[bin], 1). The order in which
//                          lanes of different warps win the cursor is the
//                          hardware's, so equal keys may leave input order.
//
// The stable scatter, judged by oracles.counting_sort: keys and original
// indices equal. Each warp owns one contiguous segment of the input and walks
// it in order, 32 keys at a time:
//   count_segments           per-(bin, segment) counts, stored bin-major:
//                            counts[bin * num_segments + segment];
//   (the host scans that whole array: bin-major order is exactly the stable
//    output order -- bin first, then segment, i.e. input order)
//   scatter_segments_stable  lanes holding the same bin find each other with
//                            __match_any_sync; a lane's slot is its bin's
//                            cursor plus the number of peers in lower lanes,
//                            and the lowest peer advances the cursor. Only this
//                            warp touches its segment's cursors, so the output
//                            is exactly the stable order on every input.
// With num_bins small enough (the host decides), the *_shared variants keep a
// warp's per-bin counters / cursors for its current segment in shared memory
// (num_bins u64 per warp) instead of reading and writing them in global
// memory for every 32 keys.
//
// The tiled stable scatter, for num_bins <= TILE_MAX_BINS (also judged by
// oracles.counting_sort: keys and original indices equal):
//   count_tiles           per-(bin, tile) counts, bin-major, for tiles of
//                         TILE_KEYS consecutive keys; the host scans them as
//                         above, giving each (bin, tile) its output start;
//   scatter_tiles_stable  ranks a tile's keys stably in shared memory (each
//                         warp walks its own slice of the tile in input
//                         order with __match_any_sync, then bins are offset
//                         warp by warp), stages the tile in bin order, and
//                         writes each bin's run to consecutive output slots,
//                         so neighbouring threads store to neighbouring
//                         addresses.
#include "common.cuh"

#define HK_NO_BIN 0xffffffffffffffffULL  // dead lanes: matches no real bin

__device__ __forceinline__ unsigned lanes_below() {
    unsigned mask;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
    return mask;
}

// Lanes holding the same bin (dead lanes hold HK_NO_BIN and match each other).
// A 32-bit match is cheaper; it is exact whenever every bin fits 32 bits.
__device__ __forceinline__ unsigned same_bin_lanes(u64 b, u64 num_bins) {
    if (num_bins < 0xffffffffULL)
        return __match_any_sync(0xffffffffu, b == HK_NO_BIN ? 0xffffffffu : (unsigned)b);
    return __match_any_sync(0xffffffffu, b);
}

// Keys were validated by the count (atomic_histogram.cu); cursor starts as the
// exclusive scan of the counts.
extern "C" __global__ void scatter_atomic_cursor(const hk_key* keys, i64 n, u64* cursor,
                                                 hk_key* out_keys, i64* out_index) {
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        hk_key key = keys[i];
        u64 pos = atomicAdd(&cursor[hk_bin(key)], 1ULL);
        out_keys[pos] = key;
        out_index[pos] = i;
    }
}

// --- warp-owned segments ----------------------------------------------------

// One segment's column of the bin-major (bin, segment) table, in global
// memory, or a warp's private copy of it in shared memory.
struct GlobalColumn {
    u64* first;  // &table[segment]
    i64 stride;  // num_segments
    __device__ __forceinline__ u64& operator[](u64 b) const { return first[b * stride]; }
};

struct SharedColumn {
    u64* table;
    __device__ __forceinline__ u64& operator[](u64 b) const { return table[b]; }
};

// The calling warp counts keys[begin:end) into `counts`, 32 keys a round.
template <typename Column>
__device__ __forceinline__ void count_segment(const hk_key* keys, i64 begin, i64 end,
                                              u64 num_bins, Column counts, u64* first_bad) {
    const unsigned lane = threadIdx.x & 31;
    for (i64 base = begin; base < end; base += 32) {
        const i64 i = base + lane;
        u64 b = HK_NO_BIN;
        if (i < end) {
            b = hk_bin(keys[i]);
            if (b >= num_bins) {
                hk_note_bad_key(first_bad, i);
                b = HK_NO_BIN;
            }
        }
        const unsigned peers = same_bin_lanes(b, num_bins);
        if (b != HK_NO_BIN && lane == (unsigned)(__ffs(peers) - 1)) counts[b] += __popc(peers);
        __syncwarp();  // the next leader of this bin may be another lane
    }
}

// The calling warp writes keys[begin:end) in input order: a lane's slot is its
// bin's cursor plus its peers in lower lanes; the lowest peer moves the cursor.
template <typename Column>
__device__ __forceinline__ void scatter_segment(const hk_key* keys, i64 begin, i64 end,
                                                u64 num_bins, Column cursor, hk_key* out_keys,
                                                i64* out_index) {
    const unsigned lane = threadIdx.x & 31;
    for (i64 base = begin; base < end; base += 32) {
        const i64 i = base + lane;
        hk_key key = 0;
        u64 b = HK_NO_BIN;
        if (i < end) {
            key = keys[i];
            b = hk_bin(key);
            if (b >= num_bins) b = HK_NO_BIN;
        }
        const unsigned peers = same_bin_lanes(b, num_bins);
        const unsigned leader = __ffs(peers) - 1;
        u64 start = 0;
        if (b != HK_NO_BIN && lane == leader) {
            start = cursor[b];
            cursor[b] = start + __popc(peers);
        }
        start = __shfl_sync(0xffffffffu, start, leader);
        if (b != HK_NO_BIN) {
            const u64 pos = start + __popc(peers & lanes_below());
            out_keys[pos] = key;
            out_index[pos] = i;
        }
        __syncwarp();
    }
}

extern "C" __global__ void count_segments(const hk_key* keys, i64 n, u64 num_bins,
                                          i64 segment_len, i64 num_segments, u64* seg_counts,
                                          u64* first_bad) {
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        const i64 begin = seg * segment_len;
        count_segment(keys, begin, min(n, begin + segment_len), num_bins,
                      GlobalColumn{seg_counts + seg, num_segments}, first_bad);
    }
}

extern "C" __global__ void scatter_segments_stable(const hk_key* keys, i64 n, u64 num_bins,
                                                   i64 segment_len, i64 num_segments,
                                                   u64* seg_cursor, hk_key* out_keys,
                                                   i64* out_index) {
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        const i64 begin = seg * segment_len;
        scatter_segment(keys, begin, min(n, begin + segment_len), num_bins,
                        GlobalColumn{seg_cursor + seg, num_segments}, out_keys, out_index);
    }
}

extern "C" __global__ void count_segments_shared(const hk_key* keys, i64 n, u64 num_bins,
                                                 i64 segment_len, i64 num_segments,
                                                 u64* seg_counts, u64* first_bad) {
    extern __shared__ u64 tables[];
    const SharedColumn counts{tables + (threadIdx.x >> 5) * num_bins};
    const unsigned lane = threadIdx.x & 31;
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        for (u64 b = lane; b < num_bins; b += 32) counts[b] = 0;
        __syncwarp();
        const i64 begin = seg * segment_len;
        count_segment(keys, begin, min(n, begin + segment_len), num_bins, counts, first_bad);
        const GlobalColumn out{seg_counts + seg, num_segments};
        for (u64 b = lane; b < num_bins; b += 32) out[b] = counts[b];
        __syncwarp();
    }
}

extern "C" __global__ void scatter_segments_stable_shared(const hk_key* keys, i64 n,
                                                          u64 num_bins, i64 segment_len,
                                                          i64 num_segments, u64* seg_cursor,
                                                          hk_key* out_keys, i64* out_index) {
    extern __shared__ u64 tables[];
    const SharedColumn cursor{tables + (threadIdx.x >> 5) * num_bins};
    const unsigned lane = threadIdx.x & 31;
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        const GlobalColumn start{seg_cursor + seg, num_segments};
        for (u64 b = lane; b < num_bins; b += 32) cursor[b] = start[b];
        __syncwarp();
        const i64 begin = seg * segment_len;
        scatter_segment(keys, begin, min(n, begin + segment_len), num_bins, cursor, out_keys,
                        out_index);
        __syncwarp();  // the table is rewritten for the next segment
    }
}

// --- tiled stable scatter ---------------------------------------------------

#ifndef TILE_WARPS
#define TILE_WARPS 8
#endif
#ifndef TILE_ITEMS
#define TILE_ITEMS 8  // rounds of 32 keys per warp per tile
#endif
#define TILE_THREADS (TILE_WARPS * 32)
#define TILE_KEYS (TILE_THREADS * TILE_ITEMS)
#define TILE_MAX_BINS TILE_THREADS  // one thread per bin when offsetting
#define NO_BIN32 0xffffffffu

__device__ __forceinline__ unsigned warp_inclusive_sum(unsigned value) {
    const unsigned lane = threadIdx.x & 31;
    for (int d = 1; d < 32; d <<= 1) {
        unsigned up = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value += up;
    }
    return value;
}

// Exclusive prefix sum of one value per thread over a TILE_THREADS block.
__device__ unsigned tile_exclusive_sum(unsigned value) {
    __shared__ unsigned warp_offsets[TILE_WARPS];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned inclusive = warp_inclusive_sum(value);
    if (lane == 31) warp_offsets[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const unsigned mine = lane < TILE_WARPS ? warp_offsets[lane] : 0;
        const unsigned running = warp_inclusive_sum(mine);
        if (lane < TILE_WARPS) warp_offsets[lane] = running - mine;
    }
    __syncthreads();
    const unsigned exclusive = warp_offsets[warp] + inclusive - value;
    __syncthreads();  // warp_offsets is reused by the next call
    return exclusive;
}

extern "C" __global__ void __launch_bounds__(TILE_THREADS)
count_tiles(const hk_key* keys, i64 n, u64 num_bins, i64 num_tiles, u64* tile_counts,
            u64* first_bad) {
    __shared__ unsigned counts[TILE_MAX_BINS];
    const unsigned lane = threadIdx.x & 31;
    for (i64 tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        for (unsigned b = threadIdx.x; b < num_bins; b += TILE_THREADS) counts[b] = 0;
        __syncthreads();
        const i64 base = tile * TILE_KEYS;
        for (int k = 0; k < TILE_ITEMS; ++k) {
            const i64 i = base + (i64)k * TILE_THREADS + threadIdx.x;
            unsigned b = NO_BIN32;
            if (i < n) {
                const u64 bin = hk_bin(keys[i]);
                if (bin < num_bins) {
                    b = (unsigned)bin;
                } else {
                    hk_note_bad_key(first_bad, i);
                }
            }
            // Lanes holding the same bin add once: one hot bin costs one
            // shared atomic per warp, not 32.
            const unsigned peers = __match_any_sync(0xffffffffu, b);
            if (b != NO_BIN32 && lane == (unsigned)(__ffs(peers) - 1))
                atomicAdd(&counts[b], (unsigned)__popc(peers));
        }
        __syncthreads();
        for (unsigned b = threadIdx.x; b < num_bins; b += TILE_THREADS)
            tile_counts[(i64)b * num_tiles + tile] = counts[b];
        __syncthreads();
    }
}

// Keys were validated by count_tiles; tile_offsets[b * num_tiles + t] is the
// output slot of the first key of bin b in tile t.
extern "C" __global__ void __launch_bounds__(TILE_THREADS)
scatter_tiles_stable(const hk_key* keys, i64 n, u64 num_bins, i64 num_tiles,
                     const u64* tile_offsets, hk_key* out_keys, i64* out_index) {
    __shared__ unsigned warp_counts[TILE_WARPS][TILE_MAX_BINS];
    __shared__ unsigned bin_start[TILE_MAX_BINS];
    __shared__ hk_key staged_keys[TILE_KEYS];
    __shared__ unsigned short staged_pos[TILE_KEYS];
    __shared__ unsigned staged;  // keys staged in this tile
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (i64 tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const i64 base = tile * TILE_KEYS;
        const int tile_n = (int)min((i64)TILE_KEYS, n - base);
        for (unsigned b = lane; b < num_bins; b += 32) warp_counts[warp][b] = 0;
        __syncwarp();

        // 1. Each warp ranks its slice (TILE_ITEMS rounds of 32 consecutive
        //    keys) in input order: rank = keys of the same bin before it in
        //    this warp's slice.
        hk_key held[TILE_ITEMS];
        unsigned bins[TILE_ITEMS], ranks[TILE_ITEMS];
#pragma unroll
        for (int k = 0; k < TILE_ITEMS; ++k) {
            const int pos = (int)(warp * (TILE_ITEMS * 32) + k * 32 + lane);
            const bool live = pos < tile_n;
            held[k] = live ? keys[base + pos] : (hk_key)0;
            // A bad key (count_tiles reported it; the host stops before this
            // kernel) is skipped rather than written out of bounds.
            bins[k] = live && hk_bin(held[k]) < num_bins ? (unsigned)hk_bin(held[k]) : NO_BIN32;
            const unsigned peers = __match_any_sync(0xffffffffu, bins[k]);
            const unsigned leader = __ffs(peers) - 1;
            unsigned before = 0;
            if (bins[k] != NO_BIN32 && lane == leader) {
                before = warp_counts[warp][bins[k]];
                warp_counts[warp][bins[k]] = before + __popc(peers);
            }
            before = __shfl_sync(0xffffffffu, before, leader);
            ranks[k] = before + __popc(peers & lanes_below());
            __syncwarp();
        }
        __syncthreads();

        // 2. Thread b owns bin b: the warps' counts become offsets within the
        //    bin, and the bins' totals become each bin's start in the tile.
        unsigned total = 0;
        if (threadIdx.x < num_bins) {
            for (int w = 0; w < TILE_WARPS; ++w) {
                const unsigned c = warp_counts[w][threadIdx.x];
                warp_counts[w][threadIdx.x] = total;
                total += c;
            }
        }
        const unsigned start = tile_exclusive_sum(total);
        if (threadIdx.x < num_bins) bin_start[threadIdx.x] = start;
        if (threadIdx.x == num_bins - 1) staged = start + total;
        __syncthreads();

        // 3. Stage the tile in bin order (stable within each bin).
#pragma unroll
        for (int k = 0; k < TILE_ITEMS; ++k) {
            if (bins[k] == NO_BIN32) continue;
            const unsigned local = bin_start[bins[k]] + warp_counts[warp][bins[k]] + ranks[k];
            staged_keys[local] = held[k];
            staged_pos[local] = (unsigned short)(warp * (TILE_ITEMS * 32) + k * 32 + lane);
        }
        __syncthreads();

        // 4. Each bin's run goes to consecutive output slots.
        for (int p = threadIdx.x; p < (int)staged; p += TILE_THREADS) {
            const hk_key key = staged_keys[p];
            const unsigned b = (unsigned)hk_bin(key);
            const u64 dst = tile_offsets[(i64)b * num_tiles + tile] + (u64)(p - (int)bin_start[b]);
            out_keys[dst] = key;
            out_index[dst] = base + staged_pos[p];
        }
        __syncthreads();  // the shared arrays are refilled for the next tile
    }
}
