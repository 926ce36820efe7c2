"""Every number the host and the kernels share, defined once.

The host computes geometry and scratch sizes from these; ``defines_for``
hands the same values to NVRTC as ``-D`` defines, so a kernel never runs with
a constant the host does not know. The ``#ifndef`` defaults in ``cuda/*.cu``
only serve standalone compiles (``tests/test_registry.py`` checks that they
agree with this module).
"""

from __future__ import annotations

import numpy as np

# numpy dtype -> the C type the kernels are compiled for (-DKEY_T=...).
KEY_C_TYPES = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
}

# first_bad starts here; a kernel lowers it to the first out-of-range key's index.
NO_BAD_KEY = 2**64 - 1

# The chapter's numbers: one thread per key in blocks of 256, warps of 32.
CHAPTER_BLOCK = 256
WARP = 32
# Shared counters are 32-bit: no block may count 2^32 keys.
MAX_KEYS_PER_BLOCK = 2**32 - 1

# exclusive_scan.cu: a tile is SCAN_THREADS x SCAN_ITEMS values.
SCAN_THREADS = 256
SCAN_ITEMS = 8

# fast_histogram.cu
FAST_BLOCK = 1024
FAST_VECTORS_PER_THREAD = 4  # 16-byte loads in flight per thread
# Per-block shared memory the fast kernel aims for: two blocks of FAST_BLOCK per SM.
FAST_SHARED_BUDGET = 100 * 1024
# A 16-bit shared counter that reaches this spills it to its global bin (the
# launcher must then zero the counts: histogram.overwrites_counts).
FAST_NARROW_SPILL = 0x8000

# partitioned_histogram.cu
PART_LOW_BITS = 14  # bins per partition = 2^PART_LOW_BITS
MAX_PARTS = 256
PART_THREADS = 1024
PART_ITEMS = 8
PART_COUNT_THREADS = 512
PART_ENTRY_COST = 64
SAMPLE_RUNS = 64  # auto's key sample: runs of WARP consecutive keys
# auto's choice (partitioned_histogram.cu's auto_choice kernel, and
# histkit.gpu.policy.auto_choice on the host): the fast kernel's global atomics
# scatter when distinct global-histogram sectors exceed this share of the
# sample (per mille); one global bin is hot past this share (at least 500: the
# kernel finds it by a majority vote).
AUTO_SCATTERED_PER_MILLE = 500
AUTO_HOT_PER_MILLE = 500
# The word auto_choice writes, and the value each gated build runs on
# (-DHK_GATE=..., common.cuh).
AUTO_FAST = 0
AUTO_FAST_HOLD = 1
AUTO_PARTITIONED = 2
# The conformance suite's skewed cases: each warp of a block sleeps its rank x
# this many ns at entry and after every block barrier (common.cuh, HK_SKEW_NS;
# passed only inside Runtime.skewed_schedule) ...
SCHEDULE_SKEW_NS = 400
# ... and in block b < 8 every warp but warp 0 waits (b + 1) x this many ns
# after the block's (b + 1)-th barrier (HK_STRAGGLE_NS): far longer than any
# rank skew (32 warps x 400 ns), so a block's late warps stay late.
SCHEDULE_STRAGGLE_NS = 20_000
# ... and every block's shared memory (static and dynamic) starts filled with
# this byte (HK_SHARED_POISON): not zero, which is what shared memory often
# happens to hold, so a kernel that reads counters it never zeroed miscounts.
SCHEDULE_SHARED_POISON = 0xA5

