"""The bound behind bin_histogram.cu's bracketing walk, on the CPU.

Where oracles._estimate.numpy_estimate_within_one_bin says numpy's even-bin estimate is
within one bin, the kernel places a sample in the bin whose edges bracket it
(``edges[i] <= x < edges[i + 1]``, the last bin closed unless CUB's rule)
instead of taking numpy's steps. Here that placement is modelled with
np.searchsorted on the edges and compared with oracles.bin_histogram on every
case the bound admits: the conformance case set, and random spans and bin
counts with samples on every edge and one ulp either side.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from histkit import oracles
from histkit.conformance.binning_cases import bin_cases
from histkit.gpu.binning import kernel_rule_for
from histkit.oracles._bin_rule import as_sample_array, parse_bins
from histkit.oracles._estimate import numpy_estimate_within_one_bin


def bracketed_counts(samples: np.ndarray, bins, range, closed_last: bool):
    """(counts by bracketing edges, or None where the bound does not admit the call)."""
    num_bins, edges = parse_bins(bins)
    rule, returned, even = kernel_rule_for(samples, num_bins, edges, range, closed_last)
    if rule.defines.get("ESTIMATE_WITHIN_ONE") != "1":
        return None
    any_low, any_high, low, high = even.keep
    if not (any_low and any_high):
        return np.zeros(len(returned) - 1, np.int64)
    values = samples.astype(np.float64) if samples.dtype.kind == "f" else samples
    with np.errstate(invalid="ignore"):
        kept = (values >= low) & (values <= high)
    n = len(returned) - 1
    with np.errstate(invalid="ignore"):
        found_all = np.searchsorted(returned.astype(np.float64),
                                    samples.astype(returned.dtype).astype(np.float64),
                                    "right") - 1
    found = found_all[kept]
    assert (found >= 0).all(), "a kept sample below the first edge: numpy fails there"
    # the kernel's walk: two steps from its cheap estimate, in the edges' type
    np.testing.assert_array_equal(
        two_step_walk(rule.edges, samples[kept].astype(rule.edges.dtype), rule.lo,
                      rule.scale / rule.width), np.minimum(found, n - 1))
    if rule.fast is not None:
        # every sample the estimate alone places, kept or not, must be kept
        # and land in its bracketing bin
        admitted, fast_bins = estimate_alone(rule.edges, samples.astype(rule.edges.dtype),
                                             rule.lo, rule.scale / rule.width, rule.fast)
        assert kept[admitted].all(), "the estimate alone placed a sample numpy drops"
        np.testing.assert_array_equal(fast_bins[admitted], found_all[admitted])
        # and so must every sample the estimate and one edge place
        admitted, near_bins = one_edge(rule.edges, samples.astype(rule.edges.dtype), rule.lo,
                                       rule.scale / rule.width)
        assert kept[admitted].all(), "one edge placed a sample numpy drops"
        np.testing.assert_array_equal(near_bins[admitted], found_all[admitted])
    on_top = found >= n
    found = np.minimum(found, n - 1) if closed_last else found[~on_top]
    return np.bincount(found, minlength=n)


def estimate_alone(edges: np.ndarray, x: np.ndarray, lo: float, per_unit: float, margin):
    """bin_histogram.cu's Bracket.estimate_alone, in numpy: (admitted, bin).
    The kernel takes floor(t) by an add rounded down, and its fraction
    t - floor(t) exactly; it admits a fraction above the margin and below
    1 - margin rounded up into the dtype."""
    kind = edges.dtype.type
    exact_below_one = 1 - Fraction(float(kind(margin)))
    below_one = kind(float(exact_below_one))
    if Fraction(float(below_one)) < exact_below_one:
        below_one = np.nextafter(below_one, kind(np.inf))
    with np.errstate(all="ignore"):
        t = (x - kind(lo)) * kind(per_unit)
        whole = np.where(np.isfinite(t), np.floor(t), -1)
        fraction = np.where(np.isfinite(t), t - whole, 0)
    admitted = ((fraction > kind(margin)) & (fraction < below_one) & (whole >= 0)
                & (whole < len(edges) - 1))
    return admitted, np.where(admitted, whole, 0).astype(np.int64)


def one_edge(edges: np.ndarray, x: np.ndarray, lo: float, per_unit: float):
    """bin_histogram.cu's Bracket.one_edge, in numpy: (admitted, bin). c is
    the integer nearest the estimate (halves up); a sample is placed where c
    and c - 1 are both bins, in c where it is not below edges[c]."""
    kind = edges.dtype.type
    with np.errstate(all="ignore"):
        t = (x - kind(lo)) * kind(per_unit)
        finite = np.isfinite(t)
        whole = np.where(finite, np.floor(t), -1)
        c = whole + (np.where(finite, t - whole, 0) >= 0.5)
    admitted = finite & (c >= 1) & (c <= len(edges) - 2)
    at = np.where(admitted, c, 1).astype(np.int64)
    return admitted, at - (x < edges[at])


def two_step_walk(edges: np.ndarray, x: np.ndarray, lo: float, per_unit: float):
    """bin_histogram.cu's Bracket, in numpy: the estimate rounded in the
    edges' type, clamped, one step down and one step up."""
    kind = edges.dtype.type
    with np.errstate(all="ignore"):
        estimate = (x - kind(lo)) * kind(per_unit)
    last = len(edges) - 2
    b = np.where(~(estimate >= 1), 0,
                 np.where(estimate >= kind(last), last, np.nan_to_num(estimate))).astype(np.int64)
    b -= (b > 0) & (x < edges[b])
    b += (b < last) & (x >= edges[np.minimum(b + 1, last + 1)])
    return b


