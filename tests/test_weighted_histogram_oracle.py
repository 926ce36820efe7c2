"""oracles.histogram with weights: each bin's exact sum, correctly rounded.

The reference is independent of the oracle: a plain Python loop groups the
weights by key, ``math.fsum`` sums each bin (correctly rounded, half to even),
and ``fractions.Fraction`` takes over where fsum cannot (its intermediate sums
overflow) and checks fsum itself on the hard cases. Results are compared bit
for bit (NaN as the canonical quiet NaN, zero as +0.0).
"""

import contextlib
import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import DISTRIBUTIONS
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from histkit import oracles
from histkit.distributions import make_keys
from histkit.oracles import _threads

MAX = np.finfo(np.float64).max  # (2^53 - 1) * 2^971
TINY = 5e-324  # 2^-1074, the smallest subnormal


def rounded(exact: Fraction) -> float:
    """An exact rational correctly rounded to float64, half to even; past the
    largest float64 by half an ulp or more, an infinity (CPython's int / int
    is correctly rounded and raises OverflowError exactly there)."""
    try:
        return float(exact.numerator / exact.denominator) + 0.0
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def exact_sum(weights: list) -> float:
    """One bin's sum by the documented rule: IEEE specials, then the exact sum
    of the finite weights rounded once; a zero sum is +0.0."""
    if any(isinstance(w, float) and math.isnan(w) for w in weights):
        return math.nan
    if math.inf in weights:
        return math.nan if -math.inf in weights else math.inf
    if -math.inf in weights:
        return -math.inf
    if all(isinstance(w, int) for w in weights):
        return rounded(Fraction(sum(weights)))  # integers beyond 2^53: no fsum
    try:
        return math.fsum(weights) + 0.0
    except OverflowError:  # an intermediate partial sum passed float64
        return rounded(sum(map(Fraction, weights), Fraction(0)))


def reference(keys, weights, num_bins) -> np.ndarray:
    """Per-bin exact sums: group by key in a plain loop, then exact_sum."""
    groups = [[] for _ in range(num_bins)]
    for key, weight in zip(np.asarray(keys).tolist(), np.asarray(weights).tolist(),
                           strict=True):
        groups[key].append(weight)
    return np.array([exact_sum(group) for group in groups], dtype=np.float64)


def assert_same_bits(got, want, context=""):
    got = np.asarray(got)
    assert got.dtype == np.float64, context
    assert got.shape == want.shape, context
    differ = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
    assert differ.size == 0, (
        f"{context}: {differ.size} bins differ; first bin {differ[0]}: "
        f"got {got[differ[0]]!r} ({got.view(np.uint64)[differ[0]]:#x}), "
        f"want {want[differ[0]]!r} ({want.view(np.uint64)[differ[0]]:#x})")


def wide_weights(rng, n, dtype=np.float64):
    """Signed weights whose exponents span the dtype's whole range, subnormals
    and zeros of both signs included: every chunk of the sum is reached."""
    info = np.finfo(dtype)
    mantissas = rng.random(n) + 0.5
    exponents = rng.integers(info.minexp - info.nmant, info.maxexp, n)
    weights = np.ldexp(mantissas, exponents).astype(dtype)
    weights[rng.random(n) < 0.5] *= -1
    weights[rng.random(n) < 0.01] = 0.0
    weights[rng.random(n) < 0.01] = -0.0
    return weights


def one_bin(weights, dtype=None):
    """The oracle's sum of weights that all fall into bin 0 of 1."""
    weights = np.asarray(weights, dtype=dtype)
    return oracles.histogram(np.zeros(len(weights), dtype=np.int32), 1, weights)[0]


# --- the cases that motivate an exact sum -----------------------------------------