# counting_sort.cu: a tile is TILE_WARPS warps x TILE_ITEMS rounds of 32 keys.
# Measured on the H200 (2^28 int32 keys; a sweep of tile shapes, commit a1b76f1):
# from 8 rounds and 4 blocks per SM to 16 rounds and 2 blocks, the radix sort
# of full-width keys 9.0 -> 12.4 G keys/s, the 8-bit counting sort of uniform
# keys 41.7 -> 60.4, 16-bit 18.4 -> 25.4 (on count-then-scatter passes, two
# reads of the keys a pass); all-equal keys lose 9-17%. On the onesweep passes
# (variants alternated in one process, commit ebe7962): 20 rounds at 3 blocks
# per SM beat 16 at 4 on 22 of 24 rows (int32 and int64 indices), by up to
# 12% / 22% on round-robin keys; the two others lost 1%.
TILE_WARPS = 8
TILE_ITEMS = 20
# 8-byte keys: 12 rounds keep a tile's staged keys and int64 indices at 48 KiB
# (16 rounds: 64 KiB, fewer blocks per SM); chosen with the passes before onesweep.
WIDE_KEY_TILE_ITEMS = 12
DIGIT_BITS = 8
# The passes (onesweep_scatter): __launch_bounds__ blocks per SM, measured on
# the H200 (2^28 keys, CUB's pairs sort beside them, commit 75ddc05):
# with 16-round tiles of 4-byte keys 4 beat 3 by 0-7%; on 8-byte keys 3 beat 4
# by 7% with int64 indices (4 beat 3 by 6% with int32 ones); 2 lost 5-15%
# everywhere. 20-round tiles (above) take 3: their staged keys and
# int64 indices are 60 KiB a block.
ONESWEEP_MIN_BLOCKS = 3
WIDE_KEY_ONESWEEP_MIN_BLOCKS = 3
# resident_sort keeps the tile and the launch bounds it was measured with:
# 16 rounds at 4 blocks per SM (8-byte keys:
# WIDE_KEY_TILE_ITEMS at WIDE_KEY_ONESWEEP_MIN_BLOCKS), so the GPU holds 528
# of its tiles at once on the H200, where the onesweep passes' 20 rounds at 3
# blocks would hold 396. Its small-N tiles below run at the same bounds.
RESIDENT_TILE_ITEMS = 16
RESIDENT_MIN_BLOCKS = 4
# resident_sort at small N: tiles of 4 or 8 rounds (the smallest whose tiles
# all fit on the GPU at once), so a call of a few tiles spreads over more SMs.
RESIDENT_SMALL_TILE_ITEMS = (4, 8)
# resident_sort: up to this many tiles every block sums each digit's column of
# tile counts itself; above, the columns are scanned once (one more grid-wide
# wait). Measured on the H200 (commit 7683dee,
# launch + sync, K = 256 / 65536): the direct sum 22.1 / 32.9 us at 16 tiles
# against 34.5 / 59.8 for the scan, 33.1 / 54.3 at 64 tiles against 25.1 / 39.3.
RESIDENT_DIRECT_PREFIX_TILES = 32
# rank_sort (the smallest stable sorts): up to RANK_MAX_KEYS keys, each
# compared with every other, by blocks of RANK_WARPS warps owning 32 keys; a
# bin is compared as 32 bits, num_bins at most RANK_MAX_BINS (the staged
# padding, 2^32 - 1, must come after every clamped bin).
RANK_MAX_KEYS = 8192
RANK_WARPS = 8
RANK_MAX_BINS = 2**32 - 2
HIST_ITEMS = 8  # keys each thread of digit_histograms loads per round
STAGE_LOADS = 4  # rounds whose original indices a scatter thread loads at once
MAX_PASSES = 8  # a pass per byte of a 64-bit key


def tile_items(itemsize: int) -> int:
    """Rounds of 32 keys per warp in one stable-sort tile, for keys of itemsize bytes."""
    return WIDE_KEY_TILE_ITEMS if itemsize == 8 else TILE_ITEMS


def resident_tile_items(itemsize: int) -> int:
    """Rounds of 32 keys per warp in resident_sort's largest tile."""
    return WIDE_KEY_TILE_ITEMS if itemsize == 8 else RESIDENT_TILE_ITEMS


