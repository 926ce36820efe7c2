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

// The verdict board (histkit/gpu/verdict.py): how a checked public call
// learns "no bad key" without copying its first_bad word back. Its word is
// one of the board's slots (device memory), and each slot has a flag in
// mapped host memory. The one thread whose atomicMin finds a slot still at
// HK_NO_BAD_KEY sets the slot's flag, so after its stream's sync the host
// reads the flag (0: no bad key) and copies the word only when it is set. A
// word outside the slots (a check=False caller's) flags nothing. The host
// writes hk_verdicts into every module it loads; one never written (zeros:
// no slots) flags nothing.
struct hk_verdict_board {
    u64 slots;        // device address of the first slot
    u64 slot_count;
    unsigned* flags;  // slot_count flags in mapped host memory
};
extern "C" {
__device__ hk_verdict_board hk_verdicts;
}

// Inlined: the kernels' registers stay within 2 of what they were (ptxas,
// sm_90), where a __noinline__ flagging call cost the fast kernel 8 more
// (the call's convention), which can cost it a resident block per SM.
__device__ __forceinline__ void hk_note_bad_key(u64* first_bad, i64 index) {
    if (atomicMin(first_bad, (u64)index) != HK_NO_BAD_KEY) return;  // flagged already
    // A word below the slots wraps to a huge slot number: no flag.
    const u64 slot = ((u64)first_bad - hk_verdicts.slots) / sizeof(u64);
    if (slot < hk_verdicts.slot_count) *(volatile unsigned*)(hk_verdicts.flags + slot) = 1u;
}

// Gated builds, for method="auto" choosing its kernel on the device: built
// with -DHK_GATE=c, a kernel takes one more (last) argument, the word where
// auto's choosing kernel (partitioned_histogram.cu) left its choice, and
// returns at once unless that choice is c. auto launches every candidate's
// kernels gated so, one after another on the call's stream: the host never
// waits for the choice, and a call can be captured in a CUDA graph. The
// choice is the same for every thread, so a whole grid returns together
// (before any barrier). Without the define nothing changes.
// With -DHK_GATE_UNLESS=c instead, a kernel runs unless the choice is c (a
// candidate that serves every choice but one).
#if defined(HK_GATE) && defined(HK_GATE_UNLESS)
#error "a gated build runs on one choice (HK_GATE) or on all but one (HK_GATE_UNLESS)"
#endif
#ifdef HK_GATE
#define HK_GATE_ARG , const unsigned* hk_gate
#define hk_gate_closed() (*hk_gate != (unsigned)(HK_GATE))
#elif defined(HK_GATE_UNLESS)
#define HK_GATE_ARG , const unsigned* hk_gate
#define hk_gate_closed() (*hk_gate == (unsigned)(HK_GATE_UNLESS))
#else
#define HK_GATE_ARG
#define hk_gate_closed() false
#endif

// Schedule skew and stragglers, for the conformance suite's skewed cases only
// (its own header: user kernels judged by histkit check are built with it too).
#include "schedule_skew.cuh"

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