def test_catastrophic_cancellation_is_exact_where_bincount_loses_the_one():
    keys = np.array([0, 0, 0])
    weights = np.array([1e16, 1.0, -1e16])
    assert_same_bits(oracles.histogram(keys, 1, weights), np.array([1.0]))
    assert np.bincount(keys, weights)[0] == 0.0  # left to right: the 1.0 is lost
    assert one_bin([1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50]) == 1e-100


@pytest.mark.parametrize("weights", [
    [2.0**1023, TINY, -(2.0**1023)],          # a subnormal survives two huge terms
    [MAX, TINY, -MAX, TINY],                   # 2 * 2^-1074
    [2.0**-1022, -TINY],                       # largest subnormal
    [2.0**-1022 - TINY, TINY],                 # up into the smallest normal
    [1.0, 2.0**-53],                           # a tie: to even, down
    [1.0 + 2.0**-52, 2.0**-53],                # a tie: to even, up
    [1.0, 2.0**-53, TINY],                     # just above the tie: up
    [1.0, 2.0**-53, -TINY],                    # just below the tie: down
    [-1.0, -(2.0**-53), -TINY],                # the same, negative
    [2.0**53, 1.0, 1.0, 1.0, 1.0],             # each step alone would tie and round
    [0.1] * 10,                                # 1.0000000000000002 left to right
    [1e308, 1e308, -1e308],                    # overflows only when summed in order
    [-1e308, -1e308, 1e308, 1e308, -1e308],
    [MAX, MAX, -MAX, -MAX, 2.0**-1074],
])
def test_hard_sums_equal_fsum_and_fraction(weights):
    exact = rounded(sum(map(Fraction, weights), Fraction(0)))
    with contextlib.suppress(OverflowError):  # fsum agrees where it does not overflow
        assert math.fsum(weights) + 0.0 == exact
    got = one_bin(weights)
    assert_same_bits(np.array([got]), np.array([exact]), str(weights))
    # order never matters
    assert_same_bits(np.array([one_bin(weights[::-1])]), np.array([exact]), str(weights[::-1]))


@pytest.mark.parametrize(("weights", "want"), [
    ([MAX, MAX], math.inf),                          # the exact sum overflows
    ([-MAX, -MAX], -math.inf),
    ([MAX, 2.0**970], math.inf),                     # half an ulp past MAX: a tie, to even
    ([MAX, 2.0**970, -TINY], MAX),                   # just under the tie
    ([MAX, 2.0**969], MAX),
    ([-MAX, -(2.0**970)], -math.inf),
    ([MAX, MAX, -MAX], MAX),                         # overflows only in order
])
def test_sums_past_the_largest_float64_round_to_infinity_exactly_where_rounding_says(
        weights, want):
    assert rounded(sum(map(Fraction, weights), Fraction(0))) == want
    assert one_bin(weights) == want
    assert one_bin(weights[::-1]) == want


@pytest.mark.parametrize(("weights", "want"), [
    ([1.0, math.nan, 2.0], math.nan),
    ([math.inf, 1.0, -1e308], math.inf),
    ([-math.inf, MAX, MAX], -math.inf),              # -inf beats a finite overflow
    ([math.inf, -math.inf], math.nan),
    ([math.inf, math.inf, -1.0], math.inf),
    ([math.nan, math.inf], math.nan),
    ([MAX, MAX, -math.inf], -math.inf),
    ([-0.0, -0.0], 0.0),                             # an exact zero is +0.0
    ([0.0, -0.0, 1.0, -1.0], 0.0),
])
def test_nan_and_infinities_follow_ieee_and_zero_is_positive(weights, want):
    want = np.array([want])
    for dtype in (np.float64, np.float32):
        if dtype is np.float32 and any(1e38 < abs(w) < math.inf for w in weights):
            continue  # not a float32
        assert_same_bits(np.array([one_bin(weights, dtype)]), want, f"{weights} {dtype}")
        assert_same_bits(np.array([one_bin(weights[::-1], dtype)]), want)


