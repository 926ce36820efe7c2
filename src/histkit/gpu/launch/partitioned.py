"""The two-pass partitioned histogram (many bins), and method="auto": the
fast kernel, or a sample of the keys choosing on the device (the rule of
histkit.gpu.policy.auto_choice)."""

from __future__ import annotations

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import MAX_KEYS_PER_BLOCK, WARP
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import (
    Gate,
    Keys,
    blocks_for,
    gate_args,
    gate_choice,
    gate_defines,
    key_args,
    zero_counts,
)
from histkit.gpu.launch.histogram import FAST_BINS_LIMIT, fast_launch, fast_plan
from histkit.gpu.launch.scan import exclusive_scan
from histkit.gpu.policy import (
    DEFAULT_POLICY,
    MAX_PARTITIONS,
    PARTITION_COUNT_THREADS,
    PARTITION_THREADS,
    PARTITION_TILE,
    SAMPLE_RUNS,
    AutoPolicy,
    choice_edges,
    fast_layout,
)


def partitioned_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                          first_bad: DeviceArray, grid: int | None = None,
                          low_bits: int = contract.PART_LOW_BITS,
                          gate: Gate | None = None) -> Geometry:
    """Partition keys by their bin's high bits, then count each partition in shared memory.

    grid forces both passes' block counts; low_bits (bins per partition =
    2^low_bits) below the default makes many partitions out of few bins.
    gate: every launch gated by auto's choice on the device. hist is zeroed
    either way, after the first pass is queued: launches that add into it
    (auto's other candidates) come after this call's.
    """
    partition_bins = 1 << low_bits
    if num_bins > partition_bins * MAX_PARTITIONS:
        raise UnsupportedShape(f"the partitioned kernel takes num_bins <= "
                         f"{partition_bins * MAX_PARTITIONS}; got {num_bins}; "
                         f"use method='auto' or 'atomic'")
    plan = rt.plan(("partitioned", keys.dtype, keys.n, num_bins, grid, low_bits,
                    gate_choice(gate)),
                   lambda: _partitioned_plan(rt, keys, num_bins, grid, low_bits, gate))
    (partition, split, count, merge, entries, scalars, described) = plan
    low_bins = rt.empty(keys.n, np.uint16)
    counts = rt.empty(entries, np.uint64)
    starts = rt.empty(entries, np.uint32)
    n, bins, parts, tiles = scalars
    gated = gate_args(gate)
    rt.launch(partition, split, keys.ptr, n, bins, parts, tiles, low_bins.ptr, counts.ptr,
              starts.ptr, first_bad.ptr, *gated)
    positions = rt.empty(entries, np.uint64)  # the scan's: allocated behind the first pass
    keep_alive = [low_bins, counts, starts, positions]
    # Zeroed after the first pass is queued (it does not touch hist): a call
    # from an idle GPU starts the pass that reads every key one step sooner.
    zero_counts(rt, hist, num_bins)
    exclusive_scan(rt, counts.ptr, entries, positions.ptr, keep_alive, gate=gate)
    rt.launch(count, merge, low_bins.ptr, tiles, parts, counts.ptr, positions.ptr, starts.ptr,
              hist.ptr, *gated)
    return described


