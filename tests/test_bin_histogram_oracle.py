"""oracles.bin_histogram against np.histogram (bit for bit) and against exact arithmetic.

Two references: np.histogram itself, whose counts and edges the oracle must
equal on every input, and a plain loop in exact rational arithmetic
(fractions.Fraction) that places each sample by its edges alone, with no
estimate: bin i when edges[i] <= x < edges[i + 1], the last bin closed.
numpy and the exact rule part ways only where numpy's estimate misses by two
bins (float16 arithmetic, subnormal spans) or where numpy rounds a sample
before comparing (64-bit integers past 2^53); those cases are pinned below.
"""

from __future__ import annotations

import bisect
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from histkit import oracles
from histkit.oracles import _threads

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES


def numpy_histogram(samples, bins, range=None):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.histogram(samples, bins, range)


def assert_same_as_numpy(samples, bins, range=None, context=""):
    """Counts and edges bit-identical to np.histogram's; flow tallies add up."""
    where = f"{context} samples={samples!r} bins={bins!r} range={range!r}"
    want_counts, want_edges = numpy_histogram(samples, bins, range)
    counts, edges, flow = oracles.bin_histogram(samples, bins, range, flow=True)
    assert counts.dtype == np.int64, where
    assert edges.dtype == want_edges.dtype, where
    assert edges.tobytes() == want_edges.tobytes(), f"edges differ: {where}"
    np.testing.assert_array_equal(counts, want_counts, err_msg=where)
    flat = np.asarray(samples).reshape(-1)
    nan = int(np.isnan(flat).sum()) if flat.dtype.kind == "f" else 0
    assert flow.nan == nan, where
    assert int(counts.sum()) + flow.underflow + flow.overflow + flow.nan == flat.size, where
    return counts, edges, flow


def assert_same_as_numpy_or_both_raise(samples, bins, range=None, context=""):
    """As assert_same_as_numpy where numpy gives a result; where numpy raises,
    the oracle raises too (a ValueError where numpy's estimate overflows into
    an IndexError, numpy's own type otherwise)."""
    try:
        numpy_histogram(samples, bins, range)
    except IndexError:
        with pytest.raises(ValueError, match="np.histogram raises here too"):
            oracles.bin_histogram(samples, bins, range)
    except (ValueError, TypeError, OverflowError) as error:
        with pytest.raises(type(error)):
            oracles.bin_histogram(samples, bins, range)
    else:
        assert_same_as_numpy(samples, bins, range, context)


def exact(value):
    """A finite number as a Fraction (exact); an infinity stays a float, which
    Fractions compare with exactly."""
    return value if value in (float("inf"), float("-inf")) else Fraction(value)


def exact_counts(samples, edges, right_closed_last=True):
    """(counts, underflow, overflow, nan) by exact rational comparison with the edges.

    Samples are first cast to the edges' dtype, as np.histogram casts them;
    the callers keep to samples whose cast is exact or is the point of the test.
    """
    edges_q = [exact(e) for e in edges.tolist()]
    n = len(edges) - 1
    counts = [0] * n
    under = over = nan = 0
    cast = samples.astype(edges.dtype) if edges.dtype.kind == "f" else samples
    for value in cast.tolist():
        if value != value:
            nan += 1
            continue
        x = exact(value)
        if x < edges_q[0]:
            under += 1
        elif x > edges_q[-1] or (x == edges_q[-1] and not right_closed_last):
            over += 1
        else:
            # the last i with edges[i] <= x; x on the top edge: the last bin
            counts[min(bisect.bisect_right(edges_q, x) - 1, n - 1)] += 1
    return np.array(counts, dtype=np.int64), under, over, nan


def on_edges_and_one_ulp_either_side(edges, dtype):
    """Every edge as a sample of dtype, and its neighbours one ulp down and up."""
    with np.errstate(all="ignore"):
        on = np.asarray(edges).astype(dtype)
        return np.concatenate([on, np.nextafter(on, dtype(np.inf)),
                               np.nextafter(on, dtype(-np.inf))]).astype(dtype)


# --- bit-exact with np.histogram -------------------------------------------------------