def test_nan_payloads_and_signs_give_the_one_canonical_nan():
    payloads = np.array([0x7FF0000000000001, 0xFFF8000000000123, 0x7FFFFFFFFFFFFFFF],
                        dtype=np.uint64).view(np.float64)
    got = oracles.histogram([0, 1, 2], 3, payloads)
    assert_same_bits(got, np.full(3, np.nan))
    assert got.view(np.uint64)[0] == 0x7FF8000000000000


def test_every_bin_on_its_own_and_empty_bins_are_zero():
    keys = np.array([3, 1, 3, 3, 1])
    weights = np.array([1e16, 2.5, 1.0, -1e16, -0.0])
    assert_same_bits(oracles.histogram(keys, 5, weights), np.array([0.0, 2.5, 0.0, 1.0, 0.0]))
    assert_same_bits(oracles.histogram(np.array([], dtype=np.int8), 3, []), np.zeros(3))


# --- seeded random cases against the reference ---------------------------------


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("num_bins", [1, 7, 300, 1927, 1928, 20000])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_seeded_cases_equal_fsum_per_bin(distribution, num_bins, weight_dtype):
    # fewer weights than bins (here past 3000) are grouped by bin first;
    # test_both_paths_meet_at_the_in_place_limit takes the rows' size limit.
    seed = 11 * num_bins + DISTRIBUTIONS.index(distribution)
    rng = np.random.default_rng(seed)
    n = 3000
    keys = make_keys(distribution, n, num_bins, seed=seed, dtype=np.int32)
    weights = wide_weights(rng, n, weight_dtype)
    assert_same_bits(oracles.histogram(keys, num_bins, weights),
                     reference(keys, weights.astype(np.float64), num_bins),
                     f"{distribution} N={n} K={num_bins} {np.dtype(weight_dtype).name} "
                     f"seed={seed}")


@pytest.mark.parametrize("key_dtype", [np.uint8, np.int16, np.uint32, np.int64])
def test_keys_of_every_width_and_strided_reversed_or_big_endian_weights(key_dtype):
    rng = np.random.default_rng(7)
    keys = make_keys("zipf", 4001, 100, seed=7, dtype=key_dtype)
    weights = wide_weights(rng, 3 * 4001)
    want = reference(keys, weights[::3], 100)
    assert_same_bits(oracles.histogram(keys, 100, weights[::3]), want)
    assert_same_bits(oracles.histogram(keys[::-1], 100, weights[::3][::-1].copy()), want)
    assert_same_bits(oracles.histogram(keys, 100, weights[::3].astype(">f8")), want)
    readonly = weights[::3].copy()
    readonly.flags.writeable = False
    assert_same_bits(oracles.histogram(keys, 100, readonly), want)
    for num_bins in (3000, 30000):  # in place, then grouped by bin first (K > N)
        assert_same_bits(oracles.histogram(keys[::-1], num_bins, weights[::-3]),
                         reference(keys[::-1], weights[::-3], num_bins))


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
def test_both_paths_meet_at_the_in_place_limit(weight_dtype):
    # the last K whose rows each thread keeps, then the first whose weights
    # are grouped by bin first (N above both: only the rows' size decides)
    from histkit.oracles._weighted import IN_PLACE_MAX_BINS

    limit = IN_PLACE_MAX_BINS[np.dtype(weight_dtype).char]
    rng = np.random.default_rng(limit)
    n = limit + 5000
    keys = rng.integers(0, limit + 1, n, dtype=np.int32)
    keys[:2000] = limit  # the last bin, in both calls' range, takes many
    weights = wide_weights(rng, n, weight_dtype)
    for num_bins in (limit, limit + 1):
        inside = keys < num_bins
        assert_same_bits(oracles.histogram(keys[inside], num_bins, weights[inside]),
                         reference(keys[inside], weights[inside].astype(np.float64),
                                   num_bins), f"K={num_bins}")


