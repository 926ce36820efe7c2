"""numpy's binning rule, derived for one call of ``np.histogram(samples, bins, range)``.

np.histogram is exact against the edges it computes. Which edges, which
samples it keeps and the dtype of each step of its estimate follow from the
dtypes of the samples, of ``range`` and of ``bins``, under NEP 50 promotion: a
Python float is "weak" (a Python-float range over float32 samples gives
float32 edges), a numpy scalar is not (``np.float64`` bounds give float64
edges). Everything that depends on those dtypes is worked out here, once per
call, by numpy's own operations on single values; the per-sample work
(histkit.oracles._binning) then needs plain numbers only.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from histkit.oracles._inputs import as_array


class Flow(NamedTuple):
    """The samples no bin holds, as ``bin_histogram(..., flow=True)`` returns
    them: below the first edge, above the last (or on it, when the last bin
    is half-open), NaN. Counts (int), or with weights the exact sums of
    those samples' weights (float)."""

    underflow: int
    overflow: int
    nan: int


# The float dtypes numpy may compute edges and estimates in, by their bits.
FLOAT_BITS = {np.dtype(np.float16): 16, np.dtype(np.float32): 32, np.dtype(np.float64): 64}


def _real(dtype: np.dtype) -> bool:
    """An integer dtype or float16/32/64, in either byte order."""
    return dtype.kind in "iu" or (dtype.kind == "f" and dtype.newbyteorder("=") in FLOAT_BITS)


def as_sample_array(samples) -> np.ndarray:
    """samples as a 1-d native-endian array of a float16/32/64 or integer dtype.

    Like np.histogram, any shape is taken and flattened (a 1-d view is read in
    place, strides and all).
    """
    if samples is None:
        raise TypeError("samples must be an array of real numbers; got None")
    arr = as_array(samples, "samples")
    if not _real(arr.dtype):
        raise TypeError(f"samples must have a float16, float32, float64 or integer dtype; "
                        f"got {arr.dtype}")
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def parse_bins(bins) -> tuple[int | None, np.ndarray | None]:
    """(number of even bins, None) or (None, the edges array), as np.histogram reads bins."""
    if isinstance(bins, str):
        raise TypeError(f"bins must be an int or a 1-d array of edges; numpy's estimator "
                        f"names such as {bins!r} are not supported")
    edges = as_array(bins, "bins", "an int or a 1-d array of edges")
    if edges.ndim == 0:
        if isinstance(bins, (bool, np.bool_)) or getattr(bins, "dtype", None) == np.bool_:
            raise TypeError(f"bins must be an int or a 1-d array of edges; got {bins!r}")
        try:
            count = operator.index(bins)
        except TypeError:
            raise TypeError(f"bins must be an int or a 1-d array of edges; "
                            f"got {bins!r}") from None
        if count < 1:
            raise ValueError(f"bins must be >= 1 when an int; got {count}")
        return count, None
    if edges.ndim == 1:
        return None, edges
    raise ValueError(f"bins must be an int or a 1-d array of edges; got shape {edges.shape}")


def checked_edges(edges: np.ndarray) -> np.ndarray:
    """Explicit edges as np.histogram accepts them: float16/32/64 or integers, not
    decreasing. NaN edges raise (numpy takes them and returns meaningless counts)."""
    if not _real(edges.dtype):
        raise TypeError(f"bins as edges must have a float16, float32, float64 or integer "
                        f"dtype; got {edges.dtype}")
    if edges.dtype.kind == "f" and np.isnan(edges).any():
        raise ValueError(f"bins must not hold NaN; edge {int(np.flatnonzero(np.isnan(edges))[0])}"
                         f" is NaN")
    falls = np.flatnonzero(edges[:-1] > edges[1:])
    if len(falls):
        i = int(falls[0])
        raise ValueError(f"bins must increase monotonically when an array; edge {i + 1} "
                         f"({edges[i + 1].item()!r}) is below edge {i} ({edges[i].item()!r})")
    return edges


def search_edges(sample_dtype: np.dtype, edges: np.ndarray) -> np.ndarray:
    """The edges in the type samples are compared with them in.

    np.histogram sorts the samples and calls searchsorted with the edges,
    which compares both in their promoted dtype (int64 samples against
    float64 edges: in float64, so int64 values past 2^53 round first). That
    dtype is widened here to float64, int64 or uint64, which hold every value
    of it exactly, so the comparison is the same.
    """
    common = np.promote_types(sample_dtype, edges.dtype)
    if common.kind == "f":
        if common not in FLOAT_BITS:
            raise TypeError(f"samples of {sample_dtype} against edges of {edges.dtype} would "
                            f"compare in {common}")
        wide = np.float64
    else:
        wide = np.uint64 if common.kind == "u" else np.int64
    return np.ascontiguousarray(edges.astype(common).astype(wide))


