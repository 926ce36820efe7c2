"""THE kernel table: one row per kernel histkit runs.

Each row says which ``cuda/`` source it compiles, its entry points, the
compile variants it can be built with, how it is launched, the rule (kind)
that judges it, and which public call it serves. Everything else reads this
table: ``histkit.gpu.api`` (the ``method=`` names), the conformance runner
(one column per row and variant), the mutation harness (which rows a mutated
file reaches), the NVRTC compile tests and the check that meson ships every
source. A user's kernel (``histkit check``) is judged as one more row of a
kind listed in ``KINDS``.

Launch signatures, by kind:

- histogram, racy-histogram, wave:
  ``run(rt, keys, num_bins, hist, first_bad, grid=None, **options) -> Geometry``
- privatized: the same plus ``atomics=`` (a one-word device counter, or None)
- scan: ``run(rt, counts_ptr, n, out_ptr, keep_alive, **options) -> [Geometry]``
- sort, stable-sort: ``run(rt, keys, num_bins, out_keys, out_index, first_bad,
  keep_alive, grid=None, between=None, index_dtype=np.int64) -> [Geometry]``; ``between()`` runs
  after the count and before the scatter, which runs unless it returns False
  (the conformance runner stops there when the count's bad-key verdict is
  wrong). The scatters skip bad keys themselves: the API does not stop.
- radix-sort: ``run(rt, keys, out_keys, out_index, keep_alive, grid=None,
  values=None, index_dtype=np.int64) -> [Geometry]``; values = (values_ptr, itemsize, out_ptr) moves
  one value per key along with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from histkit.gpu import contract, policy
from histkit.gpu.launch import (
    binning,
    histogram,
    partitioned,
    rank,
    resident,
    scan,
    sort,
    weighted,
)

# The rule each kind is judged by (histkit.conformance.checks implements them).
KINDS = {
    "histogram": "equal to oracles.histogram, bin by bin",
    "racy-histogram": "every bin <= oracles.histogram and no bin with keys left at 0; "
                      "the lost updates are reported",
    "wave": "equal to oracles.naive_wave_histogram for the launch's warp size",
    "privatized": "equal to oracles.histogram, and the global atomics counted equal "
                  "oracles.privatized_histogram's for the same geometry",
    "scan": "equal to oracles.exclusive_scan",
    "sort": "keys sorted, original indices a permutation; stability violations reported",
    "stable-sort": "keys and original indices equal to oracles.counting_sort",
    "radix-sort": "full-width keys (signed keys in signed order): keys, original indices "
                  "and the values moved with them equal to oracles.radix_sort",
}
# Kinds whose kernels read keys (a scan reads counts): bad-key cases judge them.
TAKES_KEYS = frozenset(KINDS) - {"scan"}
# Kinds that sort full-width keys: there is no num_bins, so every key is valid
# (their rule has no bad key), and they alone take the full-width cases.
FULL_WIDTH_KINDS = frozenset({"radix-sort"})
# Kinds whose outputs are the keys sorted (N keys and N indices, not K counts).
SORTING_KINDS = frozenset({"sort", "stable-sort", "radix-sort"})


@dataclass(frozen=True)
class Variant:
    """One way a row is run: launcher options (and the compile it implies)."""

    name: str = ""
    options: dict = field(default_factory=dict)
    note: str = ""


DEFAULT = Variant()
# The sorts' int32 original indices (index_dtype=np.int32): their own builds.
INT32_INDEX = Variant("int32-index", {"index_dtype": np.dtype(np.int32)},
                      "int32 original indices (index_dtype=np.int32)")
INT32_INDEX_BUILD = {"INDEX_T": "int"}
# resident_sort's tiles: the smaller ones at small N, and its largest.
RESIDENT_TILE_BUILDS = tuple(resident.tile_defines(items)
                             for items in (*contract.RESIDENT_SMALL_TILE_ITEMS,
                                           contract.RESIDENT_TILE_ITEMS))


@dataclass(frozen=True)
class Kernel:
    row: str
    kind: str
    source: str
    # Every extern "C" kernel of `source` the row launches (generated mutants
    # of a line only run the rows whose entries reach it: list them all).
    entries: tuple[str, ...]
    run: Callable
    # Compile-time define sets the launcher can build (besides KEY_T and the
    # contract): the NVRTC tests and the mutation harness compile each.
    builds: tuple[dict[str, str], ...] = ({},)
    variants: tuple[Variant, ...] = (DEFAULT,)
    # Other sources its launches compile (the sort counts with atomic_histogram.cu).
    uses: tuple[str, ...] = ()
    # The public call it serves: ("histogram", method) or ("counting_sort", stable) ...
    serves: tuple | None = None
    takes_grid: bool = True  # False: the geometry is fixed (one warp; one block per tile)
    count_dtype: str = "uint64"  # the counters a histogram kernel writes
    # Bad keys are skipped (never counted, never written), so results on the
    # valid keys are exact and are judged on bad-key inputs too: histkit's
    # kernels promise it (check=False hands those results back); a user's
    # kernel under the ABI does not.
    skips_bad_keys: bool = True
    # Bad keys are flagged on the verdict board too (common.cuh's
    # hk_note_bad_key; histkit.gpu.verdict), which checked calls rely on:
    # histkit's kernels do; a user's kernel under the ABI need not.
    publishes_verdict: bool = True
    # Builds of the other sources (uses) its launches make besides their
    # defaults: (source, defines) pairs (auto's gated builds).
    used_builds: tuple[tuple[str, dict[str, str]], ...] = ()
    # What the kernel decides that no output shows: (rt, keys, num_bins) ->
    # (auto's key sample, SAMPLE_RUNS x WARP bins; (the AUTO_* code its
    # choosing kernel wrote, the shared_bins it was told) for each shared_bins
    # it was told). Every pick is exact, so a wrong sample or a wrong choice
    # is visible only here.
    choice_probe: Callable | None = None
    # When its launcher may refuse a case (UnsupportedShape), as a rule of its
    # own: (rt, n, num_bins, dtype, options) -> True where refusing is right.
    # The conformance runner FAILs every other refusal: a launcher that
    # refuses what it should run would otherwise pass as a column of skips.
    # None: it runs every case it is given.
    may_refuse: Callable | None = None
    # The public call's compiled lane (histkit.gpu._lane): (rt, keys,
    # num_bins) -> the plan of its one fast-kernel launch where the launcher
    # makes just that launch for this shape, else None. None: no lane.
    lane_plan: Callable | None = None

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.source, *self.uses)

    def columns(self) -> list[tuple[str, Variant]]:
        return [(f"{self.row}/{v.name}" if v.name else self.row, v) for v in self.variants]


def _one_warp(rt, keys, num_bins, hist, first_bad, grid=None, lanes=32):
    return histogram.naive_histogram_one_warp(rt, keys, num_bins, hist, first_bad, lanes)


def _privatized(rt, keys, num_bins, hist, first_bad, grid=None, atomics=None):
    return histogram.privatized_histogram(rt, keys, num_bins, hist, first_bad,
                                          atomics_issued=atomics, grid=grid)


def _stable_sort(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive, grid=None,
                 between=None, index_dtype=np.int64):
    plan = sort.stable_count(rt, keys, num_bins, first_bad.ptr, keep_alive, grid, index_dtype)
    if between is not None and between() is False:
        return [plan.shape.histogram]
    return [plan.shape.histogram, *sort.stable_scatter(rt, keys, plan, out_keys, out_index)]


def _resident_sort(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive, grid=None,
                   between=None, index_dtype=np.int64, full_tiles=False):
    geometries = resident.resident_sort(rt, keys, num_bins, out_keys, out_index, first_bad.ptr,
                                        keep_alive, index_dtype, full_tiles=full_tiles)
    if between is not None:  # one launch: the count's verdict is judged after it
        between()
    return geometries


def _rank_sort(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive, grid=None,
               between=None, index_dtype=np.int64):
    geometry = rank.rank_sort(rt, keys, num_bins, out_keys, out_index, first_bad.ptr,
                              index_dtype)
    if between is not None:  # one launch: the count's verdict is judged after it
        between()
    return [geometry]


def stable_sort_path(rt, keys, num_bins, grid=None, index_dtype=np.int64) -> str:
    """What gpu.counting_sort(stable=True) runs for these keys: "rank"
    (rank_sort, for the smallest inputs when no grid is forced:
    policy.rank_sort_wins), "resident" (one resident launch, when every tile
    fits on the GPU at once and no grid is forced) or "onesweep" (the passes)."""
    if grid is None and rank.rank_fits(keys.n, num_bins) and policy.rank_sort_wins(keys.n,
                                                                                  num_bins):
        return "rank"
    if grid is None and resident.resident_fits(rt, keys, num_bins, index_dtype):
        return "resident"
    return "onesweep"


def _stable_sort_choice(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive,
                        grid=None, between=None, index_dtype=np.int64):
    """gpu.counting_sort(stable=True): the launcher stable_sort_path names."""
    run = {"rank": _rank_sort, "resident": _resident_sort, "onesweep": _stable_sort}[
        stable_sort_path(rt, keys, num_bins, grid, index_dtype)]
    return run(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive, grid, between,
               index_dtype)


def _atomic_cursor_sort(rt, keys, num_bins, out_keys, out_index, first_bad, keep_alive,
                        grid=None, between=None, index_dtype=np.int64):
    policy.check_index_dtype(keys.n, index_dtype)
    cursor, geometries = sort.atomic_cursor_count(rt, keys, num_bins, first_bad, keep_alive,
                                                  grid)
    if between is not None and between() is False:
        return geometries
    return geometries + [sort.scatter_atomic_cursor(rt, keys, num_bins, cursor, out_keys,
                                                    out_index, grid, index_dtype)]


def _radix_sort(rt, keys, out_keys, out_index, keep_alive, grid=None, values=None,
                index_dtype=np.int64):
    geometries = sort.radix_sort(rt, keys, out_keys, out_index, keep_alive, grid, index_dtype)
    if values is not None:
        values_ptr, itemsize, out_ptr = values
        geometries.append(sort.gather_values(rt, values_ptr, out_index, keys.n, itemsize,
                                             out_ptr, grid, index_dtype))
    return geometries


def bins_past_shared_memory(bytes_per_bin: int) -> Callable:
    """A privatized kernel may refuse K bins of bytes_per_bin that do not fit a
    block's shared memory."""
    def rule(rt, n, num_bins, dtype, options) -> bool:
        return num_bins * bytes_per_bin > rt.max_shared_per_block
    return rule


