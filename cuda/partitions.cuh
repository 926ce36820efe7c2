#pragma once
// Counting keys and handing out slots in a partition's run, shared by the
// kernels that group keys by the high bits of their bin
// (partitioned_histogram.cu and the weighted sums' count_parts /
// scatter_parts).
//
// Order inside a run does not matter to a histogram (integer counts, or
// weights summed exactly), so a shared atomic per key counts it or hands out
// its slot. A warp whose 32 keys share one counter (one hot bin, sorted
// input) adds 32 with one atomic instead of queueing 32 on one counter.
#include "common.cuh"

#define NO_PART 0xffffffffu  // a dead lane's partition: past N, or a bad key

// Counts this lane's value in count[value]; a lane whose value is none (a
// dead lane) counts nothing. Every lane of the warp calls it.
__device__ __forceinline__ void hk_count_key(unsigned* count, unsigned value, unsigned none) {
    const unsigned value0 = __shfl_sync(0xffffffffu, value, 0);
    if (__all_sync(0xffffffffu, value == value0)) {
        if ((threadIdx.x & 31u) == 0 && value0 != none) atomicAdd(&count[value0], 32u);
    } else if (value != none) {
        atomicAdd(&count[value], 1u);
    }
}

// This lane's slot among count[part]'s keys, counting it there; a lane whose
// part is NO_PART takes none (0 returned). Every lane of the warp calls it.
__device__ __forceinline__ unsigned hk_take_slot(unsigned* count, unsigned part) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned part0 = __shfl_sync(0xffffffffu, part, 0);
    if (__all_sync(0xffffffffu, part == part0)) {
        unsigned first = 0;
        if (lane == 0 && part0 != NO_PART) first = atomicAdd(&count[part0], 32u);
        return __shfl_sync(0xffffffffu, first, 0) + lane;
    }
    return part != NO_PART ? atomicAdd(&count[part], 1u) : 0u;
}
