# Counting kernels shared by the histogram and counting-sort oracles.
#
# Keys are read through a strided memoryview, converted to uint64 and
# compared against num_bins once: a negative signed key wraps to a huge
# unsigned value, so one comparison rejects both negatives and keys that are
# too large. Counting stops at the first bad key and reports its index, so the
# caller can name it; nothing is clipped.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from histkit.oracles._keys cimport key_t

# Counter width of one chunk's histogram: int64 in general; uint32 where a
# chunk holds fewer than 2^32 keys and many bins (half the bytes keep more of
# the counters in cache under random increments).
ctypedef fused count_t:
    int64_t
    uint32_t

cimport openmp

# Interleaved sub-histograms ("lanes") break the store-to-load dependency
# between consecutive increments of one hot bin; they only pay while all lanes
# stay in cache, so they are used for small num_bins only.
cdef enum:
    LANES_SMALL_K = 4
    # Per-worker scratch rows are padded to this many int64 so that two
    # workers never write the same cache line.
    ROW_PAD = 16
    MAX_BINS_FOR_LANES = 4096
    # Up to PAIR_BINS bins, contiguous 32-bit keys are counted two to a
    # counter (count_by_pairs); a chunk shorter than PAIR_MIN_KEYS is not
    # worth zeroing and folding its table.
    PAIR_SHIFT = 4
    PAIR_BINS = 1 << PAIR_SHIFT
    PAIR_MIN_KEYS = 1 << 12
    # Below this many keys per worker, thread start-up costs more than it saves.
    MIN_KEYS_PER_WORKER = 1 << 16
    # Work is split into several chunks per thread, handed out dynamically: a
    # thread slowed by another process on its core takes fewer chunks instead
    # of holding every other thread up at the end (static halves wait for the
    # slowest). Each chunk has its own counters, so results do not depend on
    # which thread took which chunk.
    CHUNKS_PER_WORKER = 8
    MIN_KEYS_PER_CHUNK = 1 << 15


cdef inline int lanes_for(Py_ssize_t num_bins) noexcept nogil:
    return LANES_SMALL_K if num_bins <= MAX_BINS_FOR_LANES else 1


cdef inline Py_ssize_t lane_width(Py_ssize_t num_bins) noexcept nogil:
    """Counters a lane holds: with several lanes, num_bins rounded up to a
    power of two, so that one OR and one mask check eight contiguous 32-bit
    keys (a key in [num_bins, width) lands in a lane's spare counters, which
    count_lanes looks at once, at the end); with one lane, num_bins."""
    cdef Py_ssize_t width = 1
    if lanes_for(num_bins) == 1:
        return num_bins
    while width < num_bins:
        width <<= 1
    return width


cdef inline Py_ssize_t chunk_counters(Py_ssize_t num_bins) noexcept nogil:
    """The counters count_chunk needs: every lane's."""
    return lanes_for(num_bins) * lane_width(num_bins)


cdef inline uint64_t load_key(const key_t* keys, Py_ssize_t step,
                              Py_ssize_t i) noexcept nogil:
    # keys and step (the stride in bytes) are plain locals of the caller: unlike
    # a memoryview's fields they cannot alias the counters being stored to, so
    # the compiler keeps them in registers.
    return <uint64_t>(<const key_t*>(<const char*>keys + i * step))[0]


cdef inline uint64_t key_at(const key_t* typed, const char* at) noexcept nogil:
    # The key stored at byte address `at`; `typed` only selects the key type.
    # Hot loops walk a byte pointer forward by the stride instead of
    # multiplying index by stride for every key.
    return <uint64_t>(<const key_t*>at)[0]


cdef inline Py_ssize_t padded_row(Py_ssize_t counters) noexcept nogil:
    return (counters + ROW_PAD - 1) // ROW_PAD * ROW_PAD + ROW_PAD


cdef inline Py_ssize_t workers_for(Py_ssize_t n, Py_ssize_t num_bins,
                                   Py_ssize_t max_threads) noexcept nogil:
    """How many threads to split n keys over (at most max_threads, the CPUs that
    are idle right now: histkit.oracles._threads).

    Each worker owns private sub-histograms, so a worker must have enough keys
    to amortise zeroing and merging num_bins counters.
    """
    cdef Py_ssize_t most = min(<Py_ssize_t>openmp.omp_get_max_threads(), max(1, max_threads))
    cdef Py_ssize_t by_size = n // max(MIN_KEYS_PER_WORKER, 2 * num_bins)
    return max(1, min(most, by_size))


