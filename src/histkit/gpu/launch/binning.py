"""Real-valued samples into bins (bin_histogram.cu): numpy's rule for one call
as the kernel takes it, and its launch."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from histkit.gpu import contract
from histkit.gpu.contract import FAST_BLOCK
from histkit.gpu.device import DeviceArray, Runtime
from histkit.gpu.errors import UnsupportedShape
from histkit.gpu.geometry import Geometry
from histkit.gpu.launch.common import Keys, blocks_for, zero_counts
from histkit.gpu.launch.histogram import fast_blocks, vector_head
from histkit.gpu.launch.weighted import Weights, weighted_histogram
from histkit.gpu.policy import FastLayout, fast_layout
from histkit.oracles._bin_rule import EvenRule
from histkit.oracles._binned import TALLIES  # counters after the bins: under, over, NaN
from histkit.oracles._estimate import (
    FLOOR_IS_THE_BIN,
    bracket_estimate_within_one_bin,
    estimate_margin,
    kept_within_edges,
    numpy_estimate_within_one_bin,
)

# Bins and tallies are indexed in 32 bits (the fast kernel's shared counters and
# the bracketing walk).
MAX_COUNTERS = 2**32 - 1
# bin_histogram.cu's flags argument.
CLOSED_LAST, ANY_LOW, ANY_HIGH = 1, 2, 4
# The edges go to shared memory, after the counters, up to this many bytes
# (4096 float64 edges): past it the counters keep the room, and the edges are
# read through the read-only cache.
EDGES_SHARED_MAX = 32 * 1024
# The edge search's type in C, by the dtype numpy compares samples and edges in.
SEARCH_C_TYPES = {np.dtype(np.float64): "double", np.dtype(np.int64): "long long",
                  np.dtype(np.uint64): "unsigned long long"}


@dataclass(frozen=True)
class KernelRule:
    """numpy's rule for one call, as bin_histogram.cu takes it."""

    num_bins: int
    edges: np.ndarray  # num_bins + 1, in the type the kernel compares them in
    defines: dict
    flags: int
    lo: float = 0.0
    width: float = 0.0
    scale: float = 0.0
    keep_low: int = 0  # bits of the lowest kept sample value (a double for float samples)
    keep_high: int = 0
    # The estimate alone names the bin where it lies further than this from
    # its nearest integer (oracles._estimate.estimate_margin; FAST_ESTIMATE=1).
    fast: float | None = None
    # (start, step) of np.linspace's formula, which every edge but the last
    # follows (linspace_formula; EDGES_COMPUTED=1 computes them), or None.
    linspace: tuple[float, float] | None = None

    @property
    def may_fail(self) -> bool:
        """Whether numpy's own code may fail on some kept sample (its estimate
        lands outside the bins), so the kernel may note one in first_bad: only
        for even bins where numpy's estimate is not bounded within one bin of
        the sample's (ESTIMATE_WITHIN_ONE=0). Explicit edges are searched, and
        a search always ends in a bin or a tally."""
        return self.defines["BIN_RULE"] == "0" and self.defines["ESTIMATE_WITHIN_ONE"] != "1"


def _double_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _keep_bits(value, sample_dtype: np.dtype, any_value: bool) -> int:
    """A kept-interval bound as bin_histogram.cu reads it: double bits for a
    float sample (NaN where no value passes), the integer's 64 bits otherwise."""
    if sample_dtype.kind == "f":
        return _double_bits(float(value) if any_value else float("nan"))
    return int(value) % 2**64 if any_value else 0