def test_the_estimate_alone_places_almost_every_float32_sample_over_many_bins():
    # The margin counts only estimates that stray past their edge's index:
    # the float just below an edge sits inside the bin before it, however
    # coarse the float grid is there (2^-8 of a bin near 1.0 over 65536 bins).
    rng = np.random.default_rng(11)
    # Over (0, 1) floor(t) is every sample's bin (FLOOR_IS_THE_BIN): all placed.
    for bins, span, placed in (((2**16, (0.0, 1.0), 1.0), (2**16, (-0.1, 1.3), 0.99),
                                (4096, (-0.1, 1.3), 0.999), (256, (0.0, 1.0), 1.0))):
        edges = np.linspace(*span, bins + 1, dtype=np.float32)
        samples = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)),
                                  np.nextafter(edges, np.float32(np.inf)),
                                  rng.uniform(*span, 20_000).astype(np.float32)])
        rule, returned, _ = kernel_rule_for(samples, bins, None, span, True)
        np.testing.assert_array_equal(rule.edges, edges)
        assert rule.fast is not None
        want = np.searchsorted(edges, samples, "right") - 1
        admitted, fast_bins = estimate_alone(edges, samples, rule.lo, rule.scale / rule.width,
                                             rule.fast)
        np.testing.assert_array_equal(fast_bins[admitted], want[admitted])
        near, near_bins = one_edge(edges, samples, rule.lo, rule.scale / rule.width)
        np.testing.assert_array_equal(near_bins[near], want[near])
        # what the estimate leaves, one edge places (but at the first and last edges)
        assert (admitted | near)[-20_000:].mean() > 0.9999, (bins, span)
        share = admitted[-20_000:].mean()
        assert share >= placed, (bins, span, share)


