// Counting sort: count, exclusive scan (exclusive_scan.cu), scatter.
//
// The chapter's scatter (7.3), judged by oracles.counting_sort as "sorted and
// a permutation", its stability violations counted and reported:
//   count_keys             global-atomic histogram of the keys;
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

extern "C" __global__ void count_keys(const hk_key* keys, i64 n, u64 num_bins, u64* hist,
                                      u64* first_bad) {
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        u64 b = hk_bin(keys[i]);
        if (b >= num_bins) {
            hk_note_bad_key(first_bad, i);
            continue;
        }
        atomicAdd(&hist[b], 1ULL);
    }
}

// Keys were validated by count_keys; cursor starts as the exclusive scan.
extern "C" __global__ void scatter_atomic_cursor(const hk_key* keys, i64 n, u64* cursor,
                                                 hk_key* out_keys, i64* out_index) {
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        hk_key key = keys[i];
        u64 pos = atomicAdd(&cursor[hk_bin(key)], 1ULL);
        out_keys[pos] = key;
        out_index[pos] = i;
    }
}

extern "C" __global__ void count_segments(const hk_key* keys, i64 n, u64 num_bins,
                                          i64 segment_len, i64 num_segments, u64* seg_counts,
                                          u64* first_bad) {
    const unsigned lane = threadIdx.x & 31;
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        const i64 begin = seg * segment_len;
        const i64 end = min(n, begin + segment_len);
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
            if (b != HK_NO_BIN && lane == (unsigned)(__ffs(peers) - 1))
                seg_counts[b * num_segments + seg] += __popc(peers);
            __syncwarp();  // the next leader of this bin may be another lane
        }
    }
}

extern "C" __global__ void scatter_segments_stable(const hk_key* keys, i64 n, u64 num_bins,
                                                   i64 segment_len, i64 num_segments,
                                                   u64* seg_cursor, hk_key* out_keys,
                                                   i64* out_index) {
    const unsigned lane = threadIdx.x & 31;
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        const i64 begin = seg * segment_len;
        const i64 end = min(n, begin + segment_len);
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
                u64* cursor = &seg_cursor[b * num_segments + seg];
                start = *cursor;
                *cursor = start + __popc(peers);
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
}

extern "C" __global__ void count_segments_shared(const hk_key* keys, i64 n, u64 num_bins,
                                                 i64 segment_len, i64 num_segments,
                                                 u64* seg_counts, u64* first_bad) {
    extern __shared__ u64 tables[];
    u64* table = tables + (threadIdx.x >> 5) * num_bins;
    const unsigned lane = threadIdx.x & 31;
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        for (u64 b = lane; b < num_bins; b += 32) table[b] = 0;
        __syncwarp();
        const i64 begin = seg * segment_len;
        const i64 end = min(n, begin + segment_len);
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
            if (b != HK_NO_BIN && lane == (unsigned)(__ffs(peers) - 1)) table[b] += __popc(peers);
            __syncwarp();
        }
        for (u64 b = lane; b < num_bins; b += 32) seg_counts[b * num_segments + seg] = table[b];
        __syncwarp();
    }
}

extern "C" __global__ void scatter_segments_stable_shared(const hk_key* keys, i64 n,
                                                          u64 num_bins, i64 segment_len,
                                                          i64 num_segments, u64* seg_cursor,
                                                          hk_key* out_keys, i64* out_index) {
    extern __shared__ u64 tables[];
    u64* table = tables + (threadIdx.x >> 5) * num_bins;
    const unsigned lane = threadIdx.x & 31;
    const i64 warps = hk_thread_count() >> 5;
    for (i64 seg = hk_thread_index() >> 5; seg < num_segments; seg += warps) {
        for (u64 b = lane; b < num_bins; b += 32) table[b] = seg_cursor[b * num_segments + seg];
        __syncwarp();
        const i64 begin = seg * segment_len;
        const i64 end = min(n, begin + segment_len);
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
                start = table[b];
                table[b] = start + __popc(peers);
            }
            start = __shfl_sync(0xffffffffu, start, leader);
            if (b != HK_NO_BIN) {
                const u64 pos = start + __popc(peers & lanes_below());
                out_keys[pos] = key;
                out_index[pos] = i;
            }
            __syncwarp();
        }
        __syncwarp();  // the table is rewritten for the next segment
    }
}