def random_case(rng, dtype):
    """Samples of dtype (a random scale, planted edges, NaN and inf for floats) and a range."""
    n = int(rng.integers(0, 400))
    if np.dtype(dtype).kind == "f":
        top = {np.float16: 4, np.float32: 30, np.float64: 200}[dtype]
        scale = 10.0 ** int(rng.integers(-top, top))
        with np.errstate(all="ignore"):
            samples = (rng.standard_normal(n) * scale).astype(dtype)
        if n > 4:
            samples[rng.integers(0, n, 3)] = [np.nan, np.inf, -np.inf]
    else:
        info = np.iinfo(dtype)
        low, high = (info.min, info.max) if rng.integers(2) else (max(info.min, -500),
                                                                   min(info.max, 500))
        samples = rng.integers(low, high, n, dtype=dtype, endpoint=True)
    finite = samples[np.isfinite(samples)] if samples.dtype.kind == "f" else samples
    if len(finite) < 2:
        return samples, None
    lo, hi = sorted(rng.choice(finite, 2).tolist())
    kind = int(rng.integers(4))
    with np.errstate(all="ignore"):
        if kind == 0:
            return samples, None  # the samples' min and max: NaN or inf raise, as numpy
        if kind == 1:
            return samples, (float(lo), float(hi))  # Python floats: weak, the samples' dtype
        if kind == 2:
            return samples, (np.dtype(dtype).type(lo), np.dtype(dtype).type(hi))
        return samples, (np.float64(lo), np.float64(hi))  # strong: float64 edges


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("seed", range(6))
def test_counts_and_edges_equal_np_histogram_on_seeded_random_cases(dtype, seed):
    rng = np.random.default_rng([seed, np.dtype(dtype).num])
    for case in range(25):
        samples, bounds = random_case(rng, dtype)
        bins = int(rng.choice([1, 2, 3, 7, 10, 126, 255, 1000]))
        try:
            edges = np.histogram_bin_edges(samples, bins, bounds)
        except ValueError:
            edges = None
        if edges is not None and samples.dtype.kind == "f" and np.isfinite(edges).all():
            samples = np.concatenate([samples, on_edges_and_one_ulp_either_side(edges, dtype)])
        elif edges is not None and len(samples):
            # integers on (the floor of) each edge and one either side
            info = np.iinfo(dtype)
            near = [int(edge) + step for edge in np.floor(edges).tolist() for step in (-1, 0, 1)
                    if info.min <= int(edge) + step <= info.max]
            samples = np.concatenate([samples, np.array(near, dtype=dtype)])
        assert_same_as_numpy_or_both_raise(samples, bins, bounds, f"seed={seed} case={case}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_random_bit_patterns_nan_inf_and_subnormals_equal_np_histogram(dtype):
    # Every class of float at once, over ranges of every magnitude.
    rng = np.random.default_rng(np.dtype(dtype).num)
    width = np.dtype(dtype).itemsize * 8
    for case in range(40):
        bits = rng.integers(0, 1 << width, 300, dtype=np.uint64).astype(f"u{width // 8}")
        samples = bits.view(dtype)
        finite = samples[np.isfinite(samples)]
        lo, hi = sorted(rng.choice(finite, 2).tolist())
        if lo == hi:
            continue
        bins = int(rng.choice([1, 3, 50, 999]))
        try:
            edges = numpy_histogram(np.zeros(0, dtype), bins, (lo, hi))[1]
        except ValueError:
            edges = np.zeros(0)
        if np.isfinite(edges).all():
            samples = np.concatenate([samples, on_edges_and_one_ulp_either_side(edges, dtype)])
        # Spans past half the dtype's range overflow numpy's estimate: both raise.
        assert_same_as_numpy_or_both_raise(samples, bins, (lo, hi), f"case={case}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    samples=st.sampled_from(FLOAT_DTYPES).flatmap(
        lambda dtype: hnp.arrays(dtype, st.integers(0, 60),
                                 elements=hnp.from_dtype(np.dtype(dtype), allow_nan=True,
                                                         allow_infinity=True))),
    bins=st.integers(1, 40),
    bounds=st.one_of(st.none(), st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e6))),
)
def test_property_any_floats_any_range_equal_np_histogram_or_both_raise(samples, bins, bounds):
    if bounds is not None:
        bounds = (bounds[0], bounds[0] + bounds[1])
    assert_same_as_numpy_or_both_raise(samples, bins, bounds)


