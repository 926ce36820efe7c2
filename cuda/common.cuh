// Shared by every histkit kernel: the key type, 64-bit counters, the key ->
// bin rule and the report of out-of-range keys.
//
// Each .cu file includes only this header, so it compiles on its own with
// NVRTC (no system headers). Every compile-time constant is passed by the
// host (histkit/gpu/contract.py) as a -D define; the #ifndef defaults here
// and in the .cu files only serve standalone compiles.
#pragma once

#ifndef KEY_T
#define KEY_T int  // histkit.gpu defines KEY_T from the keys' dtype
#endif

typedef KEY_T hk_key;
typedef unsigned long long u64;
typedef long long i64;

// A sort's original indices: int64, or int32 with -DINDEX_T=int (a sort's
// index_dtype=np.int32, for inputs of up to 2^31 keys: half the index traffic).
#ifndef INDEX_T
#define INDEX_T long long
#endif
typedef INDEX_T hk_index;

// first_bad starts at this value; a kernel that meets keys outside
// [0, num_bins) lowers it to the smallest such index.
#ifndef HK_NO_BAD_KEY
#define HK_NO_BAD_KEY 0xffffffffffffffffULL
#endif

// A key's bin as an unsigned 64-bit number. A negative signed key wraps to a
// huge value, so the single test `bin >= num_bins` rejects negative and
// too-large keys alike, exactly as the CPU oracles do.
__device__ __forceinline__ u64 hk_bin(hk_key key) { return (u64)key; }

__device__ __forceinline__ void hk_note_bad_key(u64* first_bad, i64 index) {
    atomicMin(first_bad, (u64)index);
}

// Schedule skew, for the conformance suite's skewed cases only: built with
// -DHK_SKEW_NS=t, each warp of a block sleeps (its rank) x t ns at the kernel's
// entry (hk_skew_warps) and after every __syncthreads, warp 0 first in even
// blocks and last in odd ones. Code that assumes warps are in step without a
// barrier between them (a reader overtaking a writer, a zeroing still under
// way while other warps count) then gives wrong results, where otherwise
// only racecheck would see it. Without the define nothing changes.
//
// Stragglers, in the same builds (-DHK_STRAGGLE_NS=s): in block b of the first
// HK_STRAGGLER_BLOCKS, every warp but warp 0 waits (b + 1) x s ns after the
// block's (b + 1)-th barrier. The bug they force: thread 0 telling the grid
// "this block is done" (an arrival counter, a published flag) with no barrier
// after the other warps' global writes. The block whose (b + 1)-th barrier
// precedes that announcement announces on time while its other warps are
// late by (b + 1) x s; the blocks that straggled at earlier barriers are late
// by at most b x s, so whichever block arrives last, and reads, reads before
// the late writes land. The rank skew cannot force it: the last block waits
// for its own warps, and the others are a few ranks late at most.
#ifdef HK_SKEW_NS
#ifndef HK_STRAGGLE_NS
#error "skewed builds define HK_STRAGGLE_NS too (histkit.gpu.contract.schedule_defines)"
#endif
#define HK_STRAGGLER_BLOCKS 8
// Barriers each thread of the block has passed (blocks of up to 1024 threads;
// it wraps at 256, which only adds a straggle in long loops).
__shared__ unsigned char hk_barriers_passed[1024];

__device__ __forceinline__ u64 hk_global_ns() {
    u64 ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}
__device__ __forceinline__ void hk_sleep_by_warp_rank() {
    const unsigned warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    const unsigned rank = (blockIdx.x & 1) ? warps - 1 - warp : warp;
    if (rank) __nanosleep(rank * (unsigned)HK_SKEW_NS);
}
__device__ __forceinline__ void hk_skew_warps() {
    hk_barriers_passed[threadIdx.x] = 0;
    hk_sleep_by_warp_rank();
}
__device__ __forceinline__ void hk_straggle() {
    const unsigned passed = ++hk_barriers_passed[threadIdx.x];
    if (blockIdx.x < HK_STRAGGLER_BLOCKS && passed == blockIdx.x + 1 && threadIdx.x >= 32) {
        // The global timer, not __nanosleep alone: a sleep may end early.
        const u64 until = hk_global_ns() + (u64)(blockIdx.x + 1) * HK_STRAGGLE_NS;
        while (hk_global_ns() < until) __nanosleep(1000);
    }
}
__device__ __forceinline__ void hk_barrier_then_skew() {
    __syncthreads();
    hk_straggle();
    hk_sleep_by_warp_rank();
}
// From here on, every block barrier of the including file skews the warps
// again (the name in the replacement is not expanded a second time).
#define __syncthreads() hk_barrier_then_skew()
#else
__device__ __forceinline__ void hk_skew_warps() {}
#endif

// A kernel with dynamic shared memory states, at entry, how many bytes its
// shape needs (from its own arguments and defines); a launch that gave fewer
// (the host sized it wrong) traps at once instead of reading and writing past
// the block's shared memory, which the hardware does not always fault on.
__device__ __forceinline__ void hk_require_dynamic_shared(u64 bytes) {
    unsigned given;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
    if ((u64)given < bytes) __trap();
}

// Grid-stride loops run over 64-bit indices: N may pass 2^31.
__device__ __forceinline__ i64 hk_thread_index() {
    return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ i64 hk_thread_count() {
    return (i64)gridDim.x * blockDim.x;
}

// Global atomicAdds that a -DCOUNT_GLOBAL_ATOMICS build also counts. The
// count is taken inside the call that issues the atomic, so a kernel cannot
// skip an atomic and still count it (the conformance probe cannot lie).
struct HkGlobalAdds {
    u64 issued = 0;
    __device__ __forceinline__ void add(u64* address, u64 value) {
        atomicAdd(address, value);
#ifdef COUNT_GLOBAL_ATOMICS
        ++issued;
#endif
    }
    // One atomic per thread on the counter, after its last add.
    __device__ __forceinline__ void report(u64* counter) {
#ifdef COUNT_GLOBAL_ATOMICS
        if (issued) atomicAdd(counter, issued);
#else
        (void)counter;
#endif
    }
};