# Weighted histograms (weighted_histogram.cu): weights each thread loads before
# its first add; the most weights a launch adds, and a block in a launch. A
# weight adds less than 2^40 to a register or shared int64 slot, so 2^22 a
# block keep them below 2^62; less than 2^32 to a global slot, so 2^28 a
# launch keep those below 2^62 until carry_rows runs.
WEIGHTS_PER_THREAD = 4
MAX_LAUNCH_WEIGHTS = 2**28
BLOCK_WEIGHTS = 2**22
# With no shared window every add goes to the global rows; there an add below
# 2^WHOLE_ADD_BITS goes whole, one atomic (a float32 weight's shifted mantissa
# is below 2^36 for 13 of its 16 shifts, a float64 weight's two parts always),
# where splitting it below 2^32 took two for most weights (every negative
# one). A weight makes at most two adds to one slot, so GLOBAL_LAUNCH_WEIGHTS
# a launch keep a global slot below 2^62 until carry_rows runs.
WHOLE_ADD_BITS = 36
GLOBAL_LAUNCH_WEIGHTS = 2**24
WEIGHTED_MIN_BLOCKS = 1  # blocks of FAST_BLOCK per SM its registers are budgeted for
# From this many bins a run of one weight is started and flushed without its
# other slots (LONE_RUN): uniform keys there rarely repeat in a thread, and
# on an H100 (2^28 int32 keys, float32 weights) that took 1.21 -> 1.45 TB/s at
# 256 bins and 1.22 -> 1.53 at 4096, where at 16 bins (one weight in sixteen
# joins a run, and its warp then runs both ways) it cost 13%.
LONE_RUN_FROM_BINS = 256
# Where a block keeps this many shared copies or more (up to 2048 bins,
# either weight type), each weight is added to shared memory on its own, no
# runs: two native 32-bit atomics cost less than a run's bookkeeping, and
# lanes of one bin add to different copies. On an H100 (2^28 int32 keys,
# float32 weights, the kernel alone, runs against none): uniform keys 1.34 ->
# 2.52 TB/s at 16 bins, 1.88 -> 2.51 at 256, 1.94 -> 2.45 at 1024 and 2.01 ->
# 2.52 at 2048; all-equal keys 2.28 -> 2.52, 2.22 -> 2.52, 2.16 -> 2.51 and
# 2.14 -> 2.40. With one copy (4096 bins) all-equal keys need runs (2.19
# with them, 1.83 without), and the global rows take them as ever.
NO_RUNS_FROM_COPIES = 2
# Where no window of every bin fits a block (many bins), the keys are
# partitioned by their bin's high bits (weighted_histogram.cu's count_parts,
# scatter_parts, accumulate_parts) and each partition summed in shared
# memory: at most MAX_PARTS partitions, each of the most bins (2^bits, bits
# up to WEIGHTED_PART_MAX_BITS) of which a block keeps NO_RUNS_FROM_COPIES
# copies or more. A launch moves at most WEIGHTED_PART_LAUNCH_WEIGHTS keys and
# weights (its scratch: 2 bytes and a weight each); scatter_parts moves
# SCATTER_ITEMS keys a thread in each tile, in blocks of SCATTER_THREADS
# whose registers are budgeted for SCATTER_MIN_BLOCKS an SM. auto chooses
# between the two ways from WEIGHTED_PART_MIN_WEIGHTS weights
# (docs/performance.md, "Smaller inputs": below it the choice's cost and the
# partitions' scratch outweigh what partitioning saves on uniform keys).
WEIGHTED_PART_MAX_BITS = 14
WEIGHTED_PART_LAUNCH_WEIGHTS = 2**26
WEIGHTED_PART_MIN_WEIGHTS = 2**28
SCATTER_ITEMS = 8
# Two blocks of 512 an SM overlap one block's loads with the other's staging
# and writing: faster than one of 1024, and three spill float64 registers
# (the shapes measured: docs/design.md).
SCATTER_THREADS = 512
SCATTER_MIN_BLOCKS = 2


def _shared_defines() -> dict[str, int]:
    return {"HK_NO_BAD_KEY": NO_BAD_KEY}