def narrow_weights(rng, n, dtype):
    """Signed weights within 10^-3 .. 10^3 of normal draws, zeros of both
    signs among them: a window of a few chunks holds every one."""
    weights = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dtype)
    weights[rng.random(n) < 0.01] = 0.0
    weights[rng.random(n) < 0.01] = -0.0
    return weights


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
def test_rows_in_a_window_of_chunks_equal_fsum_per_bin(weight_dtype):
    # 20000 bins: the full rows pass WINDOW_ABOVE_BYTES, so the call adds in
    # rows that span only the chunks a sample of the weights reaches
    from histkit.oracles import _weighted

    rng = np.random.default_rng(20000)
    num_bins, n = 20000, 60000
    keys = rng.integers(0, num_bins, n, dtype=np.int32)
    weights = narrow_weights(rng, n, weight_dtype)
    kind = np.dtype(weight_dtype).char
    window = _weighted._window(weights, kind)
    first, top = _weighted.CHUNK_SPAN[kind]
    assert window is not None and window[1] < top - first  # narrower than full rows
    assert _weighted._sums_in_place(keys, weights, num_bins, 2, *window, ord(kind)) is not None
    assert_same_bits(oracles.histogram(keys, num_bins, weights),
                     reference(keys, weights.astype(np.float64), num_bins))


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("outlier", ["huge", "subnormal"])
def test_a_weight_outside_the_sampled_window_sends_the_call_back_to_full_rows(
        weight_dtype, outlier):
    from histkit.oracles import _weighted

    rng = np.random.default_rng(7)
    num_bins, n = 20000, 60000
    keys = rng.integers(0, num_bins, n, dtype=np.int32)
    weights = narrow_weights(rng, n, weight_dtype)
    info = np.finfo(weight_dtype)
    # index 1 lies between the sampled weights (one in every n // 4096)
    weights[1] = info.max / 4 if outlier == "huge" else -info.smallest_subnormal * 3
    keys[1] = keys[2]  # in a bin with others, so the outlier shapes its sum
    kind = np.dtype(weight_dtype).char
    window = _weighted._window(weights, kind)
    assert window is not None
    assert _weighted._sums_in_place(keys, weights, num_bins, 2, *window, ord(kind)) is None
    assert_same_bits(oracles.histogram(keys, num_bins, weights),
                     reference(keys, weights.astype(np.float64), num_bins))


def test_a_bad_key_after_a_weight_outside_the_window_is_still_named():
    rng = np.random.default_rng(3)
    num_bins, n = 20000, 1 << 18
    keys = rng.integers(0, num_bins, n, dtype=np.int32)
    weights = narrow_weights(rng, n, np.float64)
    weights[5] = 1e300  # leaves the window: its chunk of work stops there
    keys[200_001] = num_bins
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, num_bins, weights)
    assert (caught.value.index, caught.value.value) == (200_001, num_bins)


# --- integer and float16 weights ---------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64])
def test_integer_weights_are_summed_exactly_even_past_2_53(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(info.bits)
    keys = rng.integers(0, 5, 2000)
    weights = rng.integers(info.min, info.max, 2000, dtype=dtype, endpoint=True)
    weights[:4] = [info.max, info.max, info.min, info.max]
    keys[:4] = 4
    groups = [[] for _ in range(5)]
    for key, weight in zip(keys.tolist(), weights.tolist(), strict=True):
        groups[key].append(weight)
    want = np.array([float(sum(group)) + 0.0 for group in groups])  # int -> float rounds once
    assert_same_bits(oracles.histogram(keys, 5, weights), want, np.dtype(dtype).name)
    assert_same_bits(oracles.histogram(keys, 30000, weights)[:5], want)  # grouped


def test_int64_weights_keep_what_a_float64_conversion_would_lose():
    big = 2**53 + 1  # float(big) == 2**53: converting first loses the +1
    assert one_bin(np.array([big, 1], dtype=np.int64)) == 2.0**53 + 2
    assert float(big) + 1.0 == 2.0**53
    assert one_bin(np.array([big] * 3, dtype=np.int64)) == float(3 * big) == 3 * 2.0**53 + 4
    assert one_bin(np.array([2**64 - 1, 2**64 - 1], dtype=np.uint64)) == 2.0**65
    assert one_bin(np.array([-(2**63), 1], dtype=np.int64)) == float(-(2**63) + 1)


def test_float16_and_float32_weights_sum_exactly_to_float64():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 9, 5000)
    for dtype in (np.float16, np.float32):
        weights = wide_weights(rng, 5000, dtype)
        weights[:3] = [np.finfo(dtype).max] * 3  # no overflow in float64
        got = oracles.histogram(keys, 9, weights)
        assert_same_bits(got, reference(keys, weights.astype(np.float64), 9),
                         np.dtype(dtype).name)
    tiny = np.array([2.0**-149, 2.0**-149, -(2.0**-126)], dtype=np.float32)
    assert one_bin(tiny) == 2.0**-148 - 2.0**-126


