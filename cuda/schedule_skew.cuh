// Schedule skew, stragglers and poisoned shared memory: the conformance
// suite's skewed cases build kernels with -DHK_SKEW_NS, -DHK_STRAGGLE_NS and
// -DHK_SHARED_POISON (histkit.gpu.contract.schedule_defines), so that code
// which assumes the warps of a block are in step without a barrier between
// them, or shared memory that arrives zeroed, gives wrong results. histkit's kernels
// include it through common.cuh and call hk_skew_warps() at entry; a user's
// kernel judged by histkit check gets it prepended, and the call inserted at
// the top of each __global__ function (histkit.conformance.user_skew). Only
// hk_-prefixed names, so it cannot clash with a user's own.
#pragma once

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
#if !defined(HK_STRAGGLE_NS) || !defined(HK_SHARED_POISON)
#error "skewed builds define HK_STRAGGLE_NS and HK_SHARED_POISON too (histkit.gpu.contract.schedule_defines)"
#endif
#define HK_STRAGGLER_BLOCKS 8
// Barriers each thread of the block has passed (blocks of up to 1024 threads;
// it wraps at 256, which only adds a straggle in long loops).
__shared__ unsigned char hk_barriers_passed[1024];

__device__ __forceinline__ unsigned long long hk_global_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}
// A user's kernel (HK_SKEW_ALTERNATE, histkit.gpu.user_skew) also gets the
// order turned at barriers, so that a missing barrier whose race only later
// warps running first shows is met. With HK_SKEW_ORDER_SEED (each skewed case
// of histkit check), the order at a block's j-th barrier is a bit drawn from
// (seed / 2, block, j) and flipped for an odd seed: the two cases of seeds 2m
// and 2m + 1 meet opposite orders at every barrier, whatever the number of
// barriers in the kernel's loops. Without it, the order turns at every
// barrier. histkit's own kernels keep the order by block alone, the one
// their table mutants were judged with.
#ifdef HK_SKEW_ORDER_SEED
__device__ __forceinline__ unsigned hk_order_bit(unsigned block, unsigned barrier) {
    unsigned x = (unsigned)((HK_SKEW_ORDER_SEED) >> 1) * 0x9E3779B9u;
    x ^= block * 0x85EBCA6Bu + barrier * 0xC2B2AE35u;
    x ^= x >> 16; x *= 0x7FEB352Du; x ^= x >> 15; x *= 0x846CA68Bu; x ^= x >> 16;
    return (x ^ (unsigned)(HK_SKEW_ORDER_SEED)) & 1u;
}
#endif
__device__ __forceinline__ void hk_sleep_by_warp_rank() {
    const unsigned warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#if defined(HK_SKEW_ALTERNATE) && defined(HK_SKEW_ORDER_SEED)
    const unsigned rank = hk_order_bit(blockIdx.x, hk_barriers_passed[threadIdx.x])
                              ? warps - 1 - warp : warp;
#elif defined(HK_SKEW_ALTERNATE)
    const unsigned rank = ((blockIdx.x + hk_barriers_passed[threadIdx.x]) & 1) ? warps - 1 - warp
                                                                               : warp;
#else
    const unsigned rank = (blockIdx.x & 1) ? warps - 1 - warp : warp;
#endif
    if (rank) __nanosleep(rank * (unsigned)HK_SKEW_NS);
}
// Shared-memory poison, in the same builds: shared memory starts each block
// with whatever an earlier block left there, often zeros, so a kernel that
// counts on its shared counters arriving zeroed (or zeroes only some of
// them) passes by luck. At entry every thread of the block fills the block's
// shared memory with HK_SHARED_POISON bytes: the dynamic part (its size from
// %dynamic_smem_size) and, on sm_80 and later, the static part too, which
// there lies from %reserved_smem_offset_cap (the end of the driver's reserved
// shared memory) up to the dynamic part (measured on the H200: statics from
// 1024, the dynamic array after them). The statics are poisoned only when
// this header's own static array lies in that range, so a layout other than
// the one measured poisons the dynamic part alone; then a real barrier, so
// no thread poisons what another has begun to use.
extern __shared__ __align__(16) unsigned char hk_dynamic_shared[];

// begin is 16-byte aligned (the dynamic array's alignment, or where the
// statics start); end need not be a multiple of 4 (a user's dynamic size).
__device__ __forceinline__ void hk_poison_bytes(unsigned begin, unsigned end) {
    const unsigned word = 0x01010101u * (unsigned)(HK_SHARED_POISON), last_word = end & ~3u;
    for (unsigned at = begin + 4u * threadIdx.x; at < last_word; at += 4u * blockDim.x)
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(at), "r"(word) : "memory");
    for (unsigned at = last_word + threadIdx.x; at < end; at += blockDim.x)
        asm volatile("st.shared.u8 [%0], %1;" ::"r"(at), "r"(word & 0xFFu) : "memory");
}

__device__ __forceinline__ void hk_poison_shared() {
    unsigned dynamic_bytes;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
    const unsigned dynamic_begin = (unsigned)__cvta_generic_to_shared(hk_dynamic_shared);
    unsigned begin = dynamic_begin;
#if __CUDA_ARCH__ >= 800
    unsigned statics_begin;
    asm volatile("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(statics_begin));
    const unsigned ours = (unsigned)__cvta_generic_to_shared(hk_barriers_passed);
    if (statics_begin <= ours && ours < dynamic_begin) begin = statics_begin;
#endif
    hk_poison_bytes(begin, dynamic_begin + dynamic_bytes);
    __syncthreads();
}

__device__ __forceinline__ void hk_skew_warps() {
    hk_poison_shared();
    hk_barriers_passed[threadIdx.x] = 0;
    hk_sleep_by_warp_rank();
}
__device__ __forceinline__ void hk_straggle() {
    const unsigned passed = ++hk_barriers_passed[threadIdx.x];
    if (blockIdx.x < HK_STRAGGLER_BLOCKS && passed == blockIdx.x + 1 && threadIdx.x >= 32) {
        // The global timer, not __nanosleep alone: a sleep may end early.
        const unsigned long long until = hk_global_ns() + (unsigned long long)(blockIdx.x + 1) * HK_STRAGGLE_NS;
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
