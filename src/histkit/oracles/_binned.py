"""The binning of real-valued samples by numpy's rule, below the public
`oracles.bin_histogram`: the counts and tallies, and where weights are to be
summed, each sample's counter (its bin, or one of the tallies after the bins).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from histkit.oracles._bin_rule import (
    Flow,
    checked_edges,
    even_rule,
    numpy_fails_error,
    parse_bins,
    search_edges,
)
from histkit.oracles._binning import edge_counts, even_counts, sample_span
from histkit.oracles._estimate import bracket_per_unit
from histkit.oracles._inputs import require_memory

# A sample's counter is its bin, or num_bins + the index of its tally here.
TALLIES = len(Flow._fields)  # underflow, overflow, NaN


class Binned(NamedTuple):
    counts: np.ndarray  # int64, one per bin
    edges: np.ndarray  # numpy's edges (the bins array itself when edges are given)
    flow: Flow  # int counts of the samples no bin holds
    counters: np.ndarray | None  # int64 per sample, when asked for


def even_bins_fit(num_bins: int) -> None:
    """A MemoryError naming bins where its edges and counts (and the host's
    copies of them) do not fit in memory: said before any of them is made."""
    require_memory(8 * 3 * (num_bins + 1), f"bins={num_bins} (edges and int64 counts)")


def bin_samples(samples: np.ndarray, bins, range, right_closed_last: bool, threads: int,
                counters: bool = False) -> Binned:
    """Samples (already checked by ``as_sample_array``) binned by numpy's rule;
    raises as `oracles.bin_histogram` documents."""
    num_bins, edges = parse_bins(bins)
    if counters:
        require_memory(8 * len(samples), f"{len(samples)} samples' counters (weights)")
    slots = np.empty(len(samples), dtype=np.int64) if counters else None
    half = samples.dtype == np.float16
    view = samples.view(np.uint16) if half else samples
    if edges is None:
        even_bins_fit(num_bins)
        rule = even_rule(samples, num_bins, range, lambda: sample_span(view, half, threads))
        edges = rule.edges
        counts, under, over, nan, failed = even_counts(
            view, half, np.ascontiguousarray(edges, dtype=np.float64), rule.lo, rule.width,
            rule.scale, rule.edge_bits, rule.diff_bits, rule.quot_bits, right_closed_last,
            rule.keep, threads, bracket_per_unit(rule), slots)
        if failed >= 0:
            raise numpy_fails_error(rule, failed, samples[failed].item())
    else:
        edges = checked_edges(edges)
        require_memory(8 * 2 * len(edges), f"{len(edges)} edges (int64 counts)")
        counts, under, over, nan = edge_counts(view, half, search_edges(samples.dtype, edges),
                                               right_closed_last, threads, slots)
    return Binned(counts, edges, Flow(under, over, nan), slots)