# --- errors ------------------------------------------------------------------------


@pytest.mark.parametrize(("weights", "error", "match"), [
    (np.ones(4), ValueError, "one weight per key: 5 keys, 4 weights"),
    (np.ones((5, 1)), ValueError, "one-dimensional"),
    (np.float64(1.0), ValueError, "one-dimensional"),
    (np.ones(5, dtype=bool), TypeError, "got bool"),
    (np.ones(5, dtype=np.complex128), TypeError, "got complex128"),
    (np.ones(5, dtype=np.longdouble), TypeError, "float16, float32, float64 or integer"),
    (["a"] * 5, TypeError, "got <U1"),
    ([2**64] * 5, ValueError, "weights hold integers from 18446744073709551616 to "
                              "18446744073709551616, which no integer dtype"),
    ([1, 2, 3, 4, 10**400], ValueError, r"from 1 to 100000\.\.\. \(401 digits\), which"),
    ([2**64, 0.5, 1.0, 2.0, 3.0], TypeError,
     "got object: numpy found no numeric dtype for them together"),
])
def test_bad_weights_raise_before_any_work_even_with_bad_keys(weights, error, match):
    if np.dtype(np.longdouble).itemsize == 8 and getattr(weights, "dtype", None) == np.longdouble:
        pytest.skip("long double is float64 here")
    keys = np.array([0, 1, 2, 99, -1])  # bad keys: the weights are refused first
    with pytest.raises(error, match=match):
        oracles.histogram(keys, 3, weights)


@pytest.mark.parametrize("num_bins", [10, 5000])
def test_bad_keys_with_weights_name_the_first_bad_index(idle_machine, num_bins):
    keys = make_keys("uniform", 1 << 19, num_bins, seed=2)
    weights = np.ones(1 << 19)
    keys[(1 << 19) - 5] = num_bins
    keys[300_001] = -3
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, num_bins, weights)
    assert (caught.value.index, caught.value.value) == (300_001, -3)
    with pytest.raises(TypeError, match="integer dtype"):
        oracles.histogram(keys.astype(float), num_bins, weights)


# --- threads: the same bits whatever the split ----------------------------------


@pytest.mark.parametrize(("weight_dtype", "num_bins"), [
    (np.float64, 256), (np.float64, 70000), (np.float32, 256), (np.float32, 20000),
    (np.int64, 256)])
def test_the_same_bits_on_one_two_and_all_threads(idle_machine, weight_dtype, num_bins):
    n = 1 << 18
    rng = np.random.default_rng(num_bins)
    keys = make_keys("zipf", n, num_bins, seed=num_bins, dtype=np.uint32)
    if weight_dtype is np.int64:
        weights = rng.integers(-(2**63), 2**63 - 1, n)
    else:
        weights = wide_weights(rng, n, weight_dtype)
    want = reference(keys, weights if weight_dtype is np.int64 else weights.astype(float),
                     num_bins)
    for threads in (1, 2, 8):
        with _threads.at_most(threads):
            for _ in range(2):
                assert_same_bits(oracles.histogram(keys, num_bins, weights), want,
                                 f"{threads} threads, K={num_bins}")