def even_kernel_rule(rule: EvenRule, sample_dtype: np.dtype, closed_last: bool) -> KernelRule:
    """The kernel's form of numpy's even-bin rule (oracles._bin_rule.even_rule)."""
    any_low, any_high, low, high = rule.keep
    flags = (CLOSED_LAST if closed_last else 0) | (ANY_LOW if any_low else 0) | (
        ANY_HIGH if any_high else 0)
    # float16 edges are held as float32, which holds each exactly.
    edge_type = np.float64 if rule.edge_bits == 64 else np.float32
    edges = np.ascontiguousarray(rule.edges, dtype=edge_type)
    # The bracketing walk needs both: numpy's estimate within one bin (so
    # numpy's answer is the bracketing bin) and the kernel's cheap one, for
    # every sample numpy keeps.
    with np.errstate(all="ignore"):
        per_unit = float(edge_type(rule.scale / rule.width))
    within_one = kept_within_edges(rule.keep, rule.edges) and numpy_estimate_within_one_bin(
        rule.edges, rule.lo, rule.width, rule.scale, rule.diff_bits, rule.quot_bits
    ) and bracket_estimate_within_one_bin(edges, float(edge_type(rule.lo)), per_unit)
    fast = None
    if within_one and sample_dtype == edges.dtype and _keeps_every_bin(rule.keep, edges):
        fast = estimate_margin(edges, float(edge_type(rule.lo)), per_unit)
    return KernelRule(
        num_bins=len(rule.edges) - 1, edges=edges,
        defines={"BIN_RULE": "0", "EDGE_BITS": str(rule.edge_bits),
                 "DIFF_BITS": str(rule.diff_bits), "QUOT_BITS": str(rule.quot_bits),
                 "ESTIMATE_WITHIN_ONE": str(int(within_one))},
        flags=flags, lo=rule.lo, width=rule.width, scale=rule.scale,
        keep_low=_keep_bits(low, sample_dtype, any_low),
        keep_high=_keep_bits(high, sample_dtype, any_high), fast=fast,
        linspace=linspace_formula(edges, *map(float, rule.bounds)) if within_one else None)


def linspace_formula(edges: np.ndarray, start: float, stop: float) -> tuple[float, float] | None:
    """(start, step) where every edge but the last is np.linspace's
    ``(i * step + start)`` in float64, each step rounded to nearest, then
    rounded to edges.dtype, with step = (stop - start) / (len(edges) - 1):
    bin_histogram.cu then computes those edges instead of reading them
    (EDGES_COMPUTED). Checked edge by edge, so any other edges give None.

    Examples
    --------
    >>> linspace_formula(np.linspace(0.9, 1.1, 11, dtype=np.float32), 0.9, 1.1) == (
    ...     0.9, (1.1 - 0.9) / 10)
    True
    >>> linspace_formula(np.array([0.0, 1.0, 10.0]), 0.0, 10.0) is None
    True
    """
    n = len(edges) - 1
    if n < 1 or edges.dtype not in (np.float32, np.float64):
        return None
    with np.errstate(all="ignore"):
        step = (stop - start) / n
        if not (np.isfinite(start) and np.isfinite(step) and step > 0):
            return None
        made = (np.arange(n, dtype=np.float64) * step + start).astype(edges.dtype)
    return (start, step) if np.array_equal(made, edges[:-1]) else None


def _keeps_every_bin(keep, edges: np.ndarray) -> bool:
    """Whether numpy keeps every sample in [edges[0], edges[-1]) (samples of
    the edges' dtype): then a sample the estimate alone places needs no keep
    test."""
    any_low, any_high, low, high = keep
    below_top = np.nextafter(edges[-1], edges.dtype.type(-np.inf))
    return bool(any_low and any_high and low <= edges[0] and high >= below_top)


