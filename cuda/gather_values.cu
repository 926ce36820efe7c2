// Values follow their keys: out[i] = values[index[i]], where index is a sort's
// original indices (gpu.radix_sort(keys, values)). Values are moved as raw
// bits: VALUE_T is the unsigned integer of the values' width (any dtype of 1,
// 2, 4 or 8 bytes: floats too).
#include "common.cuh"

#ifndef VALUE_T
#define VALUE_T unsigned int
#endif

extern "C" __global__ void gather_values(const VALUE_T* values, const hk_index* index, i64 n,
                                         VALUE_T* out) {
    for (i64 i = hk_thread_index(); i < n; i += hk_thread_count()) out[i] = values[index[i]];
}