@settings(max_examples=100, deadline=None)
@given(
    samples=st.sampled_from(INT_DTYPES).flatmap(
        lambda dtype: hnp.arrays(dtype, st.integers(1, 60))),
    bins=st.integers(1, 40),
    python_ints=st.booleans(),
)
def test_property_integers_with_a_range_from_their_own_values_equal_np_histogram(
        samples, bins, python_ints):
    # Python-int bounds past int64 make numpy fail (hi - lo in int64); a constant
    # past 2^52 cannot widen by 0.5 in float64: numpy fails there too.
    lo, hi = sorted([samples.min(), samples[len(samples) // 2]])
    bounds = (int(lo), int(hi)) if python_ints else (lo, hi)
    assert_same_as_numpy_or_both_raise(samples, bins, bounds)
    assert_same_as_numpy_or_both_raise(samples, bins)


# --- the exact rule, independent of numpy's estimate ---------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("right_closed_last", [True, False])
def test_counts_equal_exact_rational_rule_on_numpys_edges(dtype, right_closed_last):
    # Python-float ranges: numpy estimates in float64 (for float16 samples
    # too) and the estimate never misses by two bins.
    rng = np.random.default_rng(7 + right_closed_last)
    top = 3 if dtype == np.float16 else 30
    for case in range(30):
        magnitude = 10.0 ** int(rng.integers(-top, top))
        lo = float(rng.standard_normal() * magnitude)
        hi = lo + abs(float(rng.standard_normal())) * magnitude
        bins = int(rng.choice([1, 2, 10, 126, 1000]))
        try:
            edges = numpy_histogram(np.zeros(0, dtype), bins, (lo, hi))[1]
        except ValueError:
            continue  # more bins than float16 can separate
        samples = np.concatenate([on_edges_and_one_ulp_either_side(edges, dtype),
                                  (lo + (hi - lo) * rng.random(100)).astype(dtype),
                                  np.array([np.nan, np.inf, -np.inf], dtype)])
        counts, got_edges, flow = oracles.bin_histogram(
            samples, bins, (lo, hi), right_closed_last=right_closed_last, flow=True)
        want = exact_counts(samples, got_edges, right_closed_last)
        where = f"case={case} lo={lo!r} hi={hi!r} bins={bins}"
        np.testing.assert_array_equal(counts, want[0], err_msg=where)
        assert tuple(flow) == want[1:], where


@pytest.mark.parametrize("right_closed_last", [True, False])
def test_explicit_edges_equal_exact_rational_rule_with_ties_infinities_and_nan(
        right_closed_last):
    edges = np.array([-np.inf, -2.5, -0.0, 0.0, 1.0, 1.0, 3.0, 3.0])
    samples = np.concatenate([on_edges_and_one_ulp_either_side(edges[1:], np.float64),
                              [-np.inf, np.inf, np.nan, -1e300, 1e300, 2.0]])
    counts, got_edges, flow = oracles.bin_histogram(samples, edges, flow=True,
                                                    right_closed_last=right_closed_last)
    assert got_edges is edges  # numpy returns the very array it was given
    want = exact_counts(samples, edges, right_closed_last)
    np.testing.assert_array_equal(counts, want[0])
    assert tuple(flow) == want[1:]
    if right_closed_last:
        assert_same_as_numpy(samples, edges)


# --- the traps -------------------------------------------------------------------------


def only_bin(counts):
    (nonzero,) = np.flatnonzero(counts)
    return int(nonzero)


@pytest.mark.parametrize(("x", "bins", "bounds", "naive_bin", "bin_"), [
    (33.0, 126, (0, 126), 32, 33),  # fast-histogram #45
    (1.0, 10, (0.9, 1.1), 4, 5),  # fast-histogram #63
])
def test_fast_histogram_off_by_ones_land_in_numpys_bin(x, bins, bounds, naive_bin, bin_):
    lo, hi = bounds
    assert int((x - lo) * (1 / (hi - lo)) * bins) == naive_bin  # the trap is real
    counts, edges = oracles.bin_histogram([x], bins, bounds)
    assert only_bin(counts) == bin_
    assert edges[bin_] == x  # the sample sits on its bin's lower edge
    assert_same_as_numpy(np.array([x]), bins, bounds)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_maximum_is_in_the_last_bin_and_overflows_under_cubs_convention(dtype):
    samples = np.array([3, 5, 120, 7, 50], dtype=dtype)
    counts, _ = oracles.bin_histogram(samples, 4)
    assert counts[-1] == 1  # 120 only
    assert_same_as_numpy(samples, 4)
    open_counts, _, flow = oracles.bin_histogram(samples, 4, right_closed_last=False, flow=True)
    np.testing.assert_array_equal(open_counts, counts - [0, 0, 0, 1])
    assert flow == (0, 1, 0)


def test_every_edge_and_one_ulp_either_side_as_numpy():
    for dtype in FLOAT_DTYPES:
        for bins, bounds in [(10, (0.9, 1.1)), (126, (0, 126)), (7, (-3.3, 1e-3)),
                             (1000, (-1e10, 3e10)), (3, (1e-300, 1e300))]:
            try:
                edges = numpy_histogram(np.zeros(0, dtype), bins, bounds)[1]
            except ValueError:
                continue
            samples = on_edges_and_one_ulp_either_side(edges, dtype)
            assert_same_as_numpy(samples, bins, bounds, np.dtype(dtype).name)


def test_float16_samples_use_float16_edges_and_arithmetic_as_numpy():
    samples = np.array([0.0, 0.1, 0.2, 0.3, 65504.0, -65504.0, 1e-7, 6e-8, np.nan, np.inf],
                       dtype=np.float16)
    for bounds in [(0.0, 0.3), (np.float16(0.0), np.float16(0.3)), (-1e4, 3e4), (0, 1)]:
        counts, edges, _ = assert_same_as_numpy(samples, 5, bounds)
        assert edges.dtype == np.float16
    assert_same_as_numpy(samples[:4], 5)  # min and max: a linspace in float16
    # -65504 ... 65504: hi - lo overflows float16, the edges are not finite
    assert_same_as_numpy_or_both_raise(samples[:6], 5)


def test_float16_estimate_misses_by_two_bins_and_the_oracle_follows_numpy():
    # Edges over float16 bounds come from a linspace in float16 and are uneven;
    # numpy's float16 estimate lands two bins low and its one upward correction
    # leaves the sample one bin below the bin its edges bracket.
    x = np.float16(0.000778)
    samples = np.array([np.float16(0.0005646), np.float16(0.000883), x])
    counts, edges, _ = assert_same_as_numpy(samples, 143)
    got = only_bin(oracles.bin_histogram(samples[2:], edges)[0])
    assert got == 97  # by the edges: edges[97] <= x < edges[98]
    assert edges[97] <= x < edges[98]
    assert counts[96] == 1 and counts[97] == 0  # numpy's bin, one low


def test_subnormal_span_estimate_misses_and_the_oracle_follows_numpy():
    x = np.array([4.35e-322])
    bounds = (3.26e-322, 4.056e-321)
    counts, edges, _ = assert_same_as_numpy(x, 340, bounds)
    assert only_bin(counts) == 10
    assert only_bin(exact_counts(x, edges)[0]) == 11  # edges[11] == x: exactly, bin 11
    assert edges[11] == x[0]


def test_subnormal_samples_and_ranges_equal_np_histogram():
    tiny = np.finfo(np.float64).smallest_subnormal
    samples = np.arange(-40, 41) * tiny
    for bins in (1, 3, 7, 40):
        assert_same_as_numpy(samples, bins)
        assert_same_as_numpy(samples, bins, (-20 * tiny, 20 * tiny))
    with pytest.raises(ValueError, match="not strictly increasing"):
        oracles.bin_histogram(samples, 81)  # 81 bins over 80 steps: an empty bin
    assert_same_as_numpy(samples.astype(np.float32), 5, (0.0, 1e-44))


def test_negative_zero_is_zero_on_edges_and_samples():
    samples = np.array([-0.0, 0.0, -0.0, 1.0])
    counts, edges, _ = assert_same_as_numpy(samples, 2)
    assert counts.tolist() == [3, 1]
    assert_same_as_numpy(samples, 2, (-0.0, 1.0))
    assert_same_as_numpy(samples, 2, (0.0, 1.0))
    assert_same_as_numpy(np.array([-0.0, 0.0]), 3)  # lo == hi == 0: widened by 0.5
    assert oracles.bin_histogram(samples, np.array([-0.0, 0.0, 1.0]))[0].tolist() == [0, 4]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 17, 1000, 1 << 17])
def test_a_zero_maximum_or_minimum_of_either_sign_gives_numpys_edge_sign(dtype, n):
    # with range=None the top (bottom) edge is numpy's max (min): of -0.0 and
    # 0.0 numpy's reduction keeps one, and the edge's sign is that one's
    rng = np.random.default_rng(n)
    for low_side in (False, True):
        samples = -rng.random(n).astype(dtype) if not low_side else rng.random(n).astype(dtype)
        for first, second in ((-0.0, 0.0), (0.0, -0.0)):
            samples[rng.integers(0, n)] = first
            samples[rng.integers(0, n)] = second
            assert_same_as_numpy(samples, 5, context=f"zeros {first}, {second}")


def test_long_double_samples_edges_and_bounds_are_refused_by_dtype():
    wide = np.longdouble
    if np.finfo(wide).bits <= 64:
        pytest.skip("long double is float64 on this platform")
    name = np.dtype(wide).name
    for samples, bins, range_, what in [
            (np.array([0.5], wide), 2, (0, 1), "samples"),
            (np.array([0.5], wide), np.array([0.0, 0.5, 1.0]), None, "samples"),
            (np.array([0.5]), np.array([0.0, 0.5, 1.0], wide), None, "bins as edges")]:
        with pytest.raises(TypeError, match=f"^{what} must have a float16, float32, float64 "
                                            f"or integer dtype; got {name}$"):
            oracles.bin_histogram(samples, bins, range_)


def test_infinities_outside_a_range_are_flow_and_without_a_range_raise():
    samples = np.array([-np.inf, 0.5, np.inf, np.nan])
    counts, _, flow = oracles.bin_histogram(samples, 2, (0, 1), flow=True)
    assert counts.tolist() == [0, 1]
    assert flow == (1, 1, 1)
    with pytest.raises(ValueError, match="not finite"):
        oracles.bin_histogram(samples, 2)
    with pytest.raises(ValueError, match="not finite"):
        oracles.bin_histogram(np.array([0.5, np.nan]), 2)


def test_nan_samples_are_never_counted_but_tallied():
    samples = np.array([np.nan, 0.25, np.nan, 0.75, -np.nan])
    counts, _, flow = oracles.bin_histogram(samples, 2, (0, 1), flow=True)
    assert counts.tolist() == [1, 1]
    assert flow == (0, 0, 3)
    counts, _, flow = oracles.bin_histogram(samples, [0, 0.5, np.inf], flow=True)
    assert counts.tolist() == [1, 1] and flow.nan == 3


def test_int64_past_2_53_rounds_to_float64_before_comparing_as_numpy_does():
    # 2^54 - 1 lies below the edge 2^54, but rounds to it in float64: numpy
    # (and so the oracle) puts it in the upper bin; exact arithmetic would not.
    x = np.array([2**54 - 1], dtype=np.int64)
    counts, edges, _ = assert_same_as_numpy(x, 2, (0, 2**55))
    assert edges[1] == 2.0**54
    assert counts.tolist() == [0, 1]
    edges = np.array([0.0, 2.0**54, 2.0**55])
    assert oracles.bin_histogram(x, edges)[0].tolist() == [0, 1]
    assert_same_as_numpy(x, edges)
    # Against integer edges the comparison is exact: the lower bin.
    assert oracles.bin_histogram(x, np.array([0, 2**54, 2**55]))[0].tolist() == [1, 0]
    assert_same_as_numpy(x, np.array([0, 2**54, 2**55]))


def test_integers_past_2_53_with_their_own_min_and_max_and_a_python_int_range():
    rng = np.random.default_rng(11)
    for dtype, base in [(np.int64, 2**62), (np.int64, -(2**63)), (np.uint64, 2**64 - 2**41)]:
        samples = (np.array(base, dtype=object) + rng.integers(0, 2**40, 500)).astype(dtype)
        samples[:2] = samples.min(), samples.max()
        for bins in (1, 3, 17, 1000):
            assert_same_as_numpy(samples, bins)
            assert_same_as_numpy(samples, bins, (samples[5], samples.max()))
            # Python ints past int64 (uint64 bounds): numpy fails on hi - lo
            assert_same_as_numpy_or_both_raise(samples, bins, (int(samples[5]),
                                                               int(samples.max())))
    # uint64 samples against int64 edges compare in float64 (numpy's promotion)
    samples = np.array([2**63 + 1, 2**64 - 1, 5], dtype=np.uint64)
    assert_same_as_numpy(samples, np.array([0, 2**62, 2**63 - 1], dtype=np.int64))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_lo_equal_hi_widens_by_half_as_numpy(dtype):
    samples = np.full(5, 7, dtype=dtype)
    counts, edges, _ = assert_same_as_numpy(samples, 3)
    assert counts.tolist() == [0, 5, 0]
    assert_same_as_numpy(samples, 1, (7, 7))
    assert_same_as_numpy(samples, 4, (7.0, 7.0))


def test_float16_lo_equal_hi_past_2048_cannot_widen_and_raises_as_numpy():
    samples = np.full(3, 4096, dtype=np.float16)  # 4096 - 0.5 rounds back to 4096
    with pytest.raises(ValueError):
        numpy_histogram(samples, 3)
    with pytest.raises(ValueError, match="not strictly increasing"):
        oracles.bin_histogram(samples, 3)


@pytest.mark.parametrize("num_bins", [2**16 - 1, 2**16, 2**17])
def test_float16_edges_of_a_span_past_float16_are_numpys_nan_edges_at_any_bin_count(num_bins):
    # (-60000, 60000) spans more than float16 holds: numpy's float16 linspace
    # gives NaN edges, which pass its strictly-increasing test; past 2^16 bins
    # too, so the oracle computes them there as numpy does rather than refuse
    span = (np.float16(-60000), np.float16(60000))
    assert_same_as_numpy(np.array([], np.float16), num_bins, span)
    assert_same_as_numpy_or_both_raise(np.array([0.0, np.inf], np.float16), num_bins, span)


def test_float16_edges_of_2_16_bins_over_a_finite_span_raise_as_numpy():
    samples = np.array([0.25], np.float16)
    with pytest.raises(ValueError):
        numpy_histogram(samples, 2**16, (np.float16(0), np.float16(1)))
    with pytest.raises(ValueError, match="not strictly increasing"):
        oracles.bin_histogram(samples, 2**16, (np.float16(0), np.float16(1)))


def test_float16_negative_zeros_and_one_below_are_binned_by_their_edges():
    # np.sort of float16 with AVX-512 (numpy 2.4.6, AVX512_ICL) can misplace
    # the -1.0 among -0.0s, and np.histogram's explicit-edges path sorts;
    # judged here by a plain loop over the edges, not by numpy
    samples = np.full(513, -0.0, np.float16)
    samples[-1] = -1.0
    edges = [-2.0, -0.5, 0.5]
    by_loop = [sum(1 for x in samples.tolist() if edges[b] <= x < edges[b + 1]
                   or (b == 1 and x == edges[2])) for b in range(2)]
    assert by_loop == [1, 512]
    assert oracles.bin_histogram(samples, edges)[0].tolist() == by_loop


def test_one_bin_holds_every_sample_in_range():
    samples = np.array([1.0, 2.0, 2.0, 3.0, 9.0])
    counts, edges, flow = oracles.bin_histogram(samples, 1, (1, 3), flow=True)
    assert counts.tolist() == [4] and edges.tolist() == [1.0, 3.0] and flow == (0, 1, 0)
    assert_same_as_numpy(samples, 1)
    assert_same_as_numpy(samples, [2.0, 3.0])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_empty_samples_give_zero_counts_and_numpys_edges(dtype):
    empty = np.zeros(0, dtype=dtype)
    counts, edges, flow = assert_same_as_numpy(empty, 4)  # edges over [0, 1]
    assert counts.tolist() == [0, 0, 0, 0] and flow == (0, 0, 0)
    assert_same_as_numpy(empty, 4, (-1, 1))
    assert_same_as_numpy(empty, [0, 1, 2])
    assert_same_as_numpy([], 2)


def test_zero_and_one_edge_give_no_bins_as_numpy():
    samples = np.array([0.5, 1.0, 2.0])
    for edges in ([], [1.0]):
        counts, got, _ = assert_same_as_numpy(samples, np.array(edges))
        assert counts.size == 0


# --- explicit edges ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("edge_dtype", [np.float64, np.float32, np.int64, np.uint8],
                         ids=lambda d: np.dtype(d).name)
