// Chapter 7.1's fix: one atomicAdd per key. histkit check: --kind histogram
// One thread per key (histkit launches ceil(n / 256) blocks of 256).
#ifndef KEY_T
#define KEY_T int
#endif
#ifndef COUNT_T
#define COUNT_T unsigned int
#endif

extern "C" __global__ void histogram(const KEY_T* keys, long long n, unsigned long long num_bins,
                                     COUNT_T* hist, unsigned long long* first_bad) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        // A negative key becomes a huge unsigned value: one test rejects both ends.
        unsigned long long b = (unsigned long long)(long long)keys[i];
        if (b < num_bins) {
            atomicAdd(&hist[b], (COUNT_T)1);
        } else {
            atomicMin(first_bad, (unsigned long long)i);
        }
    }
}
