// Global-atomic histogram: one atomicAdd per key on a 64-bit global counter
// (chapter 7.1's fix, and 7.2's "naive global" baseline).
// Judged by oracles.histogram: equal, bin by bin.
#include "common.cuh"

extern "C" __global__ void atomic_histogram(const hk_key* keys, i64 n, u64 num_bins,
                                            u64* hist, u64* first_bad) {
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        u64 b = hk_bin(keys[i]);
        if (b >= num_bins) {
            hk_note_bad_key(first_bad, i);
            continue;
        }
        atomicAdd(&hist[b], 1ULL);
    }
}