def _bins_past_partitions(rt, n, num_bins, dtype, options) -> bool:
    """The partitioned kernel takes up to MAX_PARTS partitions of 2^low_bits bins."""
    return num_bins > (1 << options.get("low_bits", contract.PART_LOW_BITS)) * contract.MAX_PARTS


def _tiles_past_one_block_per_sm(rt, n, num_bins, dtype, options) -> bool:
    """resident_sort needs every tile resident at once: one block per SM always
    fits, so it must take an SM count of its largest tiles (past that, the
    occupancy decides), and it needs cooperative launches."""
    dtype = np.dtype(dtype)
    largest = contract.resident_tile_items(dtype.itemsize)
    return not rt.cooperative or n > rt.sm_count * policy.tile_keys(dtype, largest)


def _past_rank_sort(rt, n, num_bins, dtype, options) -> bool:
    """rank_sort takes up to RANK_MAX_KEYS keys (and bins that compare as 32 bits)."""
    return not rank.rank_fits(n, num_bins)


def _fast_builds() -> tuple[dict[str, str], ...]:
    """Representative builds: every copy count the layout picks compiles alike;
    16-bit counters come in one copy."""
    return tuple({"COPIES": copies, "COALESCED": coalesced, "HOLD_RUNS": hold,
                  "NARROW_COUNTERS": narrow}
                 for copies, coalesced, hold, narrow in (
                     ("32", "0", "0", "0"), ("32", "0", "1", "0"), ("4", "0", "0", "0"),
                     ("1", "1", "0", "0"), ("1", "1", "1", "0"), ("1", "0", "0", "1"),
                     ("1", "1", "1", "1")))


