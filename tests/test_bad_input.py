"""Every oracle rejects bad input with an error that names the problem."""

import numpy as np
import pytest

from histkit import oracles

KEYED = {
    "histogram": lambda keys, k: oracles.histogram(keys, k),
    "naive_wave_histogram": lambda keys, k: oracles.naive_wave_histogram(keys, k),
    "privatized_histogram": lambda keys, k: oracles.privatized_histogram(keys, k),
    "counting_sort": lambda keys, k: oracles.counting_sort(keys, k),
}


@pytest.fixture(params=sorted(KEYED))
def oracle(request):
    return KEYED[request.param]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_a_negative_key_names_its_index_and_value(oracle, dtype):
    keys = np.zeros(100_000, dtype=dtype)
    keys[77_777] = -3
    keys[88_888] = -5
    with pytest.raises(ValueError, match=r"index 77777 is -3, outside \[0, 10\)"):
        oracle(keys, 10)


@pytest.mark.parametrize("num_bins", [10, 100])
def test_a_key_equal_to_num_bins_is_outside_and_named(oracle, num_bins):
    # the first key past the last bin: a '>' for '>=' lets it through
    keys = np.ones(100_000, dtype=np.int32)
    keys[54_321] = num_bins
    with pytest.raises(ValueError, match=rf"index 54321 is {num_bins}, outside \[0, {num_bins}\)"):
        oracle(keys, num_bins)


@pytest.mark.parametrize("position", [0, 1, 2, 3, 4, 31, 32, 99_999, 60_000])
def test_a_key_too_large_names_the_first_bad_index(oracle, position):
    keys = np.ones(100_000, dtype=np.uint64)
    keys[position] = 2**64 - 1
    keys[-1] = 10
    first = min(position, 99_999)
    value = 2**64 - 1 if position != 99_999 else 10
    with pytest.raises(ValueError, match=rf"index {first} is {value}, outside \[0, 10\)"):
        oracle(keys, 10)


def test_key_equal_to_num_bins_is_out_of_range_not_wrapped(oracle):
    with pytest.raises(ValueError, match=r"index 2 is 4, outside \[0, 4\)"):
        oracle(np.array([0, 3, 4], dtype=np.uint8), 4)


@pytest.mark.parametrize("keys", [np.array([1.0, 2.0]), np.array([True, False]),
                                  np.array([1 + 2j]), np.array([1, "a"], dtype=object),
                                  [0.5, 1.5]])
def test_non_integer_keys_raise_type_error(oracle, keys):
    with pytest.raises(TypeError, match="integer dtype"):
        oracle(keys, 4)


@pytest.mark.parametrize("keys", [np.int32(3), np.zeros((2, 3), dtype=np.int32)])
def test_keys_that_are_not_one_dimensional_are_rejected(oracle, keys):
    with pytest.raises(ValueError, match="one-dimensional"):
        oracle(keys, 4)


@pytest.mark.parametrize("num_bins", [0, -1])
def test_num_bins_below_one_is_rejected(oracle, num_bins):
    with pytest.raises(ValueError, match="num_bins must be >= 1"):
        oracle(np.array([0]), num_bins)


@pytest.mark.parametrize("num_bins", [2.0, "3", None, True])
def test_num_bins_must_be_an_integer(oracle, num_bins):
    with pytest.raises(TypeError, match="num_bins must be an integer"):
        oracle(np.array([0]), num_bins)


def test_empty_keys_give_zero_counts_and_empty_outputs():
    for keys in ([], np.array([], dtype=np.uint16)):
        np.testing.assert_array_equal(oracles.histogram(keys, 3), [0, 0, 0])
        np.testing.assert_array_equal(oracles.naive_wave_histogram(keys, 3), [0, 0, 0])
        counts, atomics = oracles.privatized_histogram(keys, 3)
        assert counts.tolist() == [0, 0, 0] and atomics == 0
        sorted_keys, index = oracles.counting_sort(keys, 3)
        assert sorted_keys.size == 0 and index.size == 0 and index.dtype == np.int64
    assert oracles.exclusive_scan([]).tolist() == []


@pytest.mark.parametrize("name,value", [("warp_size", 0), ("block_size", -2), ("num_blocks", 0)])
def test_geometry_below_one_is_rejected(name, value):
    call = {
        "warp_size": lambda: oracles.naive_wave_histogram([0], 1, warp_size=value),
        "block_size": lambda: oracles.privatized_histogram([0], 1, block_size=value),
        "num_blocks": lambda: oracles.privatized_histogram([0], 1, num_blocks=value),
    }[name]
    with pytest.raises(ValueError, match=f"{name} must be >= 1"):
        call()


@pytest.mark.parametrize("num_bins", [10, 5000])  # four interleaved lanes; one lane, in pairs
@pytest.mark.parametrize("position", range(8, 16))
def test_a_key_equal_to_num_bins_is_caught_in_every_slot_of_the_unrolled_count(oracle, num_bins,
                                                                                position):
    # the oracles count 4 keys (small K) or 2 keys (many bins) per step and test
    # each of them against num_bins: a '>' for '>=' in one slot lets the key
    # through there only (and counts it into the next lane's bin 0, or one past
    # the histogram)
    keys = np.ones(64, dtype=np.int32)
    keys[position] = num_bins
    with pytest.raises(ValueError, match=rf"index {position} is {num_bins}, outside"):
        oracle(keys, num_bins)


@pytest.mark.parametrize(("dtype", "bad"), [(np.int32, -1), (np.int32, -2**31),
                                            (np.uint32, 2**32 - 1), (np.uint32, 2**31)])
@pytest.mark.parametrize("offset", [0, 1])  # the keys' start 8-byte aligned, or 4 bytes past
@pytest.mark.parametrize("position", range(16))
def test_a_32_bit_key_far_outside_is_caught_in_every_slot_of_the_paired_loads(
        dtype, bad, offset, position):
    # few bins read contiguous 32-bit keys two to a 64-bit load, zero-extended:
    # a negative int32 must still read as outside, in either half of a load
    keys = np.ones(65, dtype=dtype)[offset:offset + 64]
    keys[position] = bad
    with pytest.raises(ValueError, match=rf"index {position} is {bad}, outside \[0, 10\)"):
        oracles.histogram(keys, 10)
    keys[position] = 9
    np.testing.assert_array_equal(oracles.histogram(keys, 10),
                                  np.bincount(keys.astype(np.int64), minlength=10))