cdef inline Py_ssize_t chunks_for(Py_ssize_t n, Py_ssize_t num_bins,
                                  Py_ssize_t max_threads) noexcept nogil:
    """How many chunks to split n keys into (see CHUNKS_PER_WORKER); 1 when serial."""
    cdef Py_ssize_t workers = workers_for(n, num_bins, max_threads)
    if workers == 1:
        return 1
    # Each chunk zeroes and folds num_bins counters: with many bins, fewer chunks
    # (the counters would leave the cache and cost more than the balance saves).
    cdef Py_ssize_t by_size = n // max(MIN_KEYS_PER_CHUNK, 64 * num_bins)
    return max(workers, min(CHUNKS_PER_WORKER * workers, by_size))


cdef inline Py_ssize_t threads_for(Py_ssize_t chunks, Py_ssize_t max_threads) noexcept nogil:
    return max(1, min(chunks, min(<Py_ssize_t>openmp.omp_get_max_threads(), max_threads)))


cdef inline Py_ssize_t chunk_start(Py_ssize_t n, Py_ssize_t workers,
                                   Py_ssize_t w) noexcept nogil:
    # Contiguous chunks in worker order: chunk w precedes chunk w + 1, which
    # is what makes the first bad key and the sort's stability easy.
    return <Py_ssize_t>((<double>n * w) / workers) if w < workers else n


cdef inline Py_ssize_t count_one_by_one(const key_t* keys, Py_ssize_t step, Py_ssize_t start,
                                        Py_ssize_t stop, count_t* hist,
                                        uint64_t num_bins) noexcept nogil:
    """The plain loop: the tail of the unrolled ones, and where they stopped at a bad
    key (so the first bad index is found exactly). Returns -1 or that index."""
    cdef Py_ssize_t i
    cdef uint64_t b
    for i in range(start, stop):
        b = load_key(keys, step, i)
        if b >= num_bins:
            return i
        hist[b] += 1
    return -1


cdef inline Py_ssize_t count_pairs(const key_t* keys, Py_ssize_t step, Py_ssize_t start,
                                   Py_ssize_t stop, count_t* hist,
                                   uint64_t num_bins) noexcept nogil:
    """Count keys[start:stop] into one histogram, two keys at a time.

    Large histograms get a single lane (several would fall out of cache).
    Equal pairs of one bin in a row (a hot bin) are summed in a register and
    stored once when the run ends: no load-add-store chain on one address.
    Returns -1, or the index of the first key outside [0, num_bins).
    """
    cdef Py_ssize_t i = start
    cdef uint64_t b0, b1
    cdef uint64_t held_bin = 0
    cdef int64_t held = 0
    cdef const char* at = <const char*>keys + start * step
    while i + 2 <= stop:
        b0 = key_at(keys, at)
        b1 = key_at(keys, at + step)
        if (b0 >= num_bins) | (b1 >= num_bins):
            break
        if b0 == b1:
            if b0 != held_bin:
                hist[held_bin] += <count_t>held
                held_bin = b0
                held = 0
            held += 2
        else:
            hist[b0] += 1
            hist[b1] += 1
        i += 2
        at += 2 * step
    hist[held_bin] += <count_t>held  # bin 0 < num_bins always: held may be 0
    return count_one_by_one(keys, step, i, stop, hist, num_bins)