# The fast kernel at the bin counts auto samples (2^17 ... 2^21): one copy,
# most bins global, the coalesced walk.
_AUTO_FAST_BUILD = {"COPIES": "1", "COALESCED": "1", "NARROW_COUNTERS": "0"}


def _gated(choice: int) -> dict[str, str]:
    """A build gated by auto's choice (launch.common.Gate)."""
    return {"HK_GATE": str(choice)}


KERNELS: tuple[Kernel, ...] = (
    Kernel("naive-one-warp", "wave", "naive_histogram.cu", ("naive_histogram_one_warp",),
           _one_warp, takes_grid=False,
           variants=(DEFAULT, Variant("7-lanes", {"lanes": 7}, "waves narrower than a warp"))),
    Kernel("naive-grid", "racy-histogram", "naive_histogram.cu", ("naive_histogram_grid",),
           histogram.naive_histogram_grid, serves=("histogram", "naive")),
    Kernel("atomic", "histogram", "atomic_histogram.cu", ("atomic_histogram",),
           histogram.atomic_histogram, serves=("histogram", "atomic")),
    # The plain build is what users run; the counting build is the 7.2 probe.
    Kernel("privatized", "histogram", "privatized_histogram.cu", ("privatized_histogram",),
           _privatized, builds=({}, {"COUNT_GLOBAL_ATOMICS": "1"}),
           serves=("histogram", "privatized"), may_refuse=bins_past_shared_memory(4)),
    Kernel("privatized-counted", "privatized", "privatized_histogram.cu",
           ("privatized_histogram",), _privatized, builds=({"COUNT_GLOBAL_ATOMICS": "1"},),
           may_refuse=bins_past_shared_memory(4)),
    Kernel("fast", "histogram", "fast_histogram.cu", ("fast_histogram",),
           histogram.fast_histogram, builds=_fast_builds(), variants=(
               DEFAULT,
               Variant("hold", {"hold_runs": True}, "HOLD_RUNS: runs of a global bin held"),
               Variant("split", {"shared_share": 0.6}, "40% of the bins global: vector walk"),
               Variant("split-hold", {"shared_share": 0.6, "hold_runs": True}),
               Variant("coalesced", {"shared_share": 0.25}, "75% global: COALESCED walk"),
               Variant("coalesced-hold", {"shared_share": 0.25, "hold_runs": True}),
               Variant("narrow", {"narrow": True}, "16-bit shared counters at any K"),
           )),
    Kernel("partitioned", "histogram", "partitioned_histogram.cu",
           ("partition_tiles", "count_partitions"), partitioned.partitioned_histogram,
           uses=("exclusive_scan.cu",), builds=({}, {"PART_LOW_BITS": "6"}),
           serves=("histogram", "partitioned"), may_refuse=_bins_past_partitions, variants=(
               DEFAULT,
               Variant("64-bin-parts", {"low_bits": 6}, "many partitions at few bins"),
           )),
    # Above PARTITION_MIN_BINS bins and keys, its kernels choose on the device:
    # every candidate launched gated by the choice (common.cuh's HK_GATE).
    Kernel("auto", "histogram", "partitioned_histogram.cu",
           ("auto_choice", "partition_tiles", "count_partitions"),
           partitioned.auto_histogram, uses=("fast_histogram.cu", "exclusive_scan.cu"),
           builds=({}, _gated(contract.AUTO_PARTITIONED)),
           used_builds=(("fast_histogram.cu", {**_AUTO_FAST_BUILD, "HOLD_RUNS": "0",
                                               **_gated(contract.AUTO_FAST)}),
                        ("fast_histogram.cu", {**_AUTO_FAST_BUILD, "HOLD_RUNS": "1",
                                               **_gated(contract.AUTO_FAST_HOLD)}),
                        ("exclusive_scan.cu", _gated(contract.AUTO_PARTITIONED))),
           serves=("histogram", "auto"), choice_probe=partitioned.auto_choice_probe,
           lane_plan=partitioned.auto_lane_plan, variants=(
               DEFAULT,
               Variant("sampled", {"policy": policy.ALWAYS_SAMPLE},
                       "samples at every size: each branch of the choice is reached"),
           )),
    Kernel("exclusive-scan", "scan", "exclusive_scan.cu", ("scan_tile_sums", "scan_tiles"),
           scan.exclusive_scan, takes_grid=False, serves=("exclusive_scan",),
           builds=({}, {"SCAN_THREADS": "64", "SCAN_ITEMS": "2"}), variants=(
               DEFAULT,
               Variant("small-tiles", {"threads": 64, "items": 2},
                       "tiles of 128: the recursion at small n"),
           )),
    Kernel("sort-stable", "stable-sort", "counting_sort.cu",
           ("digit_histograms", "onesweep_scatter"), _stable_sort,
           builds=({}, INT32_INDEX_BUILD), variants=(DEFAULT, INT32_INDEX)),
    # The same passes in one cooperative launch, for inputs whose tiles all fit
    # on the GPU at once (one block per tile: no grid can be forced).
    Kernel("sort-stable-resident", "stable-sort", "counting_sort.cu", ("resident_sort",),
           _resident_sort, takes_grid=False, may_refuse=_tiles_past_one_block_per_sm,
           builds=({}, INT32_INDEX_BUILD, *RESIDENT_TILE_BUILDS),
           variants=(DEFAULT, INT32_INDEX,
                     Variant("full-tiles", {"full_tiles": True},
                             "its largest tile at every N (small N takes smaller ones)"))),
    # The smallest inputs: every key compared with every other, one launch.
    Kernel("sort-stable-rank", "stable-sort", "counting_sort.cu", ("rank_sort",), _rank_sort,
           takes_grid=False, may_refuse=_past_rank_sort, builds=({}, INT32_INDEX_BUILD),
           variants=(DEFAULT, INT32_INDEX)),
    # What gpu.counting_sort(stable=True) runs: rank_sort for the smallest
    # inputs (policy.rank_sort_wins), resident when it fits, else onesweep.
    Kernel("sort-stable-auto", "stable-sort", "counting_sort.cu",
           ("rank_sort", "resident_sort", "digit_histograms", "onesweep_scatter"),
           _stable_sort_choice,
           serves=("counting_sort", True),
           builds=({}, INT32_INDEX_BUILD, *RESIDENT_TILE_BUILDS)),
    Kernel("sort-atomic-cursor", "sort", "counting_sort.cu", ("scatter_atomic_cursor",),
           _atomic_cursor_sort, uses=("atomic_histogram.cu", "exclusive_scan.cu"),
           serves=("counting_sort", False), builds=({}, INT32_INDEX_BUILD),
           variants=(DEFAULT, INT32_INDEX)),
    # Stable passes over every byte of full-width keys (RADIX_KEYS), onesweep-style.
    Kernel("radix-sort", "radix-sort", "counting_sort.cu",
           ("digit_histograms", "onesweep_scatter", "gather_values"), _radix_sort,
           uses=("gather_values.cu",),
           builds=({"RADIX_KEYS": "1"}, {"RADIX_KEYS": "1", **INT32_INDEX_BUILD}),
           serves=("radix_sort",), variants=(DEFAULT, INT32_INDEX)),
)


