// Exclusive scan of 64-bit counts by ONE block (chapter 7.3's "counts become
// offsets"): each thread sums a contiguous chunk, the block scans the chunk
// sums in shared memory, then each thread writes its chunk's offsets.
// histkit check: --kind scan --grid 1 --block 256
extern "C" __global__ void scan(const unsigned long long* counts, long long n,
                                unsigned long long* offsets) {
    __shared__ unsigned long long sums[1024];
    const long long chunk = (n + blockDim.x - 1) / blockDim.x;
    const long long lo = chunk * threadIdx.x;
    const long long hi = lo + chunk < n ? lo + chunk : n;
    unsigned long long mine = 0;
    for (long long i = lo; i < hi; ++i) mine += counts[i];
    sums[threadIdx.x] = mine;
    __syncthreads();
    // Hillis-Steele inclusive scan of the chunk sums.
    for (unsigned d = 1; d < blockDim.x; d <<= 1) {
        unsigned long long add = threadIdx.x >= d ? sums[threadIdx.x - d] : 0;
        __syncthreads();
        sums[threadIdx.x] += add;
        __syncthreads();
    }
    unsigned long long running = sums[threadIdx.x] - mine;  // exclusive
    for (long long i = lo; i < hi; ++i) {
        offsets[i] = running;
        running += counts[i];
    }
}