def test_cancellation_split_across_threads_is_exact(idle_machine):
    # One hot bin whose +1e16 and -1e16 land in different chunks of work.
    n = 1 << 19
    keys = np.zeros(n, dtype=np.int32)
    weights = np.full(n, 2.0**-30)
    weights[0], weights[-1] = 1e16, -1e16
    want = np.array([(n - 2) * 2.0**-30])
    for threads in (1, 2):
        with _threads.at_most(threads):
            assert_same_bits(oracles.histogram(keys, 1, weights), want)
    assert np.bincount(keys, weights)[0] != want[0]


# --- properties -------------------------------------------------------------------


any_float64 = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
finite_float32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(0, 4)),
       st.data())
def test_property_equals_the_reference_and_ignores_order(keys, data):
    weights = data.draw(hnp.arrays(np.float64, len(keys), elements=any_float64))
    want = reference(keys, weights, 5)
    assert_same_bits(oracles.histogram(keys, 5, weights), want, f"{keys} {weights}")
    order = data.draw(st.permutations(range(len(keys))))
    assert_same_bits(oracles.histogram(keys[order], 5, weights[order]), want)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 40), elements=finite_float32), st.randoms())
def test_property_float32_weights_in_one_bin(weights, random):
    keys = np.zeros(len(weights), dtype=np.uint8)
    want = reference(keys, weights.astype(np.float64), 1)
    shuffled = weights.copy()
    random.shuffle(shuffled)
    assert_same_bits(oracles.histogram(keys, 1, weights), want)
    assert_same_bits(oracles.histogram(keys, 1, shuffled), want)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 700, 9000]))
def test_property_shuffled_large_inputs_give_identical_bits_on_any_threads(seed, num_bins):
    rng = np.random.default_rng(seed)
    n = 1 << 17
    keys = rng.integers(0, num_bins, n)
    weights = wide_weights(rng, n)
    order = rng.permutation(n)
    with _threads.at_most(1):
        one = oracles.histogram(keys, num_bins, weights)
    assert_same_bits(oracles.histogram(keys[order], num_bins, weights[order]), one, f"{seed}")


# --- past 2^31 weights in one bin --------------------------------------------------


@pytest.mark.large
@pytest.mark.parametrize("threads", [1, None])
def test_2_31_plus_17_weights_of_one_bin(threads):
    # Stride-0 views: 2^31 + 17 keys and weights with no memory behind them. One
    # thread passes the 2^31 - 2 adds after which its rows must be carried.
    n = 2**31 + 17
    keys = np.broadcast_to(np.uint8(1), (n,))
    for weight in (0.1, -(2.0**1000), np.float32(3.3)):
        weights = np.broadcast_to(weight, (n,))
        want = rounded(Fraction(float(weight)) * n)
        with _threads.at_most(threads) if threads else contextlib.nullcontext():
            got = oracles.histogram(keys, 2, weights)
        assert_same_bits(got, np.array([0.0, want]), f"{weight!r} x {n}")


# --- two 128-bit accumulators per bin (_weighted_wide) ------------------------------
#
# Float weights whose sample fits a window are summed in a positive and a negative
# 128-bit accumulator per bin; weights outside the window are added at rounding.