def edges_kernel_rule(search_edges: np.ndarray, closed_last: bool) -> KernelRule:
    """The kernel's form of explicit edges, already in the search's dtype
    (oracles._bin_rule.search_edges). No edges at all: no bins, and every
    sample but NaN below them, which one NaN edge gives (no value is >= it)."""
    if not len(search_edges):
        search_edges = np.array([np.nan])
    flags = CLOSED_LAST if closed_last else 0
    n = len(search_edges) - 1
    if (search_edges.dtype == np.float64 and n >= 1
            and bool(np.all(search_edges[:-1] < search_edges[1:]))):
        first, top = float(search_edges[0]), float(search_edges[-1])
        with np.errstate(all="ignore"):
            per_unit = n / (top - first)
        if bracket_estimate_within_one_bin(search_edges, first, per_unit):
            # Edges near an even grid: the bracketing walk, no search.
            return KernelRule(num_bins=n, edges=np.ascontiguousarray(search_edges),
                              defines={"BIN_RULE": "1", "SEARCH_T": "double",
                                       "EDGES_NEAR_EVEN": "1"},
                              flags=flags, lo=first, width=1.0, scale=per_unit,
                              fast=estimate_margin(search_edges, first, per_unit),
                              linspace=linspace_formula(search_edges, first, top))
    return KernelRule(num_bins=n, edges=np.ascontiguousarray(search_edges),
                      defines={"BIN_RULE": "1",
                               "SEARCH_T": SEARCH_C_TYPES[search_edges.dtype]},
                      flags=flags)


def counters_layout(max_shared: int, rule: KernelRule) -> tuple[FastLayout, int]:
    """(the counters' layout, the edges' bytes in shared memory: 0 when they
    are read from global memory)."""
    edge_bytes = rule.edges.nbytes
    if edge_bytes > EDGES_SHARED_MAX:
        edge_bytes = 0
    # 8 bytes more: the counters are padded to align the edges.
    return fast_layout(max_shared, rule.num_bins + TALLIES, reserved=edge_bytes + 8), edge_bytes


def shared_bytes(layout: FastLayout, edge_bytes: int) -> int:
    """A block's dynamic shared memory: the counters, padded to 8 bytes, then the edges."""
    counter_words = layout.copies * layout.words_per_copy
    return (counter_words + (counter_words & 1)) * 4 + edge_bytes


def bin_histogram(rt: Runtime, samples: Keys, rule: KernelRule, hist: DeviceArray,
                  first_bad: DeviceArray, edges: DeviceArray, grid: int | None = None,
                  shared_share: float | None = None, narrow: bool = False,
                  numpy_steps: bool = False, estimate_alone: bool = True,
                  computed_edges: bool | None = None) -> Geometry:
    """Count samples into hist (num_bins + 3 int64: the bins, then underflow,
    overflow, NaN); the first sample numpy's rule fails on is noted in
    first_bad. edges: rule.edges on the device. grid, shared_share and narrow
    force the geometry, the share of counters in shared memory and 16-bit
    counters, as for fast_histogram (the conformance suite reaches the
    global-counter paths at few bins so); numpy_steps takes numpy's steps
    (or the search over explicit edges) even where the bracketing walk gives
    the same bins, so the suite judges both ways on every case;
    estimate_alone=False reads the edges for every sample even where the
    estimate alone names its bin (rule.fast); computed_edges (None: where the
    edges would be read from global memory) computes np.linspace's edges in
    the bracketing walk where rule.linspace allows it."""
    kernel, geometry, shared_bins, rule_args = rt.plan(
        ("bin_histogram", samples.dtype, samples.n, _rule_key(rule), grid, shared_share, narrow,
         numpy_steps, estimate_alone, computed_edges),
        lambda: _plan(rt, samples, rule, grid, shared_share, narrow, numpy_steps, estimate_alone,
                      computed_edges))
    zero_counts(rt, hist, rule.num_bins + TALLIES)
    rt.launch(kernel, geometry, samples.ptr, np.int64(samples.n), np.uint64(rule.num_bins),
              np.int64(vector_head(samples.ptr, samples.n, samples.dtype.itemsize)),
              shared_bins, hist.ptr, first_bad.ptr, edges.ptr, *rule_args)
    return geometry


