"""oracles.radix_sort / argsort against np.argsort(kind="stable"), every dtype
over its whole range, signed keys in signed order."""

import numpy as np
import pytest

from histkit import oracles

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def full_range_keys(dtype, n, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    keys = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    keys[: min(n, 4)] = [info.min, info.max, 0, info.max][: min(n, 4)]
    return keys


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 2, 257, 10_007])
def test_argsort_equals_numpys_stable_argsort_over_the_whole_range(dtype, n):
    keys = full_range_keys(dtype, n, seed=n)
    np.testing.assert_array_equal(oracles.argsort(keys), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint32, np.int64, np.uint64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("low,high", [(-300, 300), (0, 70_000), (-(2**20), 2**20)])
def test_keys_that_share_their_high_digits_skip_those_passes_and_still_sort(dtype, low, high):
    info = np.iinfo(dtype)
    low, high = max(low, info.min), min(high, info.max)
    keys = np.random.default_rng(7).integers(low, high, size=5_003).astype(dtype)
    np.testing.assert_array_equal(oracles.argsort(keys), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_the_dtypes_edges_sort_as_numpy_sorts_them(dtype):
    from histkit.distributions import full_width_keys

    keys = full_width_keys("extremes", 5003, seed=1, dtype=dtype)
    np.testing.assert_array_equal(oracles.argsort(keys), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_equal_keys_keep_their_input_order(dtype):
    keys = np.array([5, 3, 5, 3, 5, 0, 3], dtype=dtype)
    sorted_keys, index = oracles.radix_sort(keys)
    np.testing.assert_array_equal(sorted_keys, [0, 3, 3, 3, 5, 5, 5])
    np.testing.assert_array_equal(index, [5, 1, 3, 6, 0, 2, 4])


def test_values_follow_their_keys():
    keys = np.array([-1, 7, -9, 7], dtype=np.int32)
    values = np.array(["a", "b", "c", "d"])
    sorted_keys, sorted_values = oracles.radix_sort(keys, values)
    np.testing.assert_array_equal(sorted_keys, [-9, -1, 7, 7])
    np.testing.assert_array_equal(sorted_values, ["c", "a", "b", "d"])
    with pytest.raises(ValueError, match="one entry per key"):
        oracles.radix_sort(keys, values[:2])


def test_strided_and_non_native_keys():
    keys = full_range_keys(np.int32, 5000, seed=1)
    np.testing.assert_array_equal(oracles.argsort(keys[::3]), np.argsort(keys[::3], kind="stable"))
    swapped = keys.astype(keys.dtype.newbyteorder(">"))
    np.testing.assert_array_equal(oracles.argsort(swapped), np.argsort(keys, kind="stable"))


def test_float_keys_are_refused():
    with pytest.raises(TypeError, match="integer dtype"):
        oracles.argsort(np.array([0.5, 1.0]))