SOURCE_DEFINES: dict[str, dict[str, int]] = {
    "exclusive_scan.cu": {"SCAN_THREADS": SCAN_THREADS, "SCAN_ITEMS": SCAN_ITEMS},
    "fast_histogram.cu": {"VECTORS_PER_THREAD": FAST_VECTORS_PER_THREAD,
                          "NARROW_SPILL": FAST_NARROW_SPILL},
    "bin_histogram.cu": {"VECTORS_PER_THREAD": FAST_VECTORS_PER_THREAD,
                         "NARROW_SPILL": FAST_NARROW_SPILL, "BLOCK_THREADS": FAST_BLOCK},
    "partitioned_histogram.cu": {"PART_LOW_BITS": PART_LOW_BITS, "MAX_PARTS": MAX_PARTS,
                                 "PART_THREADS": PART_THREADS, "PART_ITEMS": PART_ITEMS,
                                 "COUNT_THREADS": PART_COUNT_THREADS,
                                 "ENTRY_COST": PART_ENTRY_COST,
                                 "AUTO_SCATTERED_PER_MILLE": AUTO_SCATTERED_PER_MILLE,
                                 "AUTO_HOT_PER_MILLE": AUTO_HOT_PER_MILLE,
                                 "AUTO_FAST": AUTO_FAST, "AUTO_FAST_HOLD": AUTO_FAST_HOLD,
                                 "AUTO_PARTITIONED": AUTO_PARTITIONED},
    "weighted_histogram.cu": {"WEIGHTS_PER_THREAD": WEIGHTS_PER_THREAD,
                              "BLOCK_THREADS": FAST_BLOCK, "MIN_BLOCKS": WEIGHTED_MIN_BLOCKS,
                              "MAX_PARTS": MAX_PARTS, "SCATTER_ITEMS": SCATTER_ITEMS,
                              "SCATTER_THREADS": SCATTER_THREADS,
                              "SCATTER_MIN_BLOCKS": SCATTER_MIN_BLOCKS},
    "counting_sort.cu": {"TILE_WARPS": TILE_WARPS, "TILE_ITEMS": TILE_ITEMS,
                         "WIDE_KEY_TILE_ITEMS": WIDE_KEY_TILE_ITEMS,
                         "DIGIT_BITS": DIGIT_BITS, "HIST_ITEMS": HIST_ITEMS,
                         "STAGE_LOADS": STAGE_LOADS,
                         "ONESWEEP_MIN_BLOCKS": ONESWEEP_MIN_BLOCKS,
                         "WIDE_KEY_ONESWEEP_MIN_BLOCKS": WIDE_KEY_ONESWEEP_MIN_BLOCKS,
                         "RESIDENT_MIN_BLOCKS": RESIDENT_MIN_BLOCKS,
                         "MAX_PASSES": MAX_PASSES,
                         "DIRECT_PREFIX_TILES": RESIDENT_DIRECT_PREFIX_TILES,
                         "RANK_MAX_KEYS": RANK_MAX_KEYS, "RANK_WARPS": RANK_WARPS},
}


def defines_for(source: str, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The -D defines one compile of `source` gets: the contract, then overrides."""
    values = {**_shared_defines(), **SOURCE_DEFINES.get(source, {})}
    defines = {name: _c_literal(value) for name, value in values.items()}
    defines.update(overrides or {})
    return defines


def _c_literal(value: int) -> str:
    return f"{value}ULL" if value > 2**31 - 1 else str(value)


def key_defines(dtype: np.dtype) -> dict[str, str]:
    return {"KEY_T": KEY_C_TYPES[np.dtype(dtype)]}


# Real-valued samples (bin_histogram.cu): float16 travels as its bits.
FLOAT_C_TYPES = {np.dtype(np.float16): "unsigned short", np.dtype(np.float32): "float",
                 np.dtype(np.float64): "double"}


def sample_defines(dtype: np.dtype) -> dict[str, str]:
    """bin_histogram.cu's sample type: KEY_T, and whether it is a float,
    float16 bits, a signed integer."""
    dtype = np.dtype(dtype)
    if dtype in FLOAT_C_TYPES:
        return {"KEY_T": FLOAT_C_TYPES[dtype], "SAMPLE_FLOAT": "1",
                "SAMPLE_HALF": str(int(dtype == np.float16))}
    return {"KEY_T": KEY_C_TYPES[dtype], "SAMPLE_FLOAT": "0",
            "SAMPLE_SIGNED": str(int(dtype.kind == "i"))}


# A sort's original indices (index_dtype) -> the C type (-DINDEX_T=...; common.cuh).
INDEX_C_TYPES = {np.dtype(np.int64): "long long", np.dtype(np.int32): "int"}
# int32 indices number at most this many keys (0 ... 2^31 - 1).
MAX_INT32_INDEX_KEYS = 2**31


def index_defines(dtype) -> dict[str, str]:
    return {"INDEX_T": INDEX_C_TYPES[np.dtype(dtype)]}


def schedule_defines() -> dict[str, str]:
    """The defines of the conformance suite's skewed builds (schedule_skew.cuh):
    the warps' rank skew, the stragglers and the shared-memory poison."""
    return {"HK_SKEW_NS": str(SCHEDULE_SKEW_NS), "HK_STRAGGLE_NS": str(SCHEDULE_STRAGGLE_NS),
            "HK_SHARED_POISON": str(SCHEDULE_SHARED_POISON)}