def test_explicit_edges_equal_np_histogram_in_every_dtype_pairing(dtype, edge_dtype):
    rng = np.random.default_rng([np.dtype(dtype).num, np.dtype(edge_dtype).num])
    if np.dtype(dtype).kind == "f":
        samples = (rng.standard_normal(500) * 100).astype(dtype)
    else:
        info = np.iinfo(dtype)
        samples = rng.integers(max(info.min, -300), min(info.max, 300), 500, dtype=dtype)
    for size in (2, 3, 17, 64, 300):
        edges = np.sort(rng.choice(np.arange(-250, 250), size)).astype(edge_dtype)
        edges = np.sort(edges)  # uint8 wraps the negatives: sort again
        samples_with_edges = np.concatenate([samples, edges.astype(dtype)])
        assert_same_as_numpy(samples_with_edges, edges, context=f"size={size}")


def test_range_is_ignored_with_explicit_edges_as_numpy():
    samples = np.array([0.5, 1.5, 2.5])
    counts, edges = oracles.bin_histogram(samples, [0, 1, 2, 3], range=(np.nan, 7))
    assert counts.tolist() == [1, 1, 1]


# --- CUB's convention ----------------------------------------------------------------


@pytest.mark.parametrize("bins", [5, np.array([0.0, 0.1, 0.2, 0.5, 1.0])])
def test_right_closed_last_false_moves_only_samples_on_the_top_edge_to_overflow(bins):
    rng = np.random.default_rng(3)
    samples = np.concatenate([rng.random(1000), [1.0, 1.0, 0.0, np.nextafter(1.0, 0)]])
    closed, edges, closed_flow = oracles.bin_histogram(samples, bins, (0, 1), flow=True)
    half_open, _, open_flow = oracles.bin_histogram(samples, bins, (0, 1), flow=True,
                                                    right_closed_last=False)
    on_top = int((samples == edges[-1]).sum())
    assert on_top >= 2
    np.testing.assert_array_equal(half_open[:-1], closed[:-1])
    assert half_open[-1] == closed[-1] - on_top
    assert open_flow.overflow == closed_flow.overflow + on_top