def _binning_builds() -> tuple[dict[str, str], ...]:
    """Representative builds of bin_histogram.cu: each rule and precision
    path, each search type, and the counters' layouts (the sample type is
    part of each build: the compile tests' KEY_T is an integer)."""
    f32 = {"KEY_T": "float", "SAMPLE_FLOAT": "1"}
    f64 = {"KEY_T": "double", "SAMPLE_FLOAT": "1"}
    f16 = {"KEY_T": "unsigned short", "SAMPLE_FLOAT": "1", "SAMPLE_HALF": "1"}
    even = {"BIN_RULE": "0", "COPIES": "32"}
    edges = {"BIN_RULE": "1", "COPIES": "32"}
    return (
        {**even, **f32, "EDGE_BITS": "32", "DIFF_BITS": "32", "QUOT_BITS": "32"},
        {**even, **f32, "EDGE_BITS": "32", "DIFF_BITS": "32", "QUOT_BITS": "64",
         "ESTIMATE_WITHIN_ONE": "1"},
        {**even, **f32, "EDGE_BITS": "32", "DIFF_BITS": "32", "QUOT_BITS": "64",
         "ESTIMATE_WITHIN_ONE": "1", "FAST_ESTIMATE": "1", "EDGES_SHARED": "1"},
        {**even, **f32, "EDGE_BITS": "32", "DIFF_BITS": "32", "QUOT_BITS": "64",
         "ESTIMATE_WITHIN_ONE": "1", "FAST_ESTIMATE": "1", "FLOOR_IS_THE_BIN": "1",
         "EDGES_SHARED": "1"},
        {**even, **f64, "ESTIMATE_WITHIN_ONE": "1"},
        {**even, **f64, "ESTIMATE_WITHIN_ONE": "1", "FAST_ESTIMATE": "1"},
        {**even, **f64, "ESTIMATE_WITHIN_ONE": "1", "FAST_ESTIMATE": "1", "FLOOR_IS_THE_BIN": "1"},
        {**even, **f64},
        {**even, **f16, "EDGE_BITS": "16", "DIFF_BITS": "16", "QUOT_BITS": "16"},
        {**even, **f32, "EDGE_BITS": "32", "DIFF_BITS": "64", "QUOT_BITS": "64"},
        {**even, "SAMPLE_FLOAT": "0"},
        {**edges, **f32},
        {**edges, **f64, "EDGES_NEAR_EVEN": "1"},
        {**edges, **f32, "EDGES_NEAR_EVEN": "1", "FAST_ESTIMATE": "1", "EDGES_SHARED": "1"},
        {**edges, **f32, "EDGES_NEAR_EVEN": "1", "FAST_ESTIMATE": "1", "FLOOR_IS_THE_BIN": "1"},
        {**even, **f32, "EDGE_BITS": "32", "DIFF_BITS": "32", "QUOT_BITS": "64",
         "ESTIMATE_WITHIN_ONE": "1", "FAST_ESTIMATE": "1", "EDGES_COMPUTED": "1", "COPIES": "1",
         "NARROW_COUNTERS": "1"},
        {**edges, **f64, "EDGES_NEAR_EVEN": "1", "FAST_ESTIMATE": "1", "EDGES_COMPUTED": "1"},
        {**edges, "SAMPLE_FLOAT": "0", "SEARCH_T": "long long"},
        {**edges, "KEY_T": "unsigned long long", "SAMPLE_FLOAT": "0", "SAMPLE_SIGNED": "0",
         "SEARCH_T": "unsigned long long"},
        {**even, **f32, "COPIES": "1", "COALESCED": "1"},
        {**even, **f32, "COPIES": "1", "NARROW_COUNTERS": "1"},
    )


