"""The weighted kernel's launch layer on a fake runtime (no GPU): the digits
its windows keep are the ones everyday weights reach, its shared memory fits
and holds as many copies as it can, its launches keep every slot within the
bounds the kernel states, and a weight's digits carry its exact value (the
kernel's arithmetic, in Python, against fractions.Fraction)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from test_api_calls import FakeArray, FakeRuntime

from histkit.gpu.contract import (
    BLOCK_WEIGHTS,
    FAST_BLOCK,
    GLOBAL_LAUNCH_WEIGHTS,
    MAX_LAUNCH_WEIGHTS,
    WHOLE_ADD_BITS,
)
from histkit.gpu.launch import weighted
from histkit.gpu.launch.common import Keys
from histkit.gpu.launch.weighted import Weights

MAX_SHARED = 227 * 1024


def digits_of(value, dtype) -> list[tuple[int, int]]:
    """(absolute 16-bit digit, signed add) of one weight, as parts_of makes them."""
    value = np.array(value, dtype=dtype)
    mantissa, exponent = math.frexp(float(value))  # value = mantissa * 2^exponent
    if value == 0:
        return []
    bits = 24 if dtype == np.float32 else 53
    tiny = -149 if dtype == np.float32 else -1074
    # value = m * 2^p units of 2^-1074, m an integer below 2^bits
    p = max(exponent - bits, tiny) + 1074
    m = int(Fraction(float(value)) * 2 ** 1074 / 2 ** p)
    sign = -1 if m < 0 else 1
    shifted = abs(m) << (p & 15)
    if dtype == np.float32:
        return [(p >> 4, sign * shifted)]
    return [(p >> 4, sign * (shifted & 0xFFFFFFFF)), ((p >> 4) + 2, sign * (shifted >> 32))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_weights_digits_carry_its_exact_value_within_the_row(dtype):
    kind = np.dtype(dtype).char
    lo, top = weighted.digit_span(kind)
    info = np.finfo(dtype)
    rng = np.random.default_rng(3)
    values = [info.smallest_subnormal, -info.smallest_subnormal * 12345, info.max, -info.max,
              info.tiny, 1.0, -0.1]
    values += list(rng.standard_normal(200) * 2.0 ** rng.integers(info.minexp, info.maxexp - 2,
                                                                   200))
    for value in values:
        value = dtype(value)
        parts = digits_of(value, dtype)
        assert sum(Fraction(int(add)) * 2 ** (16 * d) for d, add in parts) == (
            Fraction(float(value)) * 2 ** 1074)
        for digit, add in parts:
            assert lo <= digit <= top and abs(add) < 2 ** 40


@pytest.mark.parametrize(("dtype", "low", "high"), [(np.float32, -27, 36),
                                                     (np.float64, -30, 33)])
def test_the_window_keeps_every_digit_of_weights_within_its_stated_range(dtype, low, high):
    first, count = weighted.WINDOWS[np.dtype(dtype).char]
    for e in range(low, high + 1):
        for value in (2.0 ** e, 1.999 * 2.0 ** e):
            for digit, _ in digits_of(value, dtype):
                assert first <= digit < first + count, (e, value)
    # just outside: some digit falls outside the window
    for e in (low - 1, high + 1):
        assert any(not first <= d < first + count for d, _ in digits_of(2.0 ** e * 1.5, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num_bins", [1, 16, 256, 1024, 4096, 5000, 65536])
def test_each_plan_fits_shared_memory_with_the_most_copies_that_fit(dtype, num_bins):
    plan = weighted.shared_plan(MAX_SHARED, np.dtype(dtype), num_bins)
    assert plan.bytes(num_bins) <= MAX_SHARED
    if plan.digits:
        assert plan.copies in (1, 2, 4, 8, 16, 32)
        more = plan._replace(copies=plan.copies * 2)
        assert plan.copies == 32 or more.bytes(num_bins) > MAX_SHARED
    else:  # global: not even one copy of the window fits
        window = weighted.SharedPlan(*weighted.WINDOWS[np.dtype(dtype).char], 1, "window")
        assert window.bytes(num_bins) > MAX_SHARED


def test_the_stated_bounds_keep_every_slot_below_2_62():
    # a register or shared slot: 2^22 weights a block, each below 2^40
    assert BLOCK_WEIGHTS * 2**40 <= 2**62
    # a global slot: 2^28 weights a launch, each below 2^32
    assert MAX_LAUNCH_WEIGHTS * 2**32 <= 2**62
    # with no shared window: at most two whole adds a weight to one slot
    assert 2 * GLOBAL_LAUNCH_WEIGHTS * 2**WHOLE_ADD_BITS <= 2**62
    # a float64 weight's two parts always go whole
    assert 2**WHOLE_ADD_BITS >= 2**(53 - 32 + 15)


def test_only_the_global_layout_adds_whole_and_takes_smaller_launches():
    for layout in ("rows", "window", "global"):
        plan = weighted.shared_plan(MAX_SHARED, np.dtype(np.float32), 16, layout)
        made = weighted.defines(np.dtype(np.float32), plan, True, np.dtype(np.int32))
        assert ("WHOLE_ADD_BITS" in made) == (layout == "global"), layout
    launched = _launches(2**28, 65536)  # past shared memory: the global layout
    counts = [args[2] for name, _, args in launched if name == "accumulate_weights"]
    assert counts == [GLOBAL_LAUNCH_WEIGHTS] * (2**28 // GLOBAL_LAUNCH_WEIGHTS)
    names = [name for name, _, _ in launched]
    assert names.count("carry_rows") == len(counts) - 1 and names[-1] == "round_rows"
    assert [args[2] for name, _, args in _launches(2**28, 256)
            if name == "accumulate_weights"] == [2**28]  # a shared layout: one launch


def _launches(n, num_bins, **options):
    rt = FakeRuntime()
    weighted.weighted_histogram(rt, Keys(0x700000, n, np.dtype(np.int32)),
                                Weights(0xA000, np.dtype(np.float32)), num_bins,
                                FakeArray(0xB000, num_bins, np.uint64), rt._slot, **options)
    return rt.launched


def test_no_block_adds_more_than_its_share_and_rows_are_carried_between_launches():
    n = 3 * BLOCK_WEIGHTS + 5
    launched = _launches(n, 7, grid=1)
    names = [name for name, _, _ in launched]
    assert names == ["accumulate_weights", "carry_rows"] * 3 + ["accumulate_weights",
                                                                 "round_rows"]
    counts = [args[2] for name, _, args in launched if name == "accumulate_weights"]
    firsts = [args[3] for name, _, args in launched if name == "accumulate_weights"]
    assert max(counts) <= BLOCK_WEIGHTS and sum(counts) == n
    assert firsts == [0, BLOCK_WEIGHTS, 2 * BLOCK_WEIGHTS, 3 * BLOCK_WEIGHTS]


def test_a_default_grid_takes_2_28_weights_in_one_launch():
    launched = _launches(2**28, 256)
    (accumulate,) = [g for name, g, _ in launched if name == "accumulate_weights"]
    assert 2**28 / accumulate.grid <= BLOCK_WEIGHTS and accumulate.block == FAST_BLOCK
    assert [name for name, _, _ in launched] == ["accumulate_weights", "round_rows"]