# --- inputs, errors, threads ---------------------------------------------------------


def test_strided_reversed_big_endian_and_2d_samples_equal_np_histogram():
    base = np.random.default_rng(5).standard_normal(30_001)
    for samples in (base[::3], base[::-1], base[5:-7:2], base.astype(">f8"),
                    base[:30_000].reshape(100, 300), base[:30_000].reshape(300, 100).T,
                    base.astype(np.float32)[::2]):
        assert_same_as_numpy(samples, 33)
        assert_same_as_numpy(samples, 33, (-1, 2))
        assert_same_as_numpy(samples, np.linspace(-2, 2, 9))


@pytest.mark.parametrize("samples", [
    np.array([True, False]), np.array([1 + 2j]), np.array(["a"]), np.array([1.0], np.longdouble),
    np.array([object()]), None,
], ids=["bool", "complex", "str", "longdouble", "object", "None"])
def test_samples_that_are_not_real_numbers_raise_type_error(samples):
    with pytest.raises(TypeError, match="samples"):
        oracles.bin_histogram(samples, 3, (0, 1))


@pytest.mark.parametrize(("bins", "bounds", "error", "match"), [
    (3, (np.nan, 1.0), ValueError, "range must be finite; lo is nan"),
    (3, (0.0, np.inf), ValueError, "range must be finite; hi is inf"),
    (3, (-np.inf, np.inf), ValueError, "range must be finite"),
    (3, (2.0, 1.0), ValueError, "lo <= hi"),
    (3, (0.0,), ValueError, "pair"),
    (3, ("a", 1), TypeError, "real numbers"),
    (0, None, ValueError, "bins must be >= 1"),
    (-2, None, ValueError, "bins must be >= 1"),
    (2.5, None, TypeError, "bins must be an int"),
    (True, None, TypeError, "bins must be an int"),
    ("auto", None, TypeError, "not supported"),
    (np.zeros((2, 2)), None, ValueError, "1-d"),
    ([0.0, 2.0, 1.0], None, ValueError, "increase monotonically when an array; edge 2"),
    ([0.0, np.nan, 1.0], None, ValueError, "NaN"),
    (np.array([1.0, 2.0], np.longdouble), None, TypeError, "edges"),
    (10**6, (0, 1e-318), ValueError, "not strictly increasing"),
])
def test_bad_bins_and_ranges_raise_before_any_counting(bins, bounds, error, match):
    with pytest.raises(error, match=match):
        oracles.bin_histogram(np.array([0.5, 1.0]), bins, bounds)