# Real-valued samples into bins (gpu.bin_histogram), judged by
# oracles.bin_histogram on histkit.conformance.binning_cases (their own
# judge: these rows take samples and a rule, not integer keys).
# Launch signature: run(rt, samples, rule, hist, first_bad, edges, grid=None,
# **options) -> Geometry (histkit.gpu.launch.binning).
BINNING_KIND = "bin-histogram"
BINNING_KINDS = {
    BINNING_KIND: "counts equal to oracles.bin_histogram's (np.histogram's rule: numpy's "
                  "edges, the last bin closed), bin for bin",
    "bin-histogram-half-open": "counts equal to oracles.bin_histogram(..., "
                               "right_closed_last=False) (CUB's rule: every bin half-open)",
}
# Weighted histograms (oracles.histogram with weights): judged by
# histkit.conformance.check_weighted on histkit.conformance.weighted_cases.
WEIGHTED_KIND = "weighted-histogram"
WEIGHTED_KINDS = {WEIGHTED_KIND: "each bin equal to oracles.histogram(keys, num_bins, weights): "
                                 "the exact sum of its weights rounded once to float64 "
                                 "(math.fsum's value; NaN equal to NaN)"}
# Every rule histkit check judges by.
CHECK_KINDS = {**KINDS, **BINNING_KINDS, **WEIGHTED_KINDS}
BINNING_KERNELS: tuple[Kernel, ...] = (
    Kernel("bin-histogram", BINNING_KIND, "bin_histogram.cu", ("bin_histogram", "bin_indices"),
           binning.bin_histogram, builds=_binning_builds(), serves=("bin_histogram",),
           variants=(
               DEFAULT,
               Variant("split", {"shared_share": 0.6}, "40% of the counters global"),
               Variant("coalesced", {"shared_share": 0.25}, "75% global: COALESCED walk"),
               Variant("narrow", {"narrow": True}, "16-bit shared counters"),
               Variant("grid-1", {"grid": 1}, "one block walks every sample"),
               Variant("numpy-steps", {"numpy_steps": True},
                       "numpy's steps even where the bracketing walk gives its bins"),
               Variant("edges-read", {"estimate_alone": False},
                       "the bracketing walk reads the edges even where the estimate "
                       "alone names the bin"),
               Variant("edges-computed", {"computed_edges": True},
                       "the bracketing walk computes np.linspace's edges even where "
                       "shared memory holds them"),
           )),
)