def test_the_walk_over_explicit_edges_near_an_even_grid_finds_the_bracketing_bin():
    from histkit.gpu.launch.binning import edges_kernel_rule

    rng = np.random.default_rng(3)
    for n in (1, 7, 64, 4096, 1 << 16):
        lo, hi = sorted(rng.normal(size=2) * 10.0 ** rng.integers(-3, 4))
        edges = np.linspace(lo, hi, n + 1)
        rule = edges_kernel_rule(edges, True)
        assert rule.defines.get("EDGES_NEAR_EVEN") == "1", n
        x = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf),
                            rng.uniform(lo, hi, 5000)])
        x = x[(x >= edges[0]) & (x < edges[-1])]
        want = np.searchsorted(edges, x, "right") - 1
        np.testing.assert_array_equal(two_step_walk(edges, x, rule.lo, rule.scale), want)
        admitted, fast_bins = estimate_alone(edges, x, rule.lo, rule.scale, rule.fast)
        assert admitted[-1000:].mean() > 0.5, n  # the uniform samples, mostly far from edges
        np.testing.assert_array_equal(fast_bins[admitted], want[admitted])
        admitted, near_bins = one_edge(edges, x, rule.lo, rule.scale)
        # all but the half bins at either end (one bin: none)
        assert admitted[-1000:].mean() > 1 - 1.2 / n, n
        np.testing.assert_array_equal(near_bins[admitted], want[admitted])
    # uneven edges keep the search
    assert "EDGES_NEAR_EVEN" not in edges_kernel_rule(np.array([0.0, 1, 10, 100]), True).defines


def _oracle_counts(samples, bins, range, closed_last):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return oracles.bin_histogram(samples, bins, range, right_closed_last=closed_last)[0]


def test_bracketing_equals_numpys_rule_on_every_admitted_case_of_the_case_set():
    admitted = 0
    for case in bin_cases(quick=True):
        if np.ndim(case.bins):
            continue
        samples = as_sample_array(case.samples)
        try:
            want = _oracle_counts(samples, case.bins, case.range, case.right_closed_last)
        except ValueError:
            continue
        got = bracketed_counts(samples, case.bins, case.range, case.right_closed_last)
        if got is not None:
            admitted += 1
            np.testing.assert_array_equal(got, want, err_msg=case.name)
    assert admitted > 200


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
def test_bracketing_equals_numpys_rule_on_random_spans_with_samples_on_every_edge(dtype):
    rng = np.random.default_rng(int(np.dtype(dtype).num))
    admitted = 0
    for _ in range(60):
        scale = 10.0 ** rng.integers(-6, 7) if np.dtype(dtype).kind == "f" else 10.0 ** 4
        lo = float(rng.normal() * scale)
        hi = lo + float(rng.exponential() * scale) + scale * 1e-3
        num_bins = int(rng.choice([1, 3, 7, 10, 126, 1000, 4096]))
        edges = np.linspace(lo, hi, num_bins + 1).astype(dtype)
        near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)]
                              ) if np.dtype(dtype).kind == "f" else np.concatenate(
                                  [edges, edges - 1, edges + 1])
        samples = np.concatenate([near, rng.uniform(lo, hi, 2000)]).astype(dtype)
        for closed_last in (True, False):
            try:
                want = _oracle_counts(samples, num_bins, (lo, hi), closed_last)
            except ValueError:
                continue
            got = bracketed_counts(samples, num_bins, (lo, hi), closed_last)
            if got is not None:
                admitted += 1
                np.testing.assert_array_equal(got, want, err_msg=f"{lo}, {hi}, {num_bins}")
    assert admitted > 0


def test_spans_numpy_cannot_estimate_within_one_bin_are_refused():
    edges = np.linspace(0, 1, 11)
    assert numpy_estimate_within_one_bin(edges, 0.0, 1.0, 10.0, 64, 64)
    # float16 arithmetic over 2048 bins: its rounding alone is a bin
    assert not numpy_estimate_within_one_bin(np.linspace(0, 1, 2049), 0.0, 1.0, 2048.0, 16, 16)
    # a subnormal span: x - lo rounds by whole bins
    tiny = np.linspace(0, 5e-322, 9)
    assert not numpy_estimate_within_one_bin(tiny, 0.0, 5e-322, 8.0, 64, 64)
    # x - lo may overflow
    assert not numpy_estimate_within_one_bin(np.linspace(-1.7e308, 1.7e308, 3), -1.7e308,
                                             np.inf, 2.0, 64, 64)


def test_every_case_of_the_case_set_gets_a_kernel_rule_or_numpys_own_error():
    # the launcher's rule is derived on the host: no case may break it
    for case in bin_cases(quick=True):
        samples = as_sample_array(case.samples)
        try:
            _oracle_counts(samples, case.bins, case.range, case.right_closed_last)
        except ValueError:
            continue
        rule = kernel_rule_for(samples, *parse_bins(case.bins), case.range,
                               case.right_closed_last)[0]
        assert len(rule.edges) == rule.num_bins + 1, case.name