def test_a_span_numpys_estimate_overflows_on_raises_value_error_as_numpy_raises():
    samples = np.array([0.0, 3e38, -3e38], dtype=np.float32)
    with pytest.raises(IndexError):
        numpy_histogram(samples, 4, (-3e38, 3e38))
    with pytest.raises(ValueError, match=r"index 1 \(3\.0000000054977558e\+38\).*float32"):
        oracles.bin_histogram(samples, 4, (-3e38, 3e38))
    # One bin over (-1e308, 1e308): numpy's first edge is NaN, and it still counts.
    assert_same_as_numpy(np.array([0.5, -1e307]), 1, (-1e308, 1e308))


def test_too_many_bins_for_memory_raise_memory_error_before_any_work():
    with pytest.raises(MemoryError, match="bins="):
        oracles.bin_histogram(np.array([0.5]), 2**60, (0, 1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.uint8])
def test_counts_do_not_depend_on_the_number_of_threads(idle_machine, dtype):
    rng = np.random.default_rng(9)
    samples = (rng.standard_normal(1 << 19) * 50).astype(dtype)
    calls = [(7, None), (256, None), (1000, (-100.0, 100.0)), (np.linspace(-100, 100, 65), None)]
    many = [oracles.bin_histogram(samples, bins, bounds, flow=True) for bins, bounds in calls]
    with _threads.at_most(1):
        one = [oracles.bin_histogram(samples, bins, bounds, flow=True) for bins, bounds in calls]
    for (c1, e1, f1), (c2, e2, f2) in zip(many, one, strict=True):
        np.testing.assert_array_equal(c1, c2)
        assert e1.tobytes() == e2.tobytes() and f1 == f2
    assert_same_as_numpy(samples, 256)