def binning_kernel() -> Kernel:
    """The row gpu.bin_histogram runs."""
    return BINNING_KERNELS[0]


def _weighted_builds() -> tuple[dict[str, str], ...]:
    """Each weight type in each shared-memory layout, with runs and one or
    32 copies, and one build without runs; KEY_T is the compile tests'."""
    builds = []
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        for layout, copies in (("rows", 32), ("rows", 1), ("window", 8), ("global", 1)):
            plan = weighted.shared_plan(2**30, dtype, 1, layout, copies)
            builds.append(weighted.defines(dtype, plan, True, np.dtype(np.int32)))
    plan = weighted.shared_plan(2**30, np.dtype(np.float32), 1, "rows", 1)
    builds.append(weighted.defines(np.dtype(np.float32), plan, False, np.dtype(np.int32)))
    builds.append(weighted.defines(np.dtype(np.float32), plan, True, np.dtype(np.int32), 4096))
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):  # runs of one weight
        plan = weighted.shared_plan(2**30, dtype, 1, "rows", 32)
        builds.append(weighted.defines(dtype, plan, True, np.dtype(np.int32),
                                       num_bins=contract.LONE_RUN_FROM_BINS))
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):  # keys partitioned
        for copies in (32, 1):
            bits = weighted.partition_bits(2**30, dtype, 2**16, 3, copies)
            plan = weighted.shared_plan(2**30, dtype, 1 << bits, "auto", copies)
            builds.append({**weighted.defines(dtype, plan, weighted.runs_for(plan),
                                              np.dtype(np.int32), num_bins=1 << bits),
                           "PART_BITS": str(bits)})
    for build in builds:
        build.pop("KEY_T")
    return tuple(builds)


