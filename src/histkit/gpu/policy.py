"""The launchers' decisions as pure functions and numbers: which kernel, which
layout, which tile -- testable without a GPU (histkit.gpu.launch makes the
launches they decide).

Every constant here is derived from histkit.gpu.contract or measured (the
comment next to it says where).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import FAST_SHARED_BUDGET, WARP
from histkit.gpu.errors import UnsupportedShape

# --- the fast histogram ----------------------------------------------------------


@dataclass(frozen=True)
class FastLayout:
    """How fast_histogram keeps a block's counters in shared memory."""

    copies: int  # private copies of the shared bins
    shared_bins: int  # bins [0, shared_bins) in shared memory, the rest global
    narrow: bool = False  # 16-bit counters, two bins per word (one copy)

    @property
    def words_per_copy(self) -> int:
        """Shared words of one copy, with the word of padding that shifts each
        copy by one bank (fast_histogram.cu's stride)."""
        return (-(-self.shared_bins // 2) if self.narrow else self.shared_bins) + 1

    @property
    def shared_bytes(self) -> int:
        return self.copies * self.words_per_copy * 4


def fast_layout(max_shared_per_block: int, num_bins: int, reserved: int = 0) -> FastLayout:
    """fast_histogram's layout for a device whose blocks may have
    max_shared_per_block bytes of shared memory, of which `reserved` bytes
    hold something else (bin_histogram.cu's edges).

    As many private 32-bit copies as fit FAST_SHARED_BUDGET (two blocks per
    SM); else one 32-bit copy as large as a block may have (one block per SM);
    else one copy of 16-bit counters, which hold twice the bins; when not even
    that holds every bin, the largest 32-bit copy that fits, the bins past it
    counted in global memory. Measured on the H200 (docs/performance.md, 2^28 int32
    keys): 16-bit counters at 65536 bins 3.0-3.5 TB/s where the 32-bit copy
    with the rest global ran 1.6-3.4, but at 32768 bins (two blocks per SM)
    2.8-3.6 where one 32-bit copy ran 3.5-4.2.
    """
    budget = min(FAST_SHARED_BUDGET, max_shared_per_block) - reserved
    max_shared_per_block -= reserved
    for copies in (32, 16, 8, 4, 2, 1):
        layout = FastLayout(copies, num_bins)
        if layout.shared_bytes <= budget:
            return layout
    for layout in (FastLayout(1, num_bins), FastLayout(1, num_bins, narrow=True)):
        if layout.shared_bytes <= max_shared_per_block:
            return layout
    return FastLayout(1, min(num_bins, max_shared_per_block // 4 - 1))


# --- the partitioned histogram, and how auto chooses -----------------------------

PARTITION_BINS = 1 << contract.PART_LOW_BITS
PARTITION_TILE = contract.PART_THREADS * contract.PART_ITEMS
PARTITION_THREADS = contract.PART_THREADS
PARTITION_COUNT_THREADS = contract.PART_COUNT_THREADS
MAX_PARTITIONS = contract.MAX_PARTS
# method="auto" samples the keys (auto_choice) between these bin counts, for
# inputs of at least PARTITION_MIN_KEYS keys (docs/performance.md has the
# measurements).
PARTITION_MIN_BINS = 1 << 17
PARTITION_MAX_AUTO_BINS = 1 << 21
# Below 2^25 keys the sample's read-back costs more than it can save (H200,
# kernel times by events: at 2^22 keys and 2^20 bins the sampled
# choice took 170-228 us where the fast kernel alone took 31-68; at 2^24 keys
# the fast kernel is within 12% of the partitioned one on uniform keys, far
# ahead on zipf, and the sample adds 60-300 us). From 2^25 keys partitioning
# uniform keys wins more than the sample costs (2^26: 519 against 692 us).
PARTITION_MIN_KEYS = 1 << 25
# auto's choices, and the word the device writes for each (the gated builds'
# HK_GATE values).
AUTO_CHOICE_CODES = {"fast": contract.AUTO_FAST, "fast-hold": contract.AUTO_FAST_HOLD,
                     "partitioned": contract.AUTO_PARTITIONED}


SAMPLE_RUNS = contract.SAMPLE_RUNS


def auto_choice(runs: np.ndarray, shared_bins: int, num_bins: int) -> str:
    """The kernel for these keys: "partitioned", "fast-hold" or "fast".

    Judged from runs of consecutive keys' bins. Scattered global atomics (more
    distinct 32-byte sectors of the global histogram than
    contract.AUTO_SCATTERED_PER_MILLE of the sampled keys, as with uniform keys
    over many bins: one L2 atomic per key) bind the fast kernel: partition.
    One global bin taking more than contract.AUTO_HOT_PER_MILLE of the sample
    (every warp's atomic queues on one address):
    the fast kernel holding runs in registers. Otherwise -- keys that repeat
    within runs (sorted, hot bins in shared memory) or walk neighbouring bins
    (round-robin) -- the fast kernel. The comparisons are in whole numbers,
    as the device makes them (partitioned_histogram.cu's auto_choice): the
    conformance suite checks that the two agree on every sampled case.
    """
    sampled = runs.size
    if scattered_sectors(runs, shared_bins, num_bins) * 1000 > (
            contract.AUTO_SCATTERED_PER_MILLE * sampled):
        return "partitioned"
    if hot_global_count(runs, shared_bins, num_bins) * 1000 > (
            contract.AUTO_HOT_PER_MILLE * sampled):
        return "fast-hold"
    return "fast"


NOT_GLOBAL = np.iinfo(np.uint64).max


def _global_bins(runs: np.ndarray, shared_bins: int, num_bins: int) -> np.ndarray:
    """The sample with bins not counted in global memory replaced by NOT_GLOBAL."""
    return np.where((runs >= shared_bins) & (runs < num_bins), runs, NOT_GLOBAL)


def hot_global_count(runs: np.ndarray, shared_bins: int, num_bins: int) -> int:
    """How many sampled keys fall in the sample's most frequent global bin."""
    bins = _global_bins(runs, shared_bins, num_bins).ravel()
    values, counts = np.unique(bins[bins != NOT_GLOBAL], return_counts=True)
    return int(counts.max()) if len(values) else 0


def scattered_sectors(runs: np.ndarray, shared_bins: int, num_bins: int) -> int:
    """Distinct global-histogram sectors (4 bins) within each run, summed over
    the runs. Vectorised (one sort of the whole sample)."""
    bins = _global_bins(runs, shared_bins, num_bins)
    sectors = np.sort(np.where(bins != NOT_GLOBAL, bins >> np.uint64(2), NOT_GLOBAL), axis=1)
    starts = np.ones_like(sectors, dtype=bool)
    starts[:, 1:] = sectors[:, 1:] != sectors[:, :-1]
    return int(np.count_nonzero(starts & (sectors != NOT_GLOBAL)))


def choice_edges(runs: np.ndarray, num_bins: int) -> tuple[int, ...]:
    """shared_bins values at which these sampled bins meet the rule's border
    between shared and global bins, whatever the device's shared memory: 0
    (every bin global, so the hot bin competes with every other key's votes)
    and the sample's most frequent valid bin (that bin is the first global
    one). The conformance suite runs auto's choosing kernel at each too: the
    layout's own shared_bins reaches neither edge on most inputs."""
    bins = np.asarray(runs, dtype=np.uint64).ravel()
    valid = bins[bins < np.uint64(num_bins)]
    if not valid.size:
        return (0,)
    values, counts = np.unique(valid, return_counts=True)
    hot = int(values[np.argmax(counts)])
    return (0,) if hot == 0 else (0, hot)


@dataclass(frozen=True)
class AutoPolicy:
    """Where method="auto" samples the keys before choosing (docs/performance.md)."""

    min_bins: int = PARTITION_MIN_BINS
    max_bins: int = PARTITION_MAX_AUTO_BINS
    min_keys: int = PARTITION_MIN_KEYS

    def samples(self, n: int, num_bins: int) -> bool:
        return self.min_bins <= num_bins <= self.max_bins and n >= self.min_keys


DEFAULT_POLICY = AutoPolicy()
# The conformance suite's auto row: it samples at every size, so each branch of
# the choice is reached by small cases.
ALWAYS_SAMPLE = AutoPolicy(min_bins=1, max_bins=PARTITION_MAX_AUTO_BINS, min_keys=1)


# --- the sorts -------------------------------------------------------------------

def check_index_dtype(n: int, index_dtype) -> np.dtype:
    """index_dtype as a dtype the sorts write: int64, or int32 up to 2^31 keys."""
    if index_dtype is None:  # np.dtype(None) is float64: name what was given
        raise TypeError("index_dtype must be int32 or int64; got None")
    try:
        dtype = np.dtype(index_dtype)
    except TypeError:
        raise TypeError(f"index_dtype must be int32 or int64; got {index_dtype!r}") from None
    if dtype not in contract.INDEX_C_TYPES:
        raise TypeError(f"index_dtype must be int32 or int64; got {dtype}")
    if dtype == np.int32 and n > contract.MAX_INT32_INDEX_KEYS:
        raise UnsupportedShape(f"int32 indices number up to 2^31 keys; got {n}; "
                               f"use index_dtype=np.int64")
    return dtype


TILE_THREADS = contract.TILE_WARPS * WARP
DIGIT_BITS = contract.DIGIT_BITS
MAX_DIGITS = 1 << DIGIT_BITS
LOOK_BACK_BYTES_PER_TILE = 8 * MAX_DIGITS  # a 64-bit look-back word per digit


def tile_keys(dtype: np.dtype, items: int | None = None) -> int:
    """Keys in one stable-sort tile (counting_sort.cu's TILE_KEYS) for this key
    type: `items` rounds of 32 keys per warp (None: the contract's)."""
    return TILE_THREADS * (items or contract.tile_items(np.dtype(dtype).itemsize))


def staged_tile_bytes(dtype: np.dtype, index_dtype: np.dtype, items: int | None = None) -> int:
    """A sort pass's dynamic shared memory: a tile's keys and their indices,
    or, when larger, each warp's MAX_DIGITS 32-bit digit masks, which the same
    memory holds while the tile is ranked (counting_sort.cu: STAGED_TILE_BYTES)."""
    staged = tile_keys(dtype, items) * (np.dtype(dtype).itemsize + np.dtype(index_dtype).itemsize)
    return max(staged, contract.TILE_WARPS * MAX_DIGITS * 4)


def digit_shifts(num_bins: int) -> tuple[int, ...]:
    """The shift of each LSD pass: one 8-bit digit of the bin per pass."""
    shifts = [0]
    while (num_bins - 1) >> (shifts[-1] + DIGIT_BITS):
        shifts.append(shifts[-1] + DIGIT_BITS)
    return tuple(shifts)


# num_bins and first_bad as a full-width (RADIX_KEYS) build is handed them:


def sort_key_range(dtype: np.dtype, num_bins: int, full_width: bool) -> int:
    """The bins a sort's digits must cover: full-width keys, every value of the
    dtype (their order-preserving image has 8 x itemsize bits); else num_bins,
    but valid keys stay below the dtype's largest value + 1 whatever it is."""
    if full_width:
        return 1 << (8 * np.dtype(dtype).itemsize)
    return min(num_bins, int(np.iinfo(dtype).max) + 1)


def digit_count(num_bins: int, shift: int) -> int:
    """Digits pass `shift` can see: at most 2^DIGIT_BITS, fewer for a small top digit."""
    return min(MAX_DIGITS, ((num_bins - 1) >> shift) + 1)


# No CUDA GPU runs more threads on one SM (2048 on sm_70 ... sm_90, fewer on
# some): an upper bound on the blocks a resident launch can hold, known before
# any kernel is compiled and its occupancy asked.
MAX_THREADS_PER_SM = 2048


def resident_tile_items(n: int, dtype: np.dtype, capacity: int) -> int | None:
    """The smallest of contract.RESIDENT_SMALL_TILE_ITEMS whose tiles of n keys
    all fit on the GPU at once (capacity blocks), else None: resident_sort's
    largest tile (contract.resident_tile_items). At small N more, smaller
    tiles spread a call over more SMs (a tile's latency, not bandwidth, bounds
    a call of a few tiles)."""
    return next((items for items in contract.RESIDENT_SMALL_TILE_ITEMS
                 if -(-n // tile_keys(dtype, items)) <= capacity), None)


# rank_sort against resident_sort, launch + sync on the H200 (commit 39f1bc3;
# us, rank / resident): 2^12 keys
# 20.2 / 20.5 at K = 256 and 19.6 / 32.1 at K = 65536; 2^13 keys 25.1 / 17.6
# and 25.3 / 27.5. Its n^2 comparisons lose to one resident pass (K <= 256)
# past about 2^12 keys, and to two (K <= 65536) only past 2^13.
RANK_ONE_PASS_MAX_KEYS = 4096


def rank_sort_wins(n: int, num_bins: int) -> bool:
    """Whether gpu.counting_sort(stable=True) takes rank_sort for n keys over
    num_bins bins (where rank_sort takes them: launch.rank.rank_fits)."""
    return n <= (RANK_ONE_PASS_MAX_KEYS if num_bins <= MAX_DIGITS else contract.RANK_MAX_KEYS)