def test_first_failing_sample_is_reported_whatever_the_chunks(idle_machine):
    samples = np.zeros(1 << 19, dtype=np.float32)
    samples[300_000] = 3e38
    samples[400_000] = 2e38
    with pytest.raises(ValueError, match="index 300000"):
        oracles.bin_histogram(samples, 4, (-3e38, 3e38))


@pytest.mark.parametrize(("bins", "bounds", "takes_walk"), [
    (256, (0.0, 1.0), True), (1000, (-1e10, 3e10), True), (126, (0.0, 126.0), True),
    (3, (0.0, 1e-320), False), (9, (-1e307, 1.5e308), False)])
def test_the_bracketing_walk_is_taken_only_where_bounded_and_equals_numpy(bins, bounds,
                                                                            takes_walk):
    # where oracles._estimate bounds both estimates within one bin, the oracle
    # bins by a cheap estimate and two steps; elsewhere by numpy's own steps.
    # Either way np.histogram decides: every edge, one ulp either side, and
    # seeded samples over the span.
    from histkit.oracles._bin_rule import even_rule
    from histkit.oracles._estimate import bracket_per_unit

    edges = np.histogram_bin_edges([], bins, bounds)
    near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    uniform = np.random.default_rng(bins).uniform(bounds[0], bounds[1], 20_000)
    samples = np.concatenate([near, uniform])
    rule = even_rule(samples, bins, bounds, lambda: None)
    assert (bracket_per_unit(rule) > 0) == takes_walk
    counts, got_edges = oracles.bin_histogram(samples, bins, bounds)
    want, want_edges = np.histogram(samples, bins, bounds)
    assert np.array_equal(counts, want) and np.array_equal(got_edges, want_edges)


@pytest.mark.parametrize("samples,bins,bounds", [
    (np.float16([1.0]), 1, (np.float64(0.9998), 0.9999)),
    (np.float16([0.5, 1.0]), 3, (np.float64(0.9997), 0.9999)),
    (np.float32([1.0]), 1, (np.float64(0.99999998), 0.99999999)),
])
def test_a_kept_sample_past_the_top_edge_that_numpy_has_no_bin_for_raises_as_numpy(
        samples, bins, bounds):
    # numpy keeps the sample by comparing it with the Python-float top in the
    # samples' dtype (float16(0.9999) == 1.0), then finds no bin for it among
    # the float64 edges: np.histogram raises, and so must the oracle, with
    # or without weights, never count it in the last bin
    with pytest.raises(IndexError):
        np.histogram(samples, bins, bounds)
    with pytest.raises(ValueError, match="has no bin for the sample at index"):
        oracles.bin_histogram(samples, bins, bounds)
    with pytest.raises(ValueError, match="has no bin for the sample at index"):
        oracles.bin_histogram(samples, bins, bounds, weights=np.ones(len(samples)))


