"""When an even-bin estimate is within one bin of the bin whose edges bracket
the sample: then numpy's own estimate-and-correct (and a cheap estimate with
two steps over the edges) ends in that bin. The CPU oracle
(oracles.bin_histogram) and the GPU kernel (bin_histogram.cu) both take the
cheap way where these bounds hold, and numpy's steps elsewhere.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

# Unit roundoff and the smallest subnormal of the precisions numpy's even-bin
# estimate is computed in (bits -> value).
_ROUNDOFF = {16: 2.0**-11, 32: 2.0**-24, 64: 2.0**-53}
_SMALLEST = {16: 2.0**-24, 32: 2.0**-149, 64: 2.0**-1074}
_LARGEST = {16: 65504.0, 32: float(np.finfo(np.float32).max), 64: float(np.finfo(np.float64).max)}


def numpy_estimate_within_one_bin(edges: np.ndarray, lo: float, width: float, scale: float,
                                  diff_bits: int, quot_bits: int) -> bool:
    """Whether numpy's even-bin estimate ``((x - lo) / width) * scale`` (x - lo
    rounded to diff_bits, the rest to quot_bits) is within one bin of the bin
    whose edges bracket x, for every kept sample x: then numpy's corrections
    always end in that bin (bin_histogram.cu's ESTIMATE_WITHIN_ONE).

    In bin units, the estimate's rounding error is at most scale x (u_diff +
    2 u_quot) plus the subnormal steps, and each edge lies within D of its
    place i on the estimate's grid (measured here). Both together must stay
    below half a bin (half, not one: a margin over this analysis and over the
    float64 arithmetic of the measurement). Spans whose x - lo could
    overflow, or that are not finite, are never within one bin.
    """
    n = len(edges) - 1
    if n < 1 or not (np.isfinite(lo) and np.isfinite(width) and np.isfinite(scale)):
        return False
    if width <= 0 or max(abs(float(edges[0])), abs(float(edges[-1])), abs(lo)) * 2 >= (
            _LARGEST[diff_bits]):
        return False
    per_unit = scale / width
    if not np.isfinite(per_unit):
        return False
    rounding = scale * (_ROUNDOFF[diff_bits] + 2 * _ROUNDOFF[quot_bits]) + (
        _SMALLEST[diff_bits] * per_unit + _SMALLEST[quot_bits] * scale + _SMALLEST[quot_bits])
    with np.errstate(all="ignore"):
        places = (edges.astype(np.float64) - lo) * per_unit
        drift = float(np.max(np.abs(places - np.arange(n + 1))))
    return bool(np.isfinite(drift)) and rounding + drift + 1e-9 * n < 0.5


def bracket_estimate_within_one_bin(edges: np.ndarray, lo: float, per_unit: float) -> bool:
    """Whether bin_histogram.cu's bracketing walk is exact for these edges:
    its estimate ``(x - lo) * per_unit``, two roundings in the edges' own
    precision (edges.dtype; lo and per_unit already in it), within one bin of
    the bracketing bin for every x in [edges[0], edges[-1]].

    Each rounding errs by at most n x u in bin units (|x - lo| x per_unit is
    at most about n), and each edge lies within D of its place on the grid
    (measured here in float64); together below half a bin, as for
    numpy_estimate_within_one_bin.
    """
    bits = FLOAT_BITS_OF.get(np.dtype(edges.dtype))
    n = len(edges) - 1
    if bits is None or n < 1 or not (np.isfinite(lo) and np.isfinite(per_unit)):
        return False
    with np.errstate(all="ignore"):
        wide = edges.astype(np.float64)
        if not np.isfinite(wide).all() or max(abs(wide[0]), abs(wide[-1]), abs(lo)) * 2 >= (
                _LARGEST[bits]):
            return False
        places = (wide - lo) * per_unit
        drift = float(np.max(np.abs(places - np.arange(n + 1))))
    rounding = 2 * n * _ROUNDOFF[bits] + _SMALLEST[bits] * (per_unit + 1)
    return bool(np.isfinite(drift)) and rounding + drift + 1e-9 * n < 0.5


def estimate_margin(edges: np.ndarray, lo: float, per_unit: float) -> float | None:
    """Where bin_histogram.cu may take a sample's bin from its estimate alone
    (FAST_ESTIMATE): the margin, a value of edges.dtype, or None.

    The estimate ``t = (x - lo) * per_unit`` (each step rounded to nearest in
    edges.dtype, lo and per_unit already in it) is monotone in x. It is
    computed here, as the kernel computes it, at every edge and at the value
    just below each edge; the margin is how far the first fall below their
    edge's index and the second rise above it, at most, rounded up into the
    dtype. Every x in ``[edges[i], edges[i + 1])`` then has ``t`` in
    ``[i - margin, i + 1 + margin]``, so a t
    further than the margin from its nearest integer names x's bin by its
    integer part. Where no estimate at an edge falls below its index and
    every one just below an edge stays under it, every x in that bin has
    ``i <= t < i + 1``: floor(t) alone is the bin, and the margin is
    FLOOR_IS_THE_BIN (negative, so every fraction clears it; a sample whose
    t is an integer, 1 in 256 of the float32 samples over (0, 1) at 65536
    bins, then needs no edge either). None where the edges are not strictly increasing and
    finite, per_unit is not positive, the bins are too many for the kernel's
    rounding of t (2^22 for float32), or the margin reaches a quarter bin
    (few samples would be spared an edge read).

    Examples
    --------
    >>> edges = np.linspace(0, 1, 17, dtype=np.float32)
    >>> estimate_margin(edges, 0.0, 16.0)  # dyadic edges: every estimate exact
    -1.0
    >>> estimate_margin(edges, 0.0, 16.0 * (1 - 2**-24))  # t at 1.0 is 16 - 2^-20
    9.5367431640625e-07
    >>> 0 < estimate_margin(np.linspace(0.9, 1.1, 11), 0.9, 10 / 0.2) < 1e-12
    True
    """
    kind = edges.dtype.type
    n = len(edges) - 1
    if kind not in (np.float32, np.float64) or n < 1 or n > _ROUNDED_BINS[kind]:
        return None
    if not (np.isfinite(lo) and np.isfinite(per_unit) and per_unit > 0):
        return None
    if not (np.isfinite(edges).all() and (edges[:-1] < edges[1:]).all()):
        return None
    origin, scale = kind(lo), kind(per_unit)
    with np.errstate(all="ignore"):
        at = (edges - origin) * scale
        below = (np.nextafter(edges, kind(-np.inf)) - origin) * scale
    if not (np.isfinite(at).all() and np.isfinite(below).all()):
        return None
    places = np.arange(n + 1, dtype=np.float64)
    # Exact: each estimate is within a quarter of its index, or far enough
    # from it that rounding the difference cannot bring it below a quarter.
    # The value below an edge lies in the bin before it, so only an estimate
    # above the edge's index widens the margin (and at an edge, one below it).
    # float64 holds each difference exactly where it is small (both terms
    # are floats of edges.dtype near each other), so the comparisons with 0
    # below are exact.
    at_edge = float(np.max(places - at.astype(np.float64)))
    below_edge = float(np.max(below.astype(np.float64) - places))
    if at_edge <= 0.0 and below_edge < 0.0:
        return FLOOR_IS_THE_BIN
    margin = max(0.0, at_edge, below_edge)
    if not margin < 0.25:
        return None
    rounded = kind(margin)
    while Fraction(float(rounded)) < Fraction(margin):
        rounded = np.nextafter(rounded, kind(np.inf))
    return float(rounded)


# estimate_margin's answer where floor(t) is every sample's bin: below every
# fraction t - floor(t), so bin_histogram.cu's test (fraction > margin and
# fraction < 1 - margin) admits every t whose floor is a bin.
FLOOR_IS_THE_BIN = -1.0

# The most bins whose estimates bin_histogram.cu rounds to integers by adding
# 1.5 x 2^23 (float32) or 1.5 x 2^52 (float64), within 32-bit counters.
_ROUNDED_BINS = {np.float32: 2**22, np.float64: 2**32 - 4}

FLOAT_BITS_OF = {np.dtype(np.float16): 16, np.dtype(np.float32): 32, np.dtype(np.float64): 64}


def kept_within_edges(keep, edges: np.ndarray) -> bool:
    """Whether every sample numpy keeps (keep: EvenRule.keep), as a float64,
    lies within [edges[0], edges[-1]], where the bounds on the estimates hold.

    numpy keeps a sample by comparing it with the range's bounds as given,
    in the dtype its promotion rules pick, and bins it by the edges, of
    another dtype: a float16 sample 1.0 is kept for a Python-float top 0.9999
    (float16(0.9999) == 1.0) and lies above the float64 top edge 0.9999.
    numpy's estimate for such a sample may name no bin at all (numpy raises),
    so only numpy's own steps may bin it.
    """
    any_low, any_high, low, high = keep
    if not (any_low and any_high):
        return True  # no sample is kept
    return bool(float(edges[0]) <= float(low) and float(high) <= float(edges[-1]))


def bracket_per_unit(rule) -> float:
    """The per_unit with which the oracle's even binning may take the
    bracketing walk for this EvenRule (float64 edges and steps), or 0.0:
    numpy's steps one by one. Both numpy's estimate and (x - lo) * per_unit
    must be within one bin of the bracketing bin, for every kept sample."""
    if (rule.edge_bits, rule.diff_bits, rule.quot_bits) != (64, 64, 64):
        return 0.0
    if not kept_within_edges(rule.keep, rule.edges):
        return 0.0
    edges = np.asarray(rule.edges, dtype=np.float64)
    with np.errstate(all="ignore"):
        per_unit = float(rule.scale) / float(rule.width)
    if not (np.isfinite(per_unit) and per_unit > 0):
        return 0.0
    if not numpy_estimate_within_one_bin(edges, rule.lo, rule.width, rule.scale, 64, 64):
        return 0.0
    return per_unit if bracket_estimate_within_one_bin(edges, rule.lo, per_unit) else 0.0
