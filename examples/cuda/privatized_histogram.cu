// Chapter 7.2: a private shared-memory histogram per block, merged into the
// global one with one atomicAdd per bin, zeros included. Every global merge
// atomic is counted into *global_atomics where it is issued.
// histkit check: --kind privatized --grid 8   (a grid-stride loop: any grid covers n)
#ifndef KEY_T
#define KEY_T int
#endif
#ifndef COUNT_T
#define COUNT_T unsigned int
#endif

extern "C" __global__ void histogram(const KEY_T* keys, long long n, unsigned long long num_bins,
                                     COUNT_T* hist, unsigned long long* first_bad,
                                     unsigned long long* global_atomics) {
    extern __shared__ COUNT_T local[];  // num_bins counters (histkit sizes it)
    for (unsigned long long b = threadIdx.x; b < num_bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long b = (unsigned long long)(long long)keys[i];
        if (b < num_bins) {
            atomicAdd(&local[b], (COUNT_T)1);
        } else {
            atomicMin(first_bad, (unsigned long long)i);
        }
    }
    __syncthreads();
    unsigned long long issued = 0;
    for (unsigned long long b = threadIdx.x; b < num_bins; b += blockDim.x) {
        atomicAdd(&hist[b], local[b]);
        ++issued;
    }
    if (issued) atomicAdd(global_atomics, issued);
}
