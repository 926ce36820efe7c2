// Chapter 7.1's lockstep-wave model on real hardware: ONE warp walks the keys
// in waves; every lane loads, the warp syncs, every lane stores, so lanes
// sharing a bin store the same value and the wave adds one to each distinct bin.
// histkit check: --kind wave (histkit launches one block of WARP_SIZE lanes)
#ifndef KEY_T
#define KEY_T int
#endif
#ifndef COUNT_T
#define COUNT_T unsigned int
#endif

extern "C" __global__ void histogram(const KEY_T* keys, long long n, unsigned long long num_bins,
                                     COUNT_T* hist, unsigned long long* first_bad) {
    volatile COUNT_T* racy = hist;
    const unsigned lanes = blockDim.x;
    const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    for (long long wave = 0; wave < n; wave += lanes) {
        long long i = wave + threadIdx.x;
        bool live = i < n;
        unsigned long long b = 0;
        COUNT_T loaded = 0;
        if (live) {
            b = (unsigned long long)(long long)keys[i];
            if (b < num_bins) {
                loaded = racy[b];
            } else {
                atomicMin(first_bad, (unsigned long long)i);
                live = false;
            }
        }
        __syncwarp(mask);
        if (live) racy[b] = loaded + 1;
        __syncwarp(mask);
    }
}