def sum_wide(keys, weights, num_bins, threads=2, **kwargs):
    """The wide path's answer, asserting that it took the call."""
    from histkit.oracles._weighted_wide import wide_sums

    answer = wide_sums(keys, weights, num_bins, threads, **kwargs)
    assert answer is not None, "the wide path handed the call back"
    return answer


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("num_bins", [1, 10, 300])
def test_wide_accumulators_equal_fsum_per_bin(weight_dtype, num_bins):
    rng = np.random.default_rng(num_bins)
    n = 50_000
    keys = rng.integers(0, num_bins, n).astype(np.int32)
    weights = narrow_weights(rng, n, weight_dtype)  # zeros of both signs among them
    weights[:4] = [1e6, -1e6, 3.0, -0.5]
    sums, bad = sum_wide(keys, weights, num_bins)
    want = reference(keys, weights.astype(np.float64), num_bins)
    assert bad == -1
    assert_same_bits(sums, want)
    assert_same_bits(oracles.histogram(keys, num_bins, weights), want)


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
def test_weights_outside_the_window_are_added_exactly_when_the_bin_is_rounded(weight_dtype):
    rng = np.random.default_rng(11)
    n, num_bins = 40_000, 7
    keys = rng.integers(0, num_bins, n).astype(np.int32)
    weights = rng.standard_normal(n).astype(weight_dtype)
    info = np.finfo(weight_dtype)
    # Off the sampled indices (every n // 4096-th): far above the window, far
    # below it (a subnormal), and specials; bin 0 cancels its huge weight.
    outside = {1: info.max / 8, 2: -info.max / 8, 3: info.smallest_subnormal * 5,
               4: -info.smallest_subnormal, 5: np.nan, 6: np.inf, 7: -np.inf, 8: np.inf}
    bins = {1: 0, 2: 0, 3: 0, 4: 1, 5: 2, 6: 3, 7: 4, 8: 4}
    for index, weight in outside.items():
        weights[index], keys[index] = weight, bins[index]
    sums, _ = sum_wide(keys, weights, num_bins)
    assert_same_bits(sums, reference(keys, weights.astype(np.float64), num_bins))
    assert np.isnan(sums[2]) and sums[3] == np.inf and np.isnan(sums[4])