# Weighted histograms with exact sums (gpu.histogram with weights=), judged by
# oracles.histogram(keys, num_bins, weights) on
# histkit.conformance.weighted_cases (their own judge,
# histkit.conformance.weighted). Launch signature: run(rt, keys, weights,
# num_bins, sums, first_bad, grid=None, **options) -> [Geometry]
# (histkit.gpu.launch.weighted).
WEIGHTED_KERNELS: tuple[Kernel, ...] = (
    Kernel("weighted", WEIGHTED_KIND, weighted.SOURCE,
           ("accumulate_weights", "count_parts", "scatter_parts", "accumulate_parts",
            "carry_rows", "round_rows"), weighted.weighted_histogram,
           builds=_weighted_builds(), serves=("weighted_histogram",), variants=(
               DEFAULT,
               Variant("window", {"layout": "window"},
                       "a window of digits in shared memory, the rest global"),
               Variant("global", {"layout": "global"}, "every add to the global rows"),
               Variant("no-runs", {"runs": False}, "every weight added on its own"),
               Variant("one-copy", {"copies": 1},
                       "one shared copy: lanes of a bin collide, runs in registers"),
               Variant("long-runs", {"min_span": 4096, "runs": True},
                       "each warp walks 4096 weights or more: runs at small N"),
               Variant("grid-1", {"grid": 1}, "one block adds every weight"),
               Variant("launches", {"launch_weights": 4096},
                       "4096 weights a launch: the rows carried between launches"),
               Variant("global-launches", {"layout": "global", "launch_weights": 4096},
                       "every add global, small ones whole, rows carried between launches"),
               Variant("partitioned", {"layout": "partitioned", "part_bits": 3},
                       "keys partitioned by bin (8 bins a partition), each summed in shared "
                       "memory"),
               Variant("partitioned-runs", {"layout": "partitioned", "part_bits": 3,
                                            "copies": 1},
                       "keys partitioned by bin, one shared copy, runs in registers"),
               Variant("partitioned-launches", {"layout": "partitioned", "part_bits": 3,
                                                "grid": 1, "launch_weights": 4096},
                       "keys partitioned by bin, one block a pass, 4096 weights a launch"),
               Variant("sampled", {"layout": "sampled", "part_bits": 3},
                       "auto's choice between every add global and keys partitioned by bin, "
                       "made on the device from a sample of the keys, at any size"),
           )),
)


