// Chapter 7.3: count (a histogram), scan (histkit does it between the two
// launches), scatter with per-bin cursors: pos = atomicAdd(&cursor[bin], 1).
// Sorted, but equal keys land in whatever order the atomics are won.
// histkit check: --kind sort   (sorted + a permutation; instability is reported)
#ifndef KEY_T
#define KEY_T int
#endif

extern "C" __global__ void count(const KEY_T* keys, long long n, unsigned long long num_bins,
                                 unsigned long long* counts, unsigned long long* first_bad) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long b = (unsigned long long)(long long)keys[i];
        if (b < num_bins) {
            atomicAdd(&counts[b], 1ULL);
        } else {
            atomicMin(first_bad, (unsigned long long)i);
        }
    }
}

extern "C" __global__ void scatter(const KEY_T* keys, long long n, unsigned long long* cursor,
                                   KEY_T* out_keys, long long* out_index) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long pos = atomicAdd(&cursor[(unsigned long long)(long long)keys[i]], 1ULL);
        out_keys[pos] = keys[i];
        out_index[pos] = i;
    }
}
