# The key types every oracle accepts. One fused type, so each oracle is
# compiled once per integer width and signedness and never copies its input
# into a common dtype.
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t,
                          uint8_t, uint16_t, uint32_t, uint64_t)

ctypedef fused key_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t

# Real-valued samples for the binning oracle: every key type and C's two
# floating types. float16 samples travel as their uint16 bits (C has no half
# type), with a flag saying so.
ctypedef fused sample_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double
