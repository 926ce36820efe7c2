// Exclusive scan of 64-bit counts, any length (chapter 7.3's "counts become
// offsets", Chapter 5's scan).
//
// Reduce-then-scan over tiles of SCAN_TILE values:
//   scan_tile_sums  one block per tile: the tile's total;
//   (the host scans the tile totals with these same two kernels, recursively,
//    until one tile remains)
//   scan_tiles      one block per tile: the tile's exclusive scan plus the
//                   tile's offset.
// Judged by oracles.exclusive_scan: equal.
#include "common.cuh"

#ifndef SCAN_THREADS
#define SCAN_THREADS 256  // a multiple of 32
#endif
#ifndef SCAN_ITEMS
#define SCAN_ITEMS 8  // consecutive values per thread in scan_tiles
#endif
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

__device__ __forceinline__ u64 warp_inclusive_scan(u64 value) {
    const unsigned lane = threadIdx.x & 31;
    for (int d = 1; d < 32; d <<= 1) {
        u64 up = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value += up;
    }
    return value;
}

// Exclusive scan of one value per thread across the block; *block_total gets
// the block's sum.
__device__ u64 block_exclusive_scan(u64 value, u64* block_total) {
    __shared__ u64 warp_offsets[SCAN_THREADS / 32];
    __shared__ u64 total;
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned warps = SCAN_THREADS / 32;
    u64 inclusive = warp_inclusive_scan(value);
    if (lane == 31) warp_offsets[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        u64 warp_sum = lane < warps ? warp_offsets[lane] : 0;
        u64 running = warp_inclusive_scan(warp_sum);
        if (lane < warps) warp_offsets[lane] = running - warp_sum;
        if (lane == 31) total = running;
    }
    __syncthreads();
    u64 exclusive = warp_offsets[warp] + inclusive - value;
    *block_total = total;
    return exclusive;
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
scan_tile_sums(const u64* in, i64 n, u64* tile_sums HK_GATE_ARG) {
    if (hk_gate_closed()) return;
    hk_skew_warps();
    const i64 base = (i64)blockIdx.x * SCAN_TILE;
    u64 sum = 0;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        i64 i = base + (i64)k * SCAN_THREADS + threadIdx.x;  // coalesced
        if (i < n) sum += in[i];
    }
    u64 total;
    block_exclusive_scan(sum, &total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
scan_tiles(const u64* in, i64 n, const u64* tile_offsets, u64* out HK_GATE_ARG) {
    if (hk_gate_closed()) return;
    hk_skew_warps();
    const i64 first = (i64)blockIdx.x * SCAN_TILE + (i64)threadIdx.x * SCAN_ITEMS;
    u64 items[SCAN_ITEMS];
    u64 sum = 0;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        i64 i = first + k;
        items[k] = i < n ? in[i] : 0;
        sum += items[k];
    }
    u64 total;
    u64 prefix = block_exclusive_scan(sum, &total) + tile_offsets[blockIdx.x];
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        i64 i = first + k;
        if (i < n) out[i] = prefix;
        prefix += items[k];
    }
}