def test_kept_samples_past_the_edges_that_numpy_does_bin_are_binned_as_numpy_bins_them():
    # the same kept-past-the-top sample, where numpy's estimate still names
    # the last bin: numpy counts it there
    samples = np.float16([0.25, 0.5, 0.9995, 1.0])
    for bounds in [(np.float64(0.0), 0.9999), (np.float64(0.5), 0.9999)]:
        want = np.histogram(samples, 4, bounds)
        got = oracles.bin_histogram(samples, 4, bounds)
        assert np.array_equal(got[0], want[0]) and got[1].tobytes() == want[1].tobytes()
        assert got[0][-1] >= 1  # 1.0 is past the top edge 0.9999, yet counted


# --- weights: each bin's exact sum ---------------------------------------------


def _numpy_bin_of_each(samples, bins, range):
    """Each sample's bin as np.histogram places it alone (range given or
    edges: its rule does not depend on the other samples), or None."""
    placed = []
    for x in samples:
        counts, _ = numpy_histogram(np.array([x], dtype=samples.dtype), bins, range)
        hit = np.flatnonzero(counts)
        placed.append(int(hit[0]) if len(hit) else None)
    return placed


def test_weights_of_one_sum_to_the_counts_on_every_quick_binning_case():
    # the weighted path writes each sample's counter out instead of counting:
    # every rule's branch must put each sample where the counting path does
    from histkit.conformance.binning_cases import bin_cases
    from histkit.oracles._bin_rule import NumpyFailsError

    checked = 0
    for case in bin_cases(quick=True):
        kwargs = dict(right_closed_last=case.right_closed_last, flow=True)
        try:
            counts, edges, flow = oracles.bin_histogram(case.samples, case.bins, case.range,
                                                        **kwargs)
        except NumpyFailsError:
            continue
        ones = np.ones(np.shape(case.samples), dtype=np.float32)
        sums, same_edges, sum_flow = oracles.bin_histogram(case.samples, case.bins,
                                                           case.range, weights=ones, **kwargs)
        assert sums.dtype == np.float64 and np.array_equal(sums, counts), case.name
        assert same_edges.tobytes() == edges.tobytes() and sum_flow == flow, case.name
        checked += 1
    assert checked > 300


def test_weights_sum_exactly_in_the_bin_numpy_gives_each_sample():
    # bins from np.histogram one sample at a time, sums from math.fsum
    import math

    from histkit.conformance.binning_cases import bin_cases

    rng = np.random.default_rng(5)
    checked = 0
    for case in bin_cases(quick=True):
        samples = np.ravel(case.samples)
        if not case.right_closed_last or len(samples) > 100 or not len(samples):
            continue
        if case.range is None and np.ndim(case.bins) == 0:
            continue  # its bins follow the samples' min and max
        try:
            placed = _numpy_bin_of_each(samples, case.bins, case.range)
            want_counts, _ = numpy_histogram(samples, case.bins, case.range)
        except (ValueError, IndexError):
            continue  # numpy's own code fails here
        weights = rng.standard_normal(len(samples)) * 10.0 ** rng.integers(-12, 13, len(samples))
        weights[::3] *= -1e15
        sums, _ = oracles.bin_histogram(samples, case.bins, case.range, weights=weights)
        want = [math.fsum(w for w, b in zip(weights, placed, strict=True) if b == k)
                for k in range(len(want_counts))]
        assert sums.tolist() == want, case.name
        checked += 1
    assert checked > 100


def test_weights_follow_the_samples_shape_and_are_refused_before_any_work():
    samples = np.array([[0.1, 0.6], [0.7, 0.2]])
    sums, _ = oracles.bin_histogram(samples, 2, (0, 1), weights=[[1.0, 2.0], [4.0, 8.0]])
    assert sums.tolist() == [9.0, 6.0]
    with pytest.raises(ValueError, match=r"weights must have the samples' shape \(2, 2\)"):
        oracles.bin_histogram(samples, 2, (0, 1), weights=[1.0, 2.0, 4.0, 8.0])
    with pytest.raises(TypeError, match="weights must be float16, float32, float64 or integer"):
        oracles.bin_histogram(samples.ravel(), 2, (0, 1), weights=np.ones(4, dtype=bool))


def test_python_int_weights_are_read_as_histogram_reads_them():
    # a list of Python ints as int64 or uint64, exactly; where no integer dtype
    # holds them all, a ValueError (numpy would round them through float64)
    samples = [0.5, 0.5]
    sums, _ = oracles.bin_histogram(samples, 1, (0, 1), weights=[2**63 + 1025, 2**63 + 1])
    assert sums.tolist() == [float(Fraction(2**64 + 1026))]
    with pytest.raises(ValueError, match="no integer dtype holds together"):
        oracles.bin_histogram(samples, 1, (0, 1), weights=[-1, 2**63 + 1025])
    with pytest.raises(ValueError, match="no integer dtype holds together"):
        oracles.histogram([0, 0], 1, weights=[-1, 2**63 + 1025])
