// Shared-memory privatized histogram (chapter 7.2).
//
// Each block counts its keys (grid-stride, so any number of blocks covers the
// input) into a private shared-memory histogram with shared atomics, then
// merges EVERY bin into the global histogram with one global atomicAdd, zeros
// included: num_blocks * num_bins global atomics, whatever the data.
//
// Built with -DCOUNT_GLOBAL_ATOMICS the kernel also counts the global merge
// atomics it issues into *global_atomics (the conformance suite's probe),
// counted by HkGlobalAdds as each atomic is issued. Users get the plain build;
// the suite judges both.
// Judged by oracles.histogram (equal) and oracles.privatized_histogram (the
// global-atomic count for the same geometry).
//
// Shared counters are 32-bit: the host keeps every block under 2^32 keys.
// Dynamic shared memory holds num_bins counters.
#include "common.cuh"

extern "C" __global__ void privatized_histogram(const hk_key* keys, i64 n, u64 num_bins,
                                                u64* hist, u64* first_bad,
                                                u64* global_atomics) {
    extern __shared__ unsigned int local_hist[];
    hk_skew_warps();
    hk_require_dynamic_shared(num_bins * sizeof(unsigned int));
    for (u64 b = threadIdx.x; b < num_bins; b += blockDim.x) local_hist[b] = 0;
    __syncthreads();

    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        u64 b = hk_bin(keys[i]);
        if (b >= num_bins) {
            hk_note_bad_key(first_bad, i);
            continue;
        }
        atomicAdd(&local_hist[b], 1u);
    }
    __syncthreads();

    HkGlobalAdds merge;
    for (u64 b = threadIdx.x; b < num_bins; b += blockDim.x) merge.add(&hist[b], (u64)local_hist[b]);
    merge.report(global_atomics);
}
