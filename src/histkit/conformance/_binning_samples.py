"""Samples for the binning cases: edges and their one-ulp neighbours, seeded
distributions with traps sprinkled in, misaligned views, and the search for
samples a naive bin estimate puts one bin off.

Nothing here depends on the cases' names or order; every draw comes from a
generator seeded by the caller.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

# Ranges and bin counts the search for naive misses walks, in this order.
SEARCH_RANGES = ((0.9, 1.1), (-7.5, 2.2), (0.1, 126.0), (1e3, 1e5), (-1.0, 0.3), (0.0, 0.2))
SEARCH_BINS = (10, 126, 3, 7, 13, 49, 100, 255, 1000)


def name_number(x) -> str:
    """A number as a case name takes it (no '+': 1e+300 is 1e300)."""
    return repr(x.item() if isinstance(x, np.generic) else x).replace("+", "")


def seeded(name: str) -> np.random.Generator:
    """A generator seeded by a case's name, so its samples do not depend on other cases."""
    return np.random.default_rng(list(name.encode()))


def numpy_edges(samples_or_dtype, bins, range) -> np.ndarray:
    """np.histogram's edges; a dtype stands for empty samples of it (the same edges
    whenever range is given)."""
    samples = samples_or_dtype
    if not isinstance(samples, np.ndarray):
        samples = np.zeros(0, samples_or_dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.histogram_bin_edges(samples, bins, range)


def near(values, dtype) -> np.ndarray:
    """The finite values cast to dtype and one ulp below and above each; for an integer
    dtype, floor(value) and the integers either side, those the dtype holds."""
    dtype, values = np.dtype(dtype), np.asarray(values)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if values.dtype.kind == "f":
            values = np.floor(values[np.isfinite(values)])
        ints = np.unique(values).tolist()  # Python ints: no wrap-around near the limits
        around = {int(v) + step for v in ints for step in (-1, 0, 1)}
        return np.array(sorted(v for v in around if info.min <= v <= info.max), dtype)
    with np.errstate(all="ignore"):
        on = values.astype(dtype)
        on = on[np.isfinite(on)]
        return np.concatenate([on, np.nextafter(on, dtype.type(-np.inf)),
                               np.nextafter(on, dtype.type(np.inf))])


def traps(dtype, edges, nonfinite: bool = True) -> np.ndarray:
    """Samples on and one ulp around every edge; with nonfinite, NaN, +-inf and +-0.0
    for float samples."""
    dtype = np.dtype(dtype)
    extra = [np.nan, np.inf, -np.inf, 0.0, -0.0] if dtype.kind == "f" and nonfinite else []
    return np.concatenate([near(edges, dtype), np.array(extra, dtype)])


def sprinkle(bulk: np.ndarray, planted: np.ndarray, rng) -> np.ndarray:
    """bulk with the planted samples, shuffled, written over it at distinct seeded places
    (one in each of len(planted) equal strides: O(len(planted)) even for 2^26 samples)."""
    out, k = bulk.copy(), min(len(bulk), len(planted))
    if k:
        stride = len(out) // k
        out[np.arange(k) * stride + rng.integers(0, stride, k)] = rng.permutation(planted)[:k]
    return out


def draw(dtype, n: int, lo: float, hi: float, how: str, rng) -> np.ndarray:
    """n samples of dtype: uniform over [lo, hi], normal around its middle (a quarter
    of the span its sigma, so some fall outside), or all equal."""
    dtype = np.dtype(dtype)
    work = np.float32 if dtype == np.float32 else np.float64  # no float64 detour for 2^24
    if how == "uniform" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = max(int(np.ceil(lo)), int(info.min)), min(int(np.floor(hi)), int(info.max))
        return rng.integers(low, high, n, dtype=dtype, endpoint=True)
    with np.errstate(all="ignore"):
        if how == "uniform":
            x = work(lo) + work(hi - lo) * rng.random(n, dtype=work)
        elif how == "normal":
            x = work((lo + hi) / 2) + work((hi - lo) / 4) * rng.standard_normal(n, dtype=work)
        else:
            x = np.full(n, lo + (hi - lo) * 0.3, work)
        if dtype.kind in "iu":  # clipped first: a float cast past an integer's range is undefined
            info = np.iinfo(dtype)
            return np.clip(np.rint(x), max(info.min, -2**53), min(info.max, 2**53)).astype(dtype)
        return x.astype(dtype)


def misaligned(samples: np.ndarray) -> np.ndarray:
    """samples as the tail of an array one element longer: the data starts one element
    into its allocation (off the 16-byte alignment of vector loads)."""
    base = np.zeros(len(samples) + 1, samples.dtype)
    base[1:] = samples
    return base[1:]


def naive_bins(x: np.ndarray, bins: int, lo: float, hi: float) -> np.ndarray:
    """The naive kernel's bin, floored, x == hi put in the last bin: for float64 samples
    ``(x - lo) * (1 / (hi - lo)) * bins``; otherwise ``(x - lo) / (hi - lo) * bins``
    with every step in float32."""
    with np.errstate(all="ignore"):
        if x.dtype == np.float64:
            estimate = (x - lo) * (1 / (hi - lo)) * bins
        else:
            f = np.float32
            estimate = (x.astype(f) - f(lo)) / (f(hi) - f(lo)) * f(bins)
    return np.minimum(np.floor(estimate), bins - 1).astype(np.int64)


def naive_misses(dtype, per_side: int = 3) -> list[tuple[str, int, float, float, float]]:
    """(side, bins, lo, hi, x): configurations where `naive_bins` misses by one.

    Walks SEARCH_RANGES x SEARCH_BINS in order over numpy's edges for samples
    of dtype and a Python-float range: a sample on an interior edge ("on": the
    estimate is one low) or one ulp below it ("below": one high) that the
    naive estimate floors into another bin than the edges bracket. Keeps
    per_side hits of each side, no two sharing a range or a bin count.
    """
    dtype, found, used = np.dtype(dtype), [], set()
    for (lo, hi), bins in itertools.product(SEARCH_RANGES, SEARCH_BINS):
        edges = numpy_edges(dtype, bins, (lo, hi))
        inner = edges[1:-1]
        for side, x in (("on", inner), ("below", np.nextafter(inner, dtype.type(-np.inf)))):
            if bins in used or (lo, hi) in used or sum(f[0] == side for f in found) >= per_side:
                continue
            by_edges = np.searchsorted(edges, x, "right") - 1
            wrong = np.flatnonzero(naive_bins(x, bins, lo, hi) != by_edges)
            if len(wrong):
                found.append((side, bins, lo, hi, x[wrong[0]].item()))
                used |= {bins, (lo, hi)}
    return found
