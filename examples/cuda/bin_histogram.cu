// Binning real-valued samples as np.histogram does. histkit check: --kind bin-histogram
// (or --kind bin-histogram-half-open, which builds it with RIGHT_CLOSED_LAST=0).
// One thread per sample. histkit hands the kernel numpy's edges for the call,
// already in the type numpy compares samples with them in (EDGE_T): a sample's
// bin is the number of edges <= it, minus one, found by a binary search.
#ifndef SAMPLE_T
#define SAMPLE_T float
#endif
#ifndef EDGE_T
#define EDGE_T double
#endif
#ifndef COUNT_T
#define COUNT_T unsigned int
#endif
#ifndef RIGHT_CLOSED_LAST
#define RIGHT_CLOSED_LAST 1
#endif

extern "C" __global__ void bin_histogram(const SAMPLE_T* samples, long long n,
                                         const EDGE_T* edges, unsigned long long num_bins,
                                         COUNT_T* hist) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || num_bins == 0) {
        return;
    }
    EDGE_T x = (EDGE_T)samples[i];
    // NaN fails both tests: it is counted nowhere, as numpy counts it.
    if (!(x >= edges[0] && x <= edges[num_bins])) {
        return;
    }
    if (x == edges[num_bins]) {  // the top edge: the last bin's, if it is closed
        if (RIGHT_CLOSED_LAST) {
            atomicAdd(&hist[num_bins - 1], (COUNT_T)1);
        }
        return;
    }
    // edges[lo] <= x < edges[hi]: narrow to adjacent edges
    unsigned long long lo = 0, hi = num_bins;
    while (hi - lo > 1) {
        unsigned long long mid = lo + (hi - lo) / 2;
        if (edges[mid] <= x) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    atomicAdd(&hist[lo], (COUNT_T)1);
}