cdef inline Py_ssize_t count_by_pairs(const char* at, Py_ssize_t start, Py_ssize_t stop,
                                      count_t* hist, uint64_t num_bins,
                                      Py_ssize_t* reached) noexcept nogil:
    """Count the contiguous 32-bit keys from `at` (keys[start]) on, while
    every key is below PAIR_BINS (num_bins <= PAIR_BINS), into hist.

    Every counter update is a load and a store, and one store a key bounds
    the lanes' loop (about 1.1 cycles a key on a 2-core x86-64 VM, where the
    keys stream in at 0.6). Here two keys of an 8-byte load make one index,
    first * PAIR_BINS + second, into four lanes of PAIR_BINS^2 counters: one
    store for two keys. The table is folded at the end, each pair's count
    going to both its bins. reached[0] is the index counting stopped at (a
    key of PAIR_BINS or more, or a negative one, or the last few keys);
    returns -1, or the index of the first key in [num_bins, PAIR_BINS) before
    it.
    """
    # 32-bit counters (a tenth less time than int64 on uniform keys, 2^23
    # keys on one core of a 2-core x86-64 VM, a C loop): a lane's counter
    # takes one pair in eight keys, and count_lanes hands this loop at most
    # 2^34 keys, so none passes 2^32.
    cdef uint32_t pairs[4 * PAIR_BINS * PAIR_BINS]
    cdef uint64_t p0, p1, p2, p3, v
    cdef uint64_t outside = ~(<uint64_t>(PAIR_BINS - 1) | (<uint64_t>(PAIR_BINS - 1) << 32))
    cdef uint64_t a, b
    cdef uint32_t key
    cdef Py_ssize_t i = start, lane = PAIR_BINS * PAIR_BINS
    cdef const char* p = at
    memset(pairs, 0, sizeof(pairs))
    while i + 8 <= stop:
        memcpy(&p0, p, 8)
        memcpy(&p1, p + 8, 8)
        memcpy(&p2, p + 16, 8)
        memcpy(&p3, p + 24, 8)
        if (p0 | p1 | p2 | p3) & outside:
            break
        pairs[(<uint64_t><uint32_t>p0 << PAIR_SHIFT) | (p0 >> 32)] += 1
        pairs[lane + ((<uint64_t><uint32_t>p1 << PAIR_SHIFT) | (p1 >> 32))] += 1
        pairs[2 * lane + ((<uint64_t><uint32_t>p2 << PAIR_SHIFT) | (p2 >> 32))] += 1
        pairs[3 * lane + ((<uint64_t><uint32_t>p3 << PAIR_SHIFT) | (p3 >> 32))] += 1
        i += 8
        p += 32
    reached[0] = i
    for a in range(PAIR_BINS):
        for b in range(PAIR_BINS):
            v = (<uint64_t>pairs[a * PAIR_BINS + b] + pairs[lane + a * PAIR_BINS + b]
                 + pairs[2 * lane + a * PAIR_BINS + b] + pairs[3 * lane + a * PAIR_BINS + b])
            if v == 0:
                continue
            if a >= num_bins or b >= num_bins:  # a key in [num_bins, PAIR_BINS): find it
                p = at
                for i in range(start, reached[0]):
                    memcpy(&key, p, 4)
                    if key >= num_bins:
                        return i
                    p += 4
            hist[a] += <count_t>v
            hist[b] += <count_t>v
    return -1