def _rule_key(rule: KernelRule) -> tuple:
    """What a launch plan depends on in a rule: every field but the edges'
    values (their type and count), floats by their bits (-0.0 is not 0.0)."""
    floats = (rule.lo, rule.width, rule.scale, rule.fast or 0.0, *(rule.linspace or ()))
    return (rule.num_bins, rule.edges.dtype, len(rule.edges), tuple(sorted(rule.defines.items())),
            rule.flags, rule.keep_low, rule.keep_high, rule.fast is None, rule.linspace is None,
            tuple(_double_bits(value) for value in floats))


def _plan(rt: Runtime, samples: Keys, rule: KernelRule, grid: int | None,
          shared_share: float | None, narrow: bool, numpy_steps: bool, estimate_alone: bool,
          computed_edges: bool | None):
    """(kernel, geometry, shared_bins, the rule's arguments) of one
    bin_histogram launch shape, made once per shape (Runtime.plan): a
    repeated call pays a lookup, not the layout, the compile key and the
    names."""
    counters = _counters(rule)
    defines, fast, linspace = _rule_defines(samples, rule, numpy_steps, estimate_alone)

    def build(max_shared: int):
        layout, edge_bytes = counters_layout(max_shared, rule)
        if narrow:
            layout = FastLayout(1, min(counters, 2 * ((max_shared - edge_bytes) // 4 - 2)),
                                narrow=True)
        if shared_share is not None:
            shared_bins = min(layout.shared_bins, int(counters * shared_share))
            layout = FastLayout(layout.copies, shared_bins, layout.narrow)
        coalesced = "1" if layout.shared_bins < counters // 2 else "0"
        computed = linspace is not None and (
            computed_edges if computed_edges is not None else edge_bytes == 0)
        kernel = rt.kernel("bin_histogram.cu", "bin_histogram", {
            **defines, "COPIES": str(layout.copies), "COALESCED": coalesced, "HOLD_RUNS": "0",
            "NARROW_COUNTERS": str(int(layout.narrow)), "EDGES_SHARED": str(int(edge_bytes > 0)),
            "EDGES_COMPUTED": str(int(computed))})
        return layout, edge_bytes, coalesced, kernel, computed

    layout, edge_bytes, coalesced, kernel, computed = build(rt.max_shared_per_block)
    if shared_bytes(layout, edge_bytes) > rt.max_dynamic_shared(kernel):
        layout, edge_bytes, coalesced, kernel, computed = build(rt.max_dynamic_shared(kernel))
    shared = shared_bytes(layout, edge_bytes)
    blocks = fast_blocks(rt, kernel, samples, shared, grid)
    narrow_tag = ", NARROW_COUNTERS=1" if layout.narrow else ""
    geometry = Geometry(f"bin_histogram[{'even' if rule.defines['BIN_RULE'] == '0' else 'edges'}"
                        f", COPIES={layout.copies}{narrow_tag}, shared_bins={layout.shared_bins}"
                        f", COALESCED={coalesced}, edges in "
                        f"{'shared' if edge_bytes else 'global'} memory"
                        f"{_estimate_label(fast)}"
                        f"{', edges computed' if computed else ''}]",
                        blocks, FAST_BLOCK, shared)
    return (kernel, geometry, np.uint64(layout.shared_bins),
            _rule_args(rule, fast, linspace if computed else None))


def _counters(rule: KernelRule) -> int:
    """The bins and the tallies, refused past the 32-bit counter indices."""
    if rule.num_bins + TALLIES >= MAX_COUNTERS:
        raise UnsupportedShape(f"bin_histogram counts up to {MAX_COUNTERS - TALLIES - 1} bins; "
                               f"got {rule.num_bins}")
    return rule.num_bins + TALLIES


def _rule_defines(samples: Keys, rule: KernelRule, numpy_steps: bool, estimate_alone: bool):
    """(the rule's defines for bin_histogram.cu, the estimate-alone margin or
    None, np.linspace's (start, step) for computed edges or None): numpy's
    steps (or the search) take neither."""
    defines = {**contract.sample_defines(samples.dtype), **rule.defines}
    if numpy_steps:  # the search, or numpy's own steps, everywhere
        defines.update({"ESTIMATE_WITHIN_ONE": "0", "EDGES_NEAR_EVEN": "0"})
    fast = rule.fast if estimate_alone and not numpy_steps else None
    defines["FAST_ESTIMATE"] = str(int(fast is not None))
    defines["FLOOR_IS_THE_BIN"] = str(int(fast == FLOOR_IS_THE_BIN))
    return defines, fast, None if numpy_steps else rule.linspace


def _estimate_label(fast: float | None) -> str:
    """How a launch's geometry names its estimate-alone step (none: empty)."""
    if fast is None:
        return ""
    return ", estimate alone" + (" (its floor)" if fast == FLOOR_IS_THE_BIN else "")


def _rule_args(rule: KernelRule, fast: float | None,
               linspace: tuple[float, float] | None = None) -> tuple:
    """The rule's kernel arguments after the edges (bin_histogram.cu's order)."""
    start, step = linspace or (0.0, 0.0)
    return (np.uint32(rule.flags), np.float64(rule.lo), np.float64(rule.width),
            np.float64(rule.scale), np.uint64(rule.keep_low), np.uint64(rule.keep_high),
            np.float64(fast or 0.0), np.float64(start), np.float64(step))


def bin_indices(rt: Runtime, samples: Keys, rule: KernelRule, indices: DeviceArray,
                edges: DeviceArray, grid: int | None = None, numpy_steps: bool = False,
                estimate_alone: bool = True) -> Geometry:
    """indices[i] (uint32) = the counter of samples[i]: its bin, or num_bins +
    the tally's slot (underflow, overflow, NaN); 0xffffffff where numpy's own
    code fails. The weighted histogram of the samples then sums each weight
    into its counter (gpu.bin_histogram with weights). grid, numpy_steps and
    estimate_alone as for bin_histogram."""
    _counters(rule)
    # The edges are read from global memory here: computed wherever they can be.
    defines, fast, linspace = _rule_defines(samples, rule, numpy_steps, estimate_alone)
    kernel = rt.kernel("bin_histogram.cu", "bin_indices",
                       {**defines, "EDGES_COMPUTED": str(int(linspace is not None))})
    blocks = grid if grid is not None else blocks_for(
        samples.n, FAST_BLOCK * 16, rt.sm_count * rt.resident_blocks(kernel, FAST_BLOCK, 0))
    geometry = Geometry(f"bin_indices[{'even' if rule.defines['BIN_RULE'] == '0' else 'edges'}"
                        f"{_estimate_label(fast)}"
                        f"{', edges computed' if linspace else ''}]", blocks, FAST_BLOCK, 0)
    rt.launch(kernel, geometry, samples.ptr, np.int64(samples.n), np.uint64(rule.num_bins),
              indices.ptr, edges.ptr, *_rule_args(rule, fast, linspace))
    return geometry


def weighted_bin_histogram(rt: Runtime, samples: Keys, rule: KernelRule, weights: Weights,
                           sums: DeviceArray, first_bad: DeviceArray, edges: DeviceArray
                           ) -> list[Geometry]:
    """sums (float64, num_bins + 3: the bins, then the tallies) = the exact sum
    of each counter's weights, rounded once: each sample's counter written
    out (bin_indices), then the weighted histogram over the counters. The
    first sample numpy's code fails on is noted in first_bad (its counter is
    past every bin)."""
    indices = rt.empty(samples.n, np.uint32)
    geometries = [bin_indices(rt, samples, rule, indices, edges)]
    counters = Keys(indices.ptr, samples.n, np.dtype(np.uint32))
    geometries += weighted_histogram(rt, counters, weights, _counters(rule), sums, first_bad)
    del indices  # freed stream-ordered: after the kernels that read it
    return geometries
