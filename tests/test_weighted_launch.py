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
    AUTO_PARTITIONED,
    BLOCK_WEIGHTS,
    FAST_BLOCK,
    GLOBAL_LAUNCH_WEIGHTS,
    MAX_LAUNCH_WEIGHTS,
    MAX_PARTS,
    NO_RUNS_FROM_COPIES,
    WEIGHTED_PART_LAUNCH_WEIGHTS,
    WEIGHTED_PART_MAX_BITS,
    WEIGHTED_PART_MIN_WEIGHTS,
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
    launched = _launches(2**28, 65536, layout="global")  # past shared memory
    counts = [args[2] for name, _, args in launched if name == "accumulate_weights"]
    assert counts == [GLOBAL_LAUNCH_WEIGHTS] * (2**28 // GLOBAL_LAUNCH_WEIGHTS)
    names = [name for name, _, _ in launched]
    assert names.count("carry_rows") == len(counts) - 1 and names[-1] == "round_rows"
    assert [args[2] for name, _, args in _launches(2**28, 256)
            if name == "accumulate_weights"] == [2**28]  # a shared layout: one launch


def _launched_kernels(n, num_bins, **options):
    """The kernels the launches of _launches ran, in order."""
    rt = FakeRuntime()
    kernels, launch = [], rt.launch
    rt.launch = lambda kernel, geometry, *args: (kernels.append(kernel),
                                                 launch(kernel, geometry, *args))
    weighted.weighted_histogram(rt, Keys(0x700000, n, np.dtype(np.int32)),
                                Weights(0xA000, np.dtype(np.float32)), num_bins,
                                FakeArray(0xB000, num_bins, np.uint64), rt._slot, **options)
    return kernels


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num_bins", [5000, 65536, 2**20, 2**22])
def test_many_bins_are_split_into_at_most_max_parts_partitions_that_fit_two_copies(
        dtype, num_bins):
    bits = weighted.partition_bits(MAX_SHARED, np.dtype(dtype), num_bins)
    if bits is None:  # not even one copy of a window of the fewest bins allowed
        least = (num_bins - 1).bit_length() - (MAX_PARTS.bit_length() - 1)
        plan = weighted.shared_plan(MAX_SHARED, np.dtype(dtype), 1 << least)
        assert not plan.digits
        return
    assert -(-num_bins // 2**bits) <= MAX_PARTS and bits <= 16
    plan = weighted.shared_plan(MAX_SHARED, np.dtype(dtype), 1 << bits)
    assert plan.digits and plan.bytes(1 << bits) <= MAX_SHARED
    if plan.copies >= NO_RUNS_FROM_COPIES and bits < WEIGHTED_PART_MAX_BITS:
        # the largest partitions with two copies: one bit more gives fewer
        wider = weighted.shared_plan(MAX_SHARED, np.dtype(dtype), 2 << bits)
        assert wider.copies < NO_RUNS_FROM_COPIES or not wider.digits


def test_a_forced_partition_width_is_raised_until_max_parts_cover_the_bins():
    assert weighted.partition_bits(MAX_SHARED, np.dtype(np.float32), 16, least=1) == 1
    assert weighted.partition_bits(MAX_SHARED, np.dtype(np.float32), 4096, least=1) == 4
    assert weighted.partition_bits(MAX_SHARED, np.dtype(np.float32), 4097, least=1) == 5


def test_auto_chooses_on_the_device_where_no_window_fits_and_the_input_is_large():
    launched = _launches(WEIGHTED_PART_MIN_WEIGHTS, 65536)
    names = [name for name, _, _ in launched]
    # the choice, then both ways (each carried between its launches), each
    # gated by it: partitioned where the sample scatters, every add global on
    # every other choice; the rounding after them, ungated
    assert names[0] == "auto_choice" and names[-1] == "round_rows"
    parted = names.index("accumulate_weights")
    assert set(names[1:parted]) <= {"count_parts", "scatter_parts", "accumulate_parts",
                                    "carry_rows"}
    assert names[1:4] == ["count_parts", "scatter_parts", "accumulate_parts"]
    assert set(names[parted:-1]) <= {"accumulate_weights", "carry_rows"}
    choice = launched[0][2][-1]
    for name, _, args in launched[1:-1]:
        assert args[-1] == choice, name
    kernels = _launched_kernels(WEIGHTED_PART_MIN_WEIGHTS, 65536)
    gates = [(kernel.name, {k: kernel.defines[k] for k in ("HK_GATE", "HK_GATE_UNLESS")
                            if k in kernel.defines}) for kernel in kernels]
    gate = str(AUTO_PARTITIONED)
    assert all(defines == {"HK_GATE": gate} for _, defines in gates[1:parted])
    assert all(defines == {"HK_GATE_UNLESS": gate} for _, defines in gates[parted:-1])
    assert gates[0][1] == {} and gates[-1] == ("round_rows", {})
    smaller = [name for name, _, _ in _launches(WEIGHTED_PART_MIN_WEIGHTS - 1, 65536)]
    assert set(smaller) <= {"accumulate_weights", "carry_rows", "round_rows"}
    assert "accumulate_weights" in smaller
    fits = [name for name, _, _ in _launches(WEIGHTED_PART_MIN_WEIGHTS, 4096)]
    assert fits == ["accumulate_weights", "round_rows"]  # a window fits: no partitions


def test_partitioned_launches_keep_each_block_within_its_share_and_carry_between():
    n = 2 * BLOCK_WEIGHTS + 9
    launched = _launches(n, 7, layout="partitioned", part_bits=1, grid=1)
    names = [name for name, _, _ in launched]
    one = ["count_parts", "scatter_parts", "accumulate_parts"]
    assert names == one + ["carry_rows"] + one + ["carry_rows"] + one + ["round_rows"]
    counted = [args[1] for name, _, args in launched if name == "count_parts"]
    firsts = [args[2] for name, _, args in launched if name == "count_parts"]
    assert counted == [BLOCK_WEIGHTS, BLOCK_WEIGHTS, 9]
    assert firsts == [0, BLOCK_WEIGHTS, 2 * BLOCK_WEIGHTS]
    parts = {int(args[4]) for name, _, args in launched if name == "count_parts"}
    assert parts == {4}  # 7 bins, 2 a partition


def test_the_partitioned_bounds_hold():
    # places within a launch are 32-bit, a partition's low bins 16-bit, and a
    # staged key holds its partition above its low bin in 32 bits
    assert WEIGHTED_PART_LAUNCH_WEIGHTS < 2**32
    assert WEIGHTED_PART_LAUNCH_WEIGHTS <= MAX_LAUNCH_WEIGHTS
    assert WEIGHTED_PART_MAX_BITS <= 16 and MAX_PARTS <= 2**16
