// A weighted histogram as most GPU code writes it: one thread per key, each
// weight added to its bin with atomicAdd on a double. histkit check:
// --kind weighted-histogram. It FAILs by the exact rule: the atomics add in
// whatever order the threads reach them and round every step, so the
// cancellation cases (1e16 + 1 - 1e16) lose the 1, and two runs need not
// agree. histkit's own gpu.histogram(keys, K, weights=) sums exactly.
#ifndef KEY_T
#define KEY_T int
#endif
#ifndef WEIGHT_T
#define WEIGHT_T float
#endif

extern "C" __global__ void weighted_histogram(const KEY_T* keys, const WEIGHT_T* weights,
                                              long long n, unsigned long long num_bins,
                                              double* sums, unsigned long long* first_bad) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    // A negative signed key wraps to a huge unsigned one: one comparison
    // rejects it and keys past the bins alike.
    unsigned long long b = (unsigned long long)keys[i];
    if (b >= num_bins) {
        atomicMin(first_bad, (unsigned long long)i);
        return;
    }
    atomicAdd(&sums[b], (double)weights[i]);
}