def test_a_sum_past_the_largest_float64_in_the_window_rounds_to_infinity():
    n = 10_000
    keys = np.zeros(n, dtype=np.int32)
    keys[n // 2:] = 1
    weights = np.full(n, MAX / 4096)
    weights[n // 2:] = -MAX / 2048
    weights[-1] = MAX / 2  # a positive weight in the negative bin
    sums, _ = sum_wide(keys, weights, 2)
    assert_same_bits(sums, reference(keys, weights, 2))
    assert_same_bits(sums, np.array([np.inf, -np.inf]))


def test_subnormal_weights_fill_a_window_at_the_bottom():
    rng = np.random.default_rng(2)
    n = 20_000
    keys = rng.integers(0, 3, n).astype(np.int32)
    weights = rng.integers(-(2**52), 2**52, n) * TINY  # subnormals and zeros
    sums, _ = sum_wide(keys, weights, 3)
    assert_same_bits(sums, reference(keys, weights, 3))


def test_a_full_record_of_outside_weights_hands_the_call_back_exactly():
    from histkit.oracles._weighted_wide import WIDE_SAMPLE, wide_sums

    rng = np.random.default_rng(4)
    n, num_bins = 30_000, 50
    keys = rng.integers(0, num_bins, n).astype(np.int32)
    weights = rng.standard_normal(n)
    # twenty weights outside the window, off the sample (every n // WIDE_SAMPLE-th)
    weights[[i for i in range(1, 100) if i % (n // WIDE_SAMPLE)][:20]] = 1e200
    assert wide_sums(keys, weights, num_bins, 2, outside_per_worker=5) is None
    sums, _ = sum_wide(keys, weights, num_bins, outside_per_worker=20)
    want = reference(keys, weights, num_bins)
    assert_same_bits(sums, want)
    assert_same_bits(oracles.histogram(keys, num_bins, weights), want)


@pytest.mark.parametrize("num_bins", [100, 20_000])  # 20000: accumulators fetched ahead
def test_a_bad_key_is_named_by_the_wide_path_and_after_a_full_record(num_bins):
    from histkit.oracles._weighted_wide import wide_sums

    rng = np.random.default_rng(6)
    n = 200_000
    keys = rng.integers(0, num_bins, n).astype(np.int64)
    weights = rng.standard_normal(n)
    keys[150_001] = -3
    assert sum_wide(keys, weights, num_bins) == (None, 150_001)
    weights[3] = 1e300  # fills a record of none: the caller must still name the key
    assert wide_sums(keys, weights, num_bins, 2, outside_per_worker=0) is None
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.histogram(keys, num_bins, weights)
    assert (caught.value.index, caught.value.value) == (150_001, -3)


@pytest.mark.parametrize("kind", ["d", "f"])
@pytest.mark.parametrize("n", [4096, 1 << 24, 2**31 + 17, 2**40])
def test_the_window_leaves_headroom_for_every_weight_and_keeps_specials_out(kind, n):
    from histkit.oracles import _weighted_wide

    dtype = np.float64 if kind == "d" else np.float32
    info = np.finfo(dtype)
    for magnitude in (info.smallest_subnormal, 1.0, info.max):
        weights = np.broadcast_to(np.array(magnitude, dtype), (n,))
        base, span = _weighted_wide.wide_window(weights, kind)
        mantissa_bits = info.nmant + 1
        assert span < 64 and n * 2**(mantissa_bits + span) <= 2**128
        assert base >= 0 and base + span <= _weighted_wide.LARGEST_P[kind]


def test_a_sample_spanning_too_many_binades_takes_the_rows_instead():
    from histkit.oracles._weighted_wide import wide_sums, wide_window

    rng = np.random.default_rng(8)
    keys = rng.integers(0, 9, 20_000).astype(np.int32)
    weights = wide_weights(rng, 20_000)
    assert wide_window(weights, "d") is None
    assert wide_sums(keys, weights, 9, 2) is None
    assert_same_bits(oracles.histogram(keys, 9, weights), reference(keys, weights, 9))


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
def test_wide_accumulators_give_the_same_bits_on_one_and_two_threads(idle_machine,
                                                                      weight_dtype):
    rng = np.random.default_rng(9)
    n, num_bins = 1 << 18, 1000
    keys = make_keys("zipf", n, num_bins, seed=9, dtype=np.uint16)
    weights = narrow_weights(rng, n, weight_dtype)
    want = reference(keys, weights.astype(np.float64), num_bins)
    order = rng.permutation(n)
    for threads in (1, 2):
        assert_same_bits(sum_wide(keys, weights, num_bins, threads)[0], want)
        assert_same_bits(sum_wide(keys[order], weights[order], num_bins, threads)[0], want)


@pytest.mark.parametrize("weight_dtype", [np.float64, np.float32])
def test_wide_accumulators_read_strided_reversed_keys_and_weights(weight_dtype):
    rng = np.random.default_rng(12)
    n, num_bins = 60_000, 33
    keys = rng.integers(0, num_bins, 2 * n).astype(np.int16)[::-2]
    weights = narrow_weights(rng, 3 * n, weight_dtype)[::3]
    sums, _ = sum_wide(keys, weights, num_bins)
    assert_same_bits(sums, reference(keys, weights.astype(np.float64), num_bins))


@pytest.mark.large
def test_chunks_of_work_starting_past_2_31_are_summed_exactly():
    # 2^32 + 3 weights (stride-0 views, no memory behind them) on two threads: the
    # wide path's chunks of work start at indices past 2^31.
    n = 2**32 + 3
    keys = np.broadcast_to(np.int8(0), (n,))
    for weight in (0.1, np.float32(-3.3)):
        weights = np.broadcast_to(weight, (n,))
        with _threads.at_most(2):
            got = oracles.histogram(keys, 1, weights)
        assert_same_bits(got, np.array([rounded(Fraction(float(weight)) * n)]), repr(weight))
