// Chapter 7.1's race: hist[b] = hist[b] + 1 without an atomic.
// histkit check: --kind racy-histogram (every bin <= exact; the loss is reported)
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
        unsigned long long b = (unsigned long long)(long long)keys[i];
        if (b < num_bins) {
            volatile COUNT_T* racy = hist;  // one real load and one real store
            racy[b] = racy[b] + 1;
        } else {
            atomicMin(first_bad, (unsigned long long)i);
        }
    }
}