def weighted_kernel() -> Kernel:
    """The row gpu.histogram(..., weights=) runs."""
    return WEIGHTED_KERNELS[0]


# Sources compiled by nothing the suite judges (the benchmark's roofline).
BENCH_ONLY_SOURCES = ("roofline.cu",)
HEADERS = ("common.cuh", "counting.cuh", "partitions.cuh", "schedule_skew.cuh")


def by_row(row: str) -> Kernel:
    for kernel in KERNELS:
        if kernel.row == row:
            return kernel
    raise KeyError(f"no kernel row {row!r}; rows: {[k.row for k in KERNELS]}")


@cache
def serving(call: str, choice=None) -> Kernel:
    for kernel in KERNELS:
        if kernel.serves is not None and kernel.serves[0] == call and (
                len(kernel.serves) == 1 or kernel.serves[1] == choice):
            return kernel
    raise KeyError(f"no kernel serves {call}({choice!r})")


def methods(call: str = "histogram") -> tuple:
    return tuple(k.serves[1] for k in KERNELS if k.serves and k.serves[0] == call)


def rows_reaching(source: str, table: tuple[Kernel, ...] | None = None) -> list[Kernel]:
    """Rows of `table` (default: the integer-key table) whose launches compile
    `source` (a header: the rows whose sources include it)."""
    table = KERNELS if table is None else table
    if source in HEADERS:
        from histkit.gpu.compiler import files_of

        return [k for k in table if any(source in files_of(s) for s in k.sources)]
    return [k for k in table if source in k.sources]


def all_rows_reaching(source: str) -> list[Kernel]:
    """Rows of every table (integer keys, binning, weighted) that compile `source`."""
    return [k for table in (KERNELS, BINNING_KERNELS, WEIGHTED_KERNELS)
            for k in rows_reaching(source, table)]


def builds_by_source() -> dict[str, list[dict[str, str]]]:
    """Every .cu source the kernels compile, with each define set their
    launchers build it with (a source only used by another row: its defaults)."""
    found: dict[str, list[dict[str, str]]] = {}
    for kernel in KERNELS + BINNING_KERNELS + WEIGHTED_KERNELS:
        for build in kernel.builds:
            if build not in found.setdefault(kernel.source, []):
                found[kernel.source].append(build)
        for used in kernel.uses:
            found.setdefault(used, [{}])
        for used, build in kernel.used_builds:
            if build not in found[used]:
                found[used].append(build)
    return found


def sources() -> list[str]:
    """Every file of cuda/ histkit ships: the kernels' sources, headers, bench-only ones."""
    found = dict.fromkeys(s for k in KERNELS + BINNING_KERNELS + WEIGHTED_KERNELS
                          for s in k.sources)
    return sorted(found) + list(BENCH_ONLY_SOURCES) + list(HEADERS)
