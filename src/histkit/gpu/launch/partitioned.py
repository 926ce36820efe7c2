"""The two-pass partitioned histogram (many bins), and method="auto": the
fast kernel, or a sample of the keys choosing (histkit.gpu.policy.auto_choice)."""

from __future__ import annotations

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import MAX_KEYS_PER_BLOCK, WARP
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import (
    Keys,
    blocks_for,
    key_args,
    zero_counts,
)
from histkit.gpu.launch.histogram import fast_launch
from histkit.gpu.launch.scan import exclusive_scan
from histkit.gpu.policy import (
    DEFAULT_POLICY,
    MAX_PARTITIONS,
    PARTITION_COUNT_THREADS,
    PARTITION_THREADS,
    PARTITION_TILE,
    SAMPLE_RUNS,
    AutoPolicy,
    auto_choice,
    fast_layout,
)


def partitioned_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                          first_bad: DeviceArray, grid: int | None = None,
                          low_bits: int = contract.PART_LOW_BITS) -> Geometry:
    """Partition keys by their bin's high bits, then count each partition in shared memory.

    grid forces both passes' block counts; low_bits (bins per partition =
    2^low_bits) below the default makes many partitions out of few bins.
    """
    partition_bins = 1 << low_bits
    if num_bins > partition_bins * MAX_PARTITIONS:
        raise UnsupportedShape(f"the partitioned kernel takes num_bins <= "
                         f"{partition_bins * MAX_PARTITIONS}; got {num_bins}; "
                         f"use method='auto' or 'atomic'")
    plan = rt.plan(("partitioned", keys.dtype, keys.n, num_bins, grid, low_bits),
                   lambda: _partitioned_plan(rt, keys, num_bins, grid, low_bits))
    (partition, split, count, merge, entries, scalars, described) = plan
    low_bins = rt.empty(keys.n, np.uint16)
    counts = rt.empty(entries, np.uint64)
    starts = rt.empty(entries, np.uint32)
    positions = rt.empty(entries, np.uint64)
    keep_alive = [low_bins, counts, starts, positions]
    n, bins, parts, tiles = scalars
    zero_counts(rt, hist, num_bins)
    rt.launch(partition, split, keys.ptr, n, bins, parts, tiles, low_bins.ptr, counts.ptr,
              starts.ptr, first_bad.ptr)
    exclusive_scan(rt, counts.ptr, entries, positions.ptr, keep_alive)
    rt.launch(count, merge, low_bins.ptr, tiles, parts, counts.ptr, positions.ptr, starts.ptr,
              hist.ptr)
    return described


def _partitioned_plan(rt: Runtime, keys: Keys, num_bins: int, grid: int | None,
                      low_bits: int):
    """The partitioned histogram's kernels, geometries, table size and scalar
    arguments for one shape."""
    partition_bins = 1 << low_bits
    parts = -(-num_bins // partition_bins)
    tiles = -(-keys.n // PARTITION_TILE)
    defines = keys.defines(PART_LOW_BITS=str(low_bits))
    partition = rt.kernel("partitioned_histogram.cu", "partition_tiles", defines)
    if grid is None:
        grid_split = blocks_for(tiles, 1, rt.sm_count * rt.resident_blocks(
            partition, PARTITION_THREADS, 0))
    else:
        grid_split = grid
    split = Geometry(f"partition_tiles[PART_LOW_BITS={low_bits}]", grid_split, PARTITION_THREADS)
    count = rt.kernel("partitioned_histogram.cu", "count_partitions", defines)
    shared = partition_bins * 4
    if grid is None:
        blocks = rt.sm_count * rt.resident_blocks(count, PARTITION_COUNT_THREADS, shared)
    else:
        rt.allow_shared(count, shared)
        blocks = grid
    # Shared counters are 32-bit: no block may count 2^32 keys.
    blocks = max(blocks, -(-keys.n // MAX_KEYS_PER_BLOCK))
    merge = Geometry("count_partitions", blocks, PARTITION_COUNT_THREADS, shared)
    scalars = (*key_args(keys, num_bins)[1:], np.uint32(parts), np.int64(tiles))
    described = Geometry(f"{split} + count_partitions", merge.grid, merge.block, shared)
    return partition, split, count, merge, parts * tiles, scalars, described


def sample_runs(rt: Runtime, keys: Keys) -> np.ndarray:
    """SAMPLE_RUNS runs of 32 consecutive keys' bins, spread over the input."""
    sample = rt.empty(SAMPLE_RUNS * WARP, np.uint64)
    kernel = rt.kernel("partitioned_histogram.cu", "sample_runs", keys.defines())
    rt.launch(kernel, Geometry("sample_runs", SAMPLE_RUNS * WARP // 256, 256), keys.ptr,
              np.int64(keys.n), np.int64(SAMPLE_RUNS), sample.ptr)
    bins = rt.copy_to_host(sample.ptr, np.empty(SAMPLE_RUNS * WARP, np.uint64))
    return bins.reshape(SAMPLE_RUNS, WARP)


def auto_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                   first_bad: DeviceArray, grid: int | None = None,
                   policy: AutoPolicy = DEFAULT_POLICY) -> Geometry:
    """method="auto": the fastest exact kernel for this input.

    Below PARTITION_MIN_BINS bins (or keys), the fast kernel. Above, a sample
    of the keys picks the kernel (auto_choice; bench/NOTES.md has the
    measurements behind it), except in a CUDA graph capture, which cannot
    read a sample back: there, the partitioned kernel.
    """
    choice = "fast"
    if policy.samples(keys.n, num_bins):
        if rt.capturing():
            # A graph cannot read a sample back: the kernel whose speed depends
            # least on the keys (two bandwidth-bound passes).
            choice = "partitioned"
        else:
            shared_bins = fast_layout(rt.max_shared_per_block, num_bins).shared_bins
            choice = auto_choice(sample_runs(rt, keys), shared_bins, num_bins)
    label = f"auto -> {choice}: "
    if choice != "partitioned":
        return fast_launch(rt, keys, num_bins, hist, first_bad, choice == "fast-hold", grid,
                           None, label)
    geometry = partitioned_histogram(rt, keys, num_bins, hist, first_bad, grid)
    return Geometry(label + geometry.kernel, geometry.grid, geometry.block,
                    geometry.shared_bytes)