@dataclass(frozen=True)
class EvenRule:
    """numpy's even binning for one call: the edges it returns and how it maps a sample."""

    edges: np.ndarray  # what np.histogram returns, in its dtype
    keep: tuple  # (any_low, any_high, low, high): the kept samples, as sample values
    lo: float  # first edge in the dtype of x - lo
    width: float  # hi - lo as numpy computes it, in the dtype of the division
    scale: float  # the number of bins in that dtype
    edge_bits: int  # precision of the edges (samples are cast to it)
    diff_bits: int  # precision of x - lo
    quot_bits: int  # precision of / width and * bins
    bounds: tuple  # (lo, hi) as numpy takes them, for messages
    diff_dtype: np.dtype
    quot_dtype: np.dtype


def even_rule(samples: np.ndarray, num_bins: int, range,
              min_max: Callable[[], tuple]) -> EvenRule:
    """Derive numpy's even-bin rule; raises, before any counting, where numpy raises.

    min_max() gives the samples' (min, max, NaN seen), for ``range=None``.
    """
    first, last = _outer_edges(samples, range, min_max)
    edge_dtype = np.result_type(first, last, samples)
    if edge_dtype.kind in "iu":
        edge_dtype = np.result_type(edge_dtype, float)
    if edge_dtype not in FLOAT_BITS:
        raise TypeError(f"range {first!r}, {last!r} over samples of {samples.dtype} would give "
                        f"edges of {edge_dtype}; edges must be float16, float32 or float64")
    # More edges than the dtype has values can never increase strictly: said
    # before np.linspace spends minutes on them. Not for float16: 2^16 edges
    # and more cost numpy little, and where the span overflows float16 they
    # are NaN, which pass numpy's test below.
    too_many = edge_dtype.itemsize > 2 and num_bins >= 2 ** (8 * edge_dtype.itemsize)
    with np.errstate(all="ignore"):
        edges = (None if too_many else
                 np.linspace(first, last, num_bins + 1, endpoint=True, dtype=edge_dtype))
        # NaN edges (a span past the dtype's range) pass this test, as in numpy.
        if too_many or np.any(edges[:-1] >= edges[1:]):
            widened = (" (lo == hi, and widening them by 0.5 either side leaves them equal)"
                       if first == last else "")
            raise ValueError(f"{num_bins} bins over [{first}, {last}] do not fit in "
                             f"{edge_dtype}: the edges are not strictly increasing{widened} "
                             f"(np.histogram: too many bins for data range)")
        # numpy's estimate is ((x_e - lo) / width) * num_bins, x_e the sample cast
        # to the edges' dtype; each operation's dtype comes from NEP 50 promotion.
        probe = np.zeros(1, edge_dtype)
        diff_dtype = np.result_type(probe, first)
        lo = -np.subtract(probe, first, dtype=diff_dtype)[0]
        width = _width(last, first)
        quot_dtype = np.true_divide(np.ones(1, diff_dtype), width).dtype
        width_q = np.asarray(width).astype(quot_dtype)[()]
        scaled = np.multiply(np.ones(1, quot_dtype), num_bins)
        keep = _kept_interval(samples.dtype, first, last)
    for dtype in (diff_dtype, quot_dtype, scaled.dtype):
        if dtype not in FLOAT_BITS:
            raise TypeError(f"range {first!r}, {last!r} over samples of {samples.dtype}: numpy "
                            f"would estimate bins in {dtype}")
    if scaled.dtype != quot_dtype:
        raise TypeError(f"numpy would scale its estimate in {scaled.dtype} after dividing in "
                        f"{quot_dtype}")
    if samples.dtype.kind in "iu" and samples.dtype.itemsize == 8 and edge_dtype != np.float64:
        # Never reached (int64 with any float promotes to float64); the kernel
        # rounds 64-bit integers to double once, so it relies on that.
        raise TypeError(f"64-bit integer samples with {edge_dtype} edges")
    return EvenRule(edges=edges, keep=keep, lo=float(lo), width=float(width_q),
                    scale=float(scaled[0]), edge_bits=FLOAT_BITS[edge_dtype],
                    diff_bits=FLOAT_BITS[diff_dtype], quot_bits=FLOAT_BITS[quot_dtype],
                    bounds=(first, last), diff_dtype=diff_dtype, quot_dtype=quot_dtype)


class NumpyFailsError(ValueError):
    """A sample numpy's even-bin code fails on; ``.index`` is its index."""

    __module__ = "histkit.oracles"  # where users import it from

    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.index = index

    def __reduce__(self):
        # Dask workers pickle errors they pass on: rebuild from both arguments.
        return type(self), (str(self), self.index)


def numpy_fails_error(rule: EvenRule, index: int, value) -> NumpyFailsError:
    """The error for a sample numpy's even-bin code fails on (its estimate
    overflows to an index past the edges)."""
    return NumpyFailsError(
        f"numpy's rule has no bin for the sample at index {index} ({value!r}): its estimate "
        f"((x - lo) / (hi - lo)) * bins, x - lo in {rule.diff_dtype} and the rest in "
        f"{rule.quot_dtype}, overflows for the span [{rule.bounds[0]}, {rule.bounds[1]}] "
        f"(np.histogram raises here too)", index)