def test_every_case_numpy_fails_on_has_a_rule_that_says_it_may_fail():
    # gpu.bin_histogram waits to read the bad-sample slot back only where the
    # rule says a sample may fail: a case numpy fails on with a rule that says
    # none can would return counts where numpy raises
    from histkit.conformance.binning import all_cases

    failing = 0
    for case in all_cases(quick=False):
        samples = as_sample_array(case.samples)
        num_bins, edges = parse_bins(case.bins)
        try:
            rule = kernel_rule_for(samples, num_bins, edges, case.range,
                                   case.right_closed_last)[0]
        except (TypeError, ValueError, OverflowError):
            continue  # refused before any sample is binned
        try:
            _oracle_counts(samples, case.bins, case.range, case.right_closed_last)
        except oracles.NumpyFailsError:
            failing += 1
            assert rule.may_fail, case.name
    assert failing == 4  # failing_cases, each under both conventions


def test_only_even_bins_without_the_one_bin_bound_may_fail():
    samples = np.float32([0, 1, 3e38, -3e38])
    assert kernel_rule_for(samples, 4, None, (-3.4e38, 3.4e38), True)[0].may_fail
    assert not kernel_rule_for(samples, 4, None, (0, 1), True)[0].may_fail
    edges = np.array([-np.inf, 0, 1, np.inf])
    assert not kernel_rule_for(samples, None, edges, None, True)[0].may_fail