def _partitioned_plan(rt: Runtime, keys: Keys, num_bins: int, grid: int | None,
                      low_bits: int, gate: Gate | None = None):
    """The partitioned histogram's kernels, geometries, table size and scalar
    arguments for one shape."""
    partition_bins = 1 << low_bits
    parts = -(-num_bins // partition_bins)
    tiles = -(-keys.n // PARTITION_TILE)
    defines = keys.defines(PART_LOW_BITS=str(low_bits), **gate_defines(gate))
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


def auto_shared_bins(rt: Runtime, num_bins: int) -> int:
    """The bins the fast kernel keeps in shared memory, as auto's choice counts
    them (its launch and the conformance suite's probe alike); worked out
    once per num_bins (the layout's search is a few us of Python a call)."""
    return rt.plan(("auto shared bins", num_bins),
                   lambda: fast_layout(rt.max_shared_per_block, num_bins).shared_bins)


def choose_on_device(rt: Runtime, keys: Keys, num_bins: int, shared_bins: int,
                     choice: DeviceArray, sample: DeviceArray | None = None) -> None:
    """Launch auto's choice: partitioned_histogram.cu's auto_choice judges
    SAMPLE_RUNS runs of WARP keys and writes a contract AUTO_* code to choice
    (one uint32); sample (SAMPLE_RUNS x WARP uint64), if given, receives the
    bins it judged."""
    kernel, geometry, scalars = rt.plan(
        ("auto_choice", keys.dtype, keys.n, num_bins, shared_bins),
        lambda: (rt.kernel("partitioned_histogram.cu", "auto_choice", keys.defines()),
                 Geometry("auto_choice", 1, min(1024, SAMPLE_RUNS * WARP)),
                 (np.int64(keys.n), np.int64(SAMPLE_RUNS), np.uint64(shared_bins),
                  np.uint64(num_bins))))
    rt.launch(kernel, geometry, keys.ptr, *scalars, 0 if sample is None else sample.ptr,
              choice.ptr)


def auto_choice_probe(rt: Runtime, keys: Keys,
                      num_bins: int) -> tuple[np.ndarray, tuple[tuple[int, int], ...]]:
    """What auto's choosing kernel reads and decides for these keys, for the
    conformance suite to judge against the keys and the host's rule
    (policy.auto_choice): (the sampled bins, SAMPLE_RUNS x WARP; one (AUTO_*
    code, shared_bins) per shared_bins it was told). It is told the layout's
    shared_bins, as auto's launch tells it, then each of policy.choice_edges
    for the bins it sampled: there the rule's border between shared and
    global bins falls on the sample's hot bin, on any device."""
    sample = rt.empty(SAMPLE_RUNS * WARP, np.uint64)
    choice = rt.empty(1, np.uint32)

    def choose(shared_bins: int, into: DeviceArray | None) -> tuple[int, int]:
        choose_on_device(rt, keys, num_bins, shared_bins, choice, into)
        return int(rt.copy_to_host(choice.ptr, np.empty(1, np.uint32))[0]), shared_bins

    verdicts = [choose(auto_shared_bins(rt, num_bins), sample)]
    bins = rt.copy_to_host(sample.ptr, np.empty(SAMPLE_RUNS * WARP, np.uint64))
    for edge in choice_edges(bins, num_bins):
        if edge != verdicts[0][1]:
            verdicts.append(choose(edge, None))
    return bins.reshape(SAMPLE_RUNS, WARP), tuple(verdicts)


AUTO_FAST_LABEL = "auto -> fast: "


def auto_lane_plan(rt: Runtime, keys: Keys, num_bins: int,
                   policy: AutoPolicy = DEFAULT_POLICY):
    """auto's whole launch for this shape where it is the fast kernel alone
    (no sample, no gate; fewer than 2^32 bins): fast_plan's plan, which the
    compiled lane (histkit.gpu._lane) runs as auto_histogram would; None
    where auto does more."""
    if num_bins >= FAST_BINS_LIMIT or policy.samples(keys.n, num_bins):
        return None
    return fast_plan(rt, keys, num_bins, False, None, None, AUTO_FAST_LABEL)


def auto_histogram(rt: Runtime, keys: Keys, num_bins: int, hist: DeviceArray,
                   first_bad: DeviceArray, grid: int | None = None,
                   policy: AutoPolicy = DEFAULT_POLICY) -> Geometry:
    """method="auto": the fastest exact kernel for this input.

    Below PARTITION_MIN_BINS bins (or keys), the fast kernel. Above, a sample
    of the keys picks the kernel on the device (choose_on_device; docs/performance.md
    has the measurements behind the rule): each candidate's kernels are
    launched gated by that choice, so only the chosen ones do any work, and
    the host never waits (a call can be captured in a CUDA graph).
    """
    if not policy.samples(keys.n, num_bins):
        return fast_launch(rt, keys, num_bins, hist, first_bad, False, grid, None,
                           AUTO_FAST_LABEL)
    shared_bins = auto_shared_bins(rt, num_bins)
    choice = rt.empty(1, np.uint32)  # freed on the stream, after the gated kernels
    choose_on_device(rt, keys, num_bins, shared_bins, choice)
    # The partitioned candidate first: its first pass is queued right behind
    # the choice, so on uniform keys (its usual pick) the GPU reads the keys
    # while the host queues the rest. It zeroes hist, and the fast
    # candidates, queued after it, add into that.
    partitioned = partitioned_histogram(rt, keys, num_bins, hist, first_bad, grid,
                                         gate=Gate(choice.ptr, contract.AUTO_PARTITIONED))
    fast = fast_launch(rt, keys, num_bins, hist, first_bad, False, grid, None,
                       gate=Gate(choice.ptr, contract.AUTO_FAST))
    fast_launch(rt, keys, num_bins, hist, first_bad, True, grid, None,
                gate=Gate(choice.ptr, contract.AUTO_FAST_HOLD))
    return Geometry(f"auto -> chosen on the device: {fast.kernel} (HOLD_RUNS=0|1) | "
                    f"{partitioned.kernel}", partitioned.grid, partitioned.block,
                    partitioned.shared_bytes)