def _range_value(value, name: str):
    """A bound of range as np.histogram would use it: a Python or numpy real number."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"range must be a pair of real numbers; {name} is {value!r}")
    if isinstance(value, np.floating) and value.dtype not in FLOAT_BITS:
        raise TypeError(f"range must hold float16, float32 or float64 numbers; {name} is "
                        f"{value.dtype}")
    try:
        finite = bool(np.isfinite(value))
    except TypeError:
        raise TypeError(f"range must hold numbers numpy can hold; {name} is {value!r}") from None
    if not finite:
        raise ValueError(f"range must be finite; {name} is {value}")
    return value


def _outer_edges(samples: np.ndarray, range, min_max: Callable[[], tuple]) -> tuple:
    """The first and last edge, as np.histogram picks them (the same Python or
    numpy scalars, so the same promotion follows)."""
    if range is not None:
        try:
            first, last = range
        except (TypeError, ValueError):
            raise ValueError(f"range must be a pair (lo, hi); got {range!r}") from None
        first, last = _range_value(first, "lo"), _range_value(last, "hi")
        if first > last:
            raise ValueError(f"range must have lo <= hi; got lo={first}, hi={last}")
    elif samples.size == 0:
        first, last = 0, 1
    else:
        low, high, nan = min_max()
        if nan:
            low = high = np.nan
        first, last = samples.dtype.type(low), samples.dtype.type(high)
        # numpy's min of -0.0 and 0.0 may be either; its own answer decides the
        # sign of a zero edge.
        if samples.dtype.kind == "f" and low == 0:
            first = samples.min()
        if samples.dtype.kind == "f" and high == 0:
            last = samples.max()
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"range=None takes the samples' min and max, [{first}, {last}], "
                             f"which are not finite (the samples hold NaN or infinity); "
                             f"pass a range")
    if first == last:
        # numpy widens an empty span by 0.5 either side, in the bounds' own
        # arithmetic (float16 bounds past 2048 do not move: numpy then fails).
        with np.errstate(all="ignore"):
            first, last = first - 0.5, last + 0.5
    return first, last


def _width(last, first):
    """hi - lo as numpy's histogram computes it: a signed-integer difference is
    taken in the unsigned type of the same width, so it cannot overflow."""
    dtype = np.result_type(last, first)
    if dtype.kind == "i":
        unsigned = np.dtype(f"u{dtype.itemsize}")
        try:
            return np.subtract(np.asarray(last, dtype), np.asarray(first, dtype),
                               casting="unsafe", dtype=unsigned)
        except OverflowError:
            raise OverflowError(
                f"range ({first!r}, {last!r}): numpy takes hi - lo of Python-int bounds "
                f"in {dtype}, which cannot hold them (np.histogram raises here too); pass "
                f"the bounds as numpy scalars of the samples' dtype") from None
    return np.subtract(last, first, dtype=dtype)


def _kept_interval(dtype: np.dtype, first, last) -> tuple:
    """(any_low, any_high, low, high): numpy keeps sample x when ``x >= first`` and
    ``x <= last``, compared as its promotion rules say (a float32 sample against a
    Python float: in float32; an int64 sample against a Python float: in float64).
    Both tests are monotone in x, so the kept samples are the sample values in
    [low, high]. Found by bisection over the dtype's values, asking numpy."""

    def at_least(value):
        return bool((np.asarray([value], dtype) >= first)[0])

    def at_most(value):
        return bool((np.asarray([value], dtype) <= last)[0])

    if dtype.kind == "f":
        bits = np.dtype(f"u{dtype.itemsize}")
        width = 8 * dtype.itemsize
        sign = 1 << (width - 1)

        def value(code):
            # Codes order the non-NaN floats by value: -inf ... -0.0, +0.0 ... +inf.
            raw = code ^ sign if code & sign else code ^ ((1 << width) - 1)
            return np.asarray([raw], bits).view(dtype)[0]

        inf_bits = int(np.asarray([np.inf], dtype).view(bits)[0])
        lowest, highest = ((1 << width) - 1) ^ (inf_bits | sign), inf_bits | sign
    else:
        info = np.iinfo(dtype)

        def value(code):
            return dtype.type(code)

        lowest, highest = int(info.min), int(info.max)

    low = _first_true(lambda code: at_least(value(code)), lowest, highest)
    high = _first_true(lambda code: not at_most(value(code)), lowest, highest)
    high = None if high == lowest else (highest if high is None else high - 1)
    return (low is not None, high is not None,
            None if low is None else value(low).item(),
            None if high is None else value(high).item())


def _first_true(predicate, lowest: int, highest: int) -> int | None:
    """The least code in [lowest, highest] where a monotone predicate holds, or None."""
    if not predicate(highest):
        return None
    while lowest < highest:
        middle = (lowest + highest) // 2
        if predicate(middle):
            highest = middle
        else:
            lowest = middle + 1
    return lowest