def test_the_estimate_alone_is_refused_where_its_margin_cannot_be_trusted():
    from histkit.oracles._estimate import estimate_margin

    edges = np.linspace(0, 1, 11)
    assert estimate_margin(edges, 0.0, 10.0) is not None
    assert estimate_margin(edges[::-1].copy(), 0.0, 10.0) is None  # decreasing
    assert estimate_margin(np.array([0.0, 1.0, 1.0, 2.0]), 0.0, 1.5) is None  # repeated edge
    assert estimate_margin(edges, 0.0, -10.0) is None
    assert estimate_margin(np.array([0.0, 1.0, 10.0, 100.0]), 0.0, 0.03) is None  # uneven
    # float32 estimates past 2^22 are not rounded to integers by the kernel's add
    assert estimate_margin(np.arange(2**22 + 2, dtype=np.float32), 0.0, 1.0) is None
    assert estimate_margin(np.arange(2**20 + 1, dtype=np.float32), 0.0, 1.0) is not None
    # the margin is a bound: a slightly wrong per_unit widens it
    assert estimate_margin(edges, 0.0, 10.0 * (1 + 1e-6)) > estimate_margin(edges, 0.0, 10.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_np_linspace_edges_follow_the_formula_the_kernel_computes_and_others_do_not(dtype):
    from histkit.gpu.launch.binning import linspace_formula

    rng = np.random.default_rng(5)
    for _ in range(50):
        lo = float(rng.normal() * 10.0 ** rng.integers(-5, 6))
        hi = lo + float(rng.exponential() * 10.0 ** rng.integers(-5, 6))
        n = int(rng.choice([1, 10, 126, 4096, 65536]))
        edges = np.linspace(lo, hi, n + 1, dtype=dtype)
        start, step = linspace_formula(edges, lo, hi)
        computed = (np.arange(n, dtype=np.float64) * step + start).astype(dtype)
        np.testing.assert_array_equal(computed, edges[:-1])
        moved = edges.copy()
        moved[n // 2] = np.nextafter(moved[n // 2], np.inf)
        if n // 2 < n:
            assert linspace_formula(moved, lo, hi) is None


def test_rules_that_keep_samples_past_their_edges_bin_by_numpys_own_steps_on_both_sides():
    # a float16 sample 1.0 passes numpy's keep test against the Python-float
    # top 0.9999 and lies past the float64 top edge: no bound on the
    # estimates holds for it, so neither the oracle's bracketing walk nor the
    # kernel's (ESTIMATE_WITHIN_ONE) may be taken
    from histkit.oracles._bin_rule import even_rule
    from histkit.oracles._estimate import bracket_per_unit, kept_within_edges

    samples = np.float16([0.25, 1.0])
    past = even_rule(samples, 4, (np.float64(0.5), 0.9999), lambda: None)
    assert not kept_within_edges(past.keep, past.edges) and bracket_per_unit(past) == 0.0
    rule, _, _ = kernel_rule_for(samples, 4, None, (np.float64(0.5), 0.9999), True)
    assert rule.defines["ESTIMATE_WITHIN_ONE"] == "0" and rule.fast is None
    # the same bounds as float16 scalars keep nothing past the edges
    inside = even_rule(samples, 4, (np.float16(0.5), np.float16(0.9999)), lambda: None)
    assert kept_within_edges(inside.keep, inside.edges)
    plain = even_rule(np.float64([0.3]), 4, (0.0, 1.0), lambda: None)
    assert kept_within_edges(plain.keep, plain.edges) and bracket_per_unit(plain) > 0


def test_a_repeated_call_over_equal_edges_reuses_their_rule_and_no_other():
    from histkit.gpu.launch.binning import edges_kernel_rule
    from histkit.oracles._bin_rule import search_edges

    edges = np.linspace(-0.1, 1.3, 65)
    samples = np.zeros(3, np.float32)
    first = kernel_rule_for(samples, *parse_bins(edges.copy()), None, True)[0]
    again = kernel_rule_for(samples, *parse_bins(list(edges)), None, True)[0]
    assert again is first
    assert not first.edges.flags.writeable  # its device copy is kept: nobody may change them
    fresh = edges_kernel_rule(search_edges(np.dtype(np.float32), edges), True)
    np.testing.assert_array_equal(first.edges, fresh.edges)
    assert (first.defines, first.flags, first.lo, first.scale, first.fast, first.linspace) == (
        fresh.defines, fresh.flags, fresh.lo, fresh.scale, fresh.fast, fresh.linspace)
    moved = np.nextafter(edges, np.inf)
    assert kernel_rule_for(samples, *parse_bins(moved), None, True)[0] is not first
    assert kernel_rule_for(samples, *parse_bins(edges), None, False)[0].flags != first.flags
    # -0.0 and 0.0 are other bytes, so other rules (numpy's comparisons treat them alike)
    signed = np.array([-0.0, 1.0, 2.0])
    unsigned = np.array([0.0, 1.0, 2.0])
    assert (kernel_rule_for(samples, *parse_bins(signed), None, True)[0]
            is not kernel_rule_for(samples, *parse_bins(unsigned), None, True)[0])


def test_the_kernel_drops_the_fraction_test_only_where_every_estimates_floor_is_its_bin():
    # FLOOR_IS_THE_BIN=1 compiles the estimate alone without its margin test:
    # right only for a margin of FLOOR_IS_THE_BIN, never for a positive one.
    from histkit.gpu.launch.binning import _rule_defines
    from histkit.gpu.launch.common import Keys
    from histkit.oracles._estimate import FLOOR_IS_THE_BIN

    samples = np.array([0.25], np.float32)
    keys = Keys(0, 1, samples.dtype)
    dyadic = kernel_rule_for(samples, 256, None, (0.0, 1.0), True)[0]
    rounded = kernel_rule_for(samples, 256, None, (-0.1, 1.3), True)[0]
    assert dyadic.fast == FLOOR_IS_THE_BIN and 0 < rounded.fast < 0.25

    def floor_define(rule, numpy_steps=False, estimate_alone=True):
        return _rule_defines(keys, rule, numpy_steps, estimate_alone)[0]["FLOOR_IS_THE_BIN"]

    assert floor_define(dyadic) == "1"
    assert floor_define(rounded) == "0"
    # numpy's own steps, and the walk that reads the edges, take no estimate alone
    assert floor_define(dyadic, numpy_steps=True) == "0"
    assert floor_define(dyadic, estimate_alone=False) == "0"