cdef inline Py_ssize_t count_lanes(const key_t* keys, Py_ssize_t step, Py_ssize_t start,
                                   Py_ssize_t stop, count_t* hist,
                                   uint64_t num_bins) noexcept nogil:
    """Count keys[start:stop] into LANES_SMALL_K interleaved sub-histograms.

    hist holds LANES_SMALL_K lanes of lane_width(num_bins) counters; lane j
    starts at hist[j * lane_width(num_bins)]. Returns -1 or the first bad index.
    """
    cdef Py_ssize_t i = start
    cdef uint64_t b0, b1, b2, b3
    cdef uint64_t pair0, pair1, pair2, pair3
    cdef Py_ssize_t width = lane_width(<Py_ssize_t>num_bins)
    cdef count_t* h1 = hist + width
    cdef count_t* h2 = hist + 2 * width
    cdef count_t* h3 = hist + 3 * width
    cdef const char* at = <const char*>keys + start * step
    cdef Py_ssize_t step2 = 2 * step, step3 = 3 * step, step4 = 4 * step
    cdef Py_ssize_t bad, lane, b, index
    cdef uint64_t outside = ~(<uint64_t>(width - 1) | (<uint64_t>(width - 1) << 32))
    cdef uint32_t key
    if (key_t is int32_t or key_t is uint32_t) and step == 4:
        # Contiguous 32-bit keys, two to an 8-byte load, each zero-extended: a
        # negative int32 becomes at least 2^31, past any num_bins with lanes.
        # Which key of a pair lands in which lane does not matter (the lanes
        # are summed), so neither does the byte order. On a 2-core x86-64 VM
        # (one core, 2^23 keys, a C loop) this took 2.7-3.2 ms where the
        # four-key loop below took 4.4-4.9.
        if num_bins <= PAIR_BINS and stop - start >= PAIR_MIN_KEYS:
            # at most 2^34 keys (count_by_pairs' 32-bit counters); the rest below
            bad = count_by_pairs(at, i, min(stop, i + (<Py_ssize_t>1 << 34)), hist, num_bins,
                                 &i)
            if bad >= 0:
                return bad
            at += 4 * (i - start)
        # One OR and one mask test for eight keys: a key of width or more (or a
        # negative one) ends the loop; one in [num_bins, width) is counted in
        # the lanes' spare counters, looked at below. On a 2-core x86-64 VM
        # (2^24 int32 keys, 256 bins, two threads, a C loop) this and 32-bit
        # counters took 2.75-2.80 ms where eight compares took 3.09.
        while i + 8 <= stop:
            memcpy(&pair0, at, 8)
            memcpy(&pair1, at + 8, 8)
            memcpy(&pair2, at + 16, 8)
            memcpy(&pair3, at + 24, 8)
            if (pair0 | pair1 | pair2 | pair3) & outside:
                break
            hist[<uint32_t>pair0] += 1
            h1[pair0 >> 32] += 1
            h2[<uint32_t>pair1] += 1
            h3[pair1 >> 32] += 1
            hist[<uint32_t>pair2] += 1
            h1[pair2 >> 32] += 1
            h2[<uint32_t>pair3] += 1
            h3[pair3 >> 32] += 1
            i += 8
            at += 32
        if <uint64_t>width != num_bins:
            for lane in range(LANES_SMALL_K):
                for b in range(<Py_ssize_t>num_bins, width):
                    if hist[lane * width + b]:  # a key in [num_bins, width): find the first
                        at = <const char*>keys + start * step
                        for index in range(start, i):
                            memcpy(&key, at, 4)
                            if key >= num_bins:
                                return index
                            at += 4
    while i + 4 <= stop:
        b0 = key_at(keys, at)
        b1 = key_at(keys, at + step)
        b2 = key_at(keys, at + step2)
        b3 = key_at(keys, at + step3)
        if (b0 >= num_bins) | (b1 >= num_bins) | (b2 >= num_bins) | (b3 >= num_bins):
            break
        hist[b0] += 1
        h1[b1] += 1
        h2[b2] += 1
        h3[b3] += 1
        i += 4
        at += step4
    return count_one_by_one(keys, step, i, stop, hist, num_bins)


cdef inline Py_ssize_t count_chunk(const key_t* keys, Py_ssize_t step, Py_ssize_t start,
                                   Py_ssize_t stop, count_t* scratch,
                                   Py_ssize_t num_bins) noexcept nogil:
    """Histogram keys[start:stop] into scratch[0:num_bins].

    scratch holds chunk_counters(num_bins) counters, int64, or uint32 where
    the chunk has fewer than 2^32 keys; it is zeroed here and the lanes are
    folded into its first num_bins entries.
    """
    cdef int lanes = lanes_for(num_bins)
    cdef Py_ssize_t width = lane_width(num_bins)
    cdef Py_ssize_t b, j, bad
    memset(scratch, 0, chunk_counters(num_bins) * sizeof(count_t))
    if lanes == 1:
        return count_pairs(keys, step, start, stop, scratch, <uint64_t>num_bins)
    bad = count_lanes(keys, step, start, stop, scratch, <uint64_t>num_bins)
    for j in range(1, lanes):
        for b in range(num_bins):
            scratch[b] += scratch[j * width + b]
    return bad


cdef inline Py_ssize_t first_bad(const Py_ssize_t[:] bad) noexcept nogil:
    # Chunks are in input order, so the first chunk that stopped early holds
    # the first bad key of the whole input.
    cdef Py_ssize_t w
    for w in range(bad.shape[0]):
        if bad[w] >= 0:
            return bad[w]
    return -1
