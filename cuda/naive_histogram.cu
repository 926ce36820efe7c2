// Naive (non-atomic) histogram: hist[b] = hist[b] + 1, the race of chapter 7.1.
//
// Two launches of the same racy increment:
//   naive_histogram_grid      many blocks, grid-stride: the real race. Judged
//                             by oracles.histogram: every bin <= exact, and
//                             the number of lost updates is reported.
//   naive_histogram_one_warp  ONE block of `warp_size` (<= 32) lanes walking
//                             the input in lockstep waves: all lanes load,
//                             __syncwarp, all lanes store. This is the
//                             chapter's wave model run on real hardware; it is
//                             judged by oracles.naive_wave_histogram, bin by bin.
// Counters are 64-bit; keys outside [0, num_bins) are skipped and reported.
#include "common.cuh"

extern "C" __global__ void naive_histogram_grid(const hk_key* keys, i64 n, u64 num_bins,
                                                u64* hist, u64* first_bad) {
    // volatile: the load and the store must really reach memory, one each, as
    // in the chapter's three-step trace (load, add, store).
    volatile u64* racy = hist;
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) {
        u64 b = hk_bin(keys[i]);
        if (b >= num_bins) {
            hk_note_bad_key(first_bad, i);
            continue;
        }
        racy[b] = racy[b] + 1;
    }
}

extern "C" __global__ void naive_histogram_one_warp(const hk_key* keys, i64 n, u64 num_bins,
                                                    u64* hist, u64* first_bad) {
    volatile u64* racy = hist;
    const unsigned lanes = blockDim.x;  // the wave width, 1..32
    const unsigned mask = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    for (i64 wave = 0; wave < n; wave += lanes) {
        i64 i = wave + threadIdx.x;
        bool live = i < n;
        u64 b = 0, loaded = 0;
        if (live) {
            b = hk_bin(keys[i]);
            if (b >= num_bins) {
                hk_note_bad_key(first_bad, i);
                live = false;
            } else {
                loaded = racy[b];  // LOAD: every lane, before any lane stores
            }
        }
        __syncwarp(mask);
        if (live) racy[b] = loaded + 1;  // STORE: lanes sharing b write the same value
        __syncwarp(mask);  // this wave's stores land before the next wave loads
    }
}
