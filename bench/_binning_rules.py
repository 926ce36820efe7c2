"""The two rules bench/binning_peers.py judges binning peers by: numpy's
(``np.histogram``'s counts) and the exact one (exact rational comparison with
the exact even edges, or the explicit edges' exact values)."""

from __future__ import annotations

import bisect
import contextlib
import math
import warnings
from fractions import Fraction

import numpy as np

builtin_range = range  # `range` is a parameter below, as np.histogram names it


def _quiet():
    """numpy's overflow and invalid-value warnings off: the traps set them off on purpose."""
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(np.errstate(all="ignore"))
    return stack


def numpy_rule(samples, bins, range=None, closed_last: bool = True) -> np.ndarray:
    """np.histogram's counts (int64); closed_last=False drops the samples on its top edge."""
    samples = np.asarray(samples)
    with _quiet():
        counts, edges = np.histogram(samples, bins, range)
    counts = counts.astype(np.int64)
    if not closed_last and len(counts):
        # numpy's rule is exact against its edges, so a sample equal to the top
        # edge (compared in the dtype numpy compares in) is one in the last bin
        common = np.promote_types(samples.dtype, edges.dtype)
        on_top = np.count_nonzero(samples.reshape(-1).astype(common) == edges[-1].astype(common))
        counts[-1] -= min(int(on_top), int(counts[-1]))
    return counts


def _fraction(value) -> Fraction | float:
    """A bound or an edge as an exact fraction; infinities stay floats."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, int):
        return Fraction(value)
    value = float(value)
    if math.isnan(value):
        raise ValueError("a NaN bound or edge has no exact value")
    return value if math.isinf(value) else Fraction(value)


def exact_edges(bins, range) -> list:
    """lo + i * (hi - lo) / bins exactly, from the bounds' own values; or the given edges.

    lo == hi is widened to (lo - 1/2, hi + 1/2), as numpy widens it.
    """
    if np.ndim(bins) == 0:
        lo, hi = (_fraction(v) for v in range)
        if isinstance(lo, float) or isinstance(hi, float):
            raise ValueError(f"an infinite range {range!r} has no even edges")
        if lo == hi:
            lo, hi = lo - Fraction(1, 2), hi + Fraction(1, 2)
        return [lo + (hi - lo) * i / int(bins) for i in builtin_range(int(bins) + 1)]
    return [_fraction(e) for e in np.asarray(bins).reshape(-1).tolist()]


def _least_float_at_or_above(edge) -> float:
    """The smallest float64 >= edge: a float64 x is >= edge exactly when it is >= this."""
    if isinstance(edge, float):
        return edge
    try:
        f = float(edge)
    except OverflowError:
        return math.inf if edge > 0 else -math.inf
    # float(Fraction) rounds to nearest; step to the float just at or above
    while Fraction(f) < edge:
        f = math.nextafter(f, math.inf)
    while math.isfinite(below := math.nextafter(f, -math.inf)) and Fraction(below) >= edge:
        f = below
    return f


# Exact edges and their float64 thresholds by (bins, range): shrinking a case
# asks for the same ones many times, and 2^16 fractions take a while.
_EDGES: dict = {}


def _edges_and_thresholds(bins, range) -> tuple[list, np.ndarray]:
    if np.ndim(bins) == 0:
        key = ("even", int(bins), *(_fraction(v) for v in range))
    else:
        edges = np.asarray(bins)
        key = ("edges", edges.dtype.str, edges.tobytes())
    if key not in _EDGES:
        if len(_EDGES) > 64:
            _EDGES.clear()
        edges = exact_edges(bins, range)
        _EDGES[key] = edges, np.array([_least_float_at_or_above(e) for e in edges], np.float64)
    return _EDGES[key]


def exact_rule(samples, bins, range=None, closed_last: bool = True) -> np.ndarray:
    """Counts (int64) with each sample placed against the exact edges by exact comparison.

    range=None takes numpy's (the samples' min and max, widened by 0.5 when
    equal). Float samples (and integers within 2^53) compare as float64, exactly,
    against the smallest float64 at or above each exact edge; other integers
    compare as Python ints against each edge's ceiling.
    """
    samples = np.asarray(samples).reshape(-1)
    if np.ndim(bins) == 0 and range is None:
        range = numpy_span(samples, bins)
    edges, thresholds = _edges_and_thresholds(bins, range)
    if len(edges) < 2:  # no bins: nothing is counted (numpy gives empty counts too)
        return np.zeros(0, np.int64)
    num_bins = len(edges) - 1
    top = edges[-1]
    wide_ints = samples.dtype.kind in "iu" and len(samples) > 0 and (
        int(samples.max()) > 2**53 or int(samples.min()) < -(2**53))
    if not wide_ints:
        x = samples.astype(np.float64)  # exact for float16/32/64 and these integers
        x = x[~np.isnan(x)]
        at = np.searchsorted(thresholds, x, side="right")  # the edges <= x
        exact_top = _fraction(thresholds[-1]) == top
        on_top = x == thresholds[-1] if exact_top else np.zeros(len(x), bool)
    else:
        values = [int(v) for v in samples.tolist()]
        ceilings = [e if isinstance(e, float) else math.ceil(e) for e in edges]
        at = np.array([bisect.bisect_right(ceilings, v) for v in values], dtype=np.int64)
        on_top = np.array([Fraction(v) == top for v in values], dtype=bool)
    if closed_last:
        at[on_top] = num_bins
    inside = (at >= 1) & (at <= num_bins)
    return np.bincount(at[inside] - 1, minlength=num_bins).astype(np.int64)


def numpy_span(samples, bins) -> tuple[float, float]:
    """The (lo, hi) numpy takes for range=None: its first and last edge."""
    with _quiet():
        edges = np.histogram_bin_edges(samples, bins)
    return float(edges[0]), float(edges[-1])


def rule_counts(rule: str, samples, bins, range, closed_last: bool) -> np.ndarray:
    return (numpy_rule if rule == "numpy" else exact_rule)(samples, bins, range, closed_last)
