import numpy as np
import pytest
from conftest import DISTRIBUTIONS, EDGE_SIZES, needs_two_cpus
from hypothesis import given, settings
from hypothesis import strategies as st

from histkit import oracles
from histkit.distributions import make_keys


def cumsum_exclusive(counts):
    total = np.cumsum(np.asarray(counts, dtype=np.int64))
    return np.concatenate([[0], total[:-1]])[: len(counts)]


def test_exclusive_scan_reproduces_the_chapters_offsets():
    assert oracles.exclusive_scan([2, 2, 1, 3]).tolist() == [0, 2, 4, 5]


@pytest.mark.parametrize("n", EDGE_SIZES + [100_000])
def test_exclusive_scan_equals_cumsum(key_dtype, n):
    rng = np.random.default_rng(n)
    # As large as the dtype allows while the int64 total still fits.
    high = min(np.iinfo(key_dtype).max, np.iinfo(np.int64).max // max(n, 1))
    counts = rng.integers(0, high, size=n, dtype=np.uint64, endpoint=True).astype(key_dtype)
    got = oracles.exclusive_scan(counts)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, cumsum_exclusive(counts))


@pytest.mark.parametrize("counts, index", [([1, 2, -4, 5], 2), ([-3, 2], 0), ([4, -1], 1)])
def test_exclusive_scan_rejects_negative_counts_naming_the_index(counts, index):
    says = rf"counts must be >= 0; count at index {index} is {counts[index]}$"
    with pytest.raises(ValueError, match=says):
        oracles.exclusive_scan(np.array(counts))


@pytest.mark.parametrize("counts, index", [([2**62, 2**62, 2**62, 1], 1), ([2**63, 0], 0)])
def test_exclusive_scan_refuses_to_overflow_int64(counts, index):
    # the first index whose count carries the running offset past int64
    with pytest.raises(OverflowError, match=rf"at the count at index {index}$"):
        oracles.exclusive_scan(np.array(counts, dtype=np.uint64))


def test_exclusive_scan_ignores_the_last_count_which_enters_no_offset():
    counts = np.array([2**62, 2**62 - 1, 2**63 + 5], dtype=np.uint64)
    assert oracles.exclusive_scan(counts).tolist() == [0, 2**62, 2**63 - 1]


def test_counting_sort_reproduces_the_chapters_hand_trace():
    keys, index = oracles.counting_sort(np.array([3, 1, 3, 0, 2, 1, 3, 0]), 4)
    assert keys.tolist() == [0, 0, 1, 1, 2, 3, 3, 3]
    assert index.tolist() == [3, 7, 1, 5, 4, 0, 2, 6]


@pytest.mark.parametrize("n", EDGE_SIZES)
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("num_bins", [1, 8, 100])
def test_counting_sort_equals_stable_argsort(key_dtype, n, distribution, num_bins):
    keys = make_keys(distribution, n, num_bins, seed=n, dtype=key_dtype)
    sorted_keys, index = oracles.counting_sort(keys, num_bins)
    order = np.argsort(keys, kind="stable")
    assert sorted_keys.dtype == keys.dtype and index.dtype == np.int64
    np.testing.assert_array_equal(index, order)
    np.testing.assert_array_equal(sorted_keys, keys[order])


@pytest.mark.parametrize("num_bins", [2, 256, 4097, 65536, 1 << 20])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_counting_sort_stays_stable_when_split_over_threads(distribution, num_bins):
    keys = make_keys(distribution, 1 << 20, num_bins, seed=11)
    sorted_keys, index = oracles.counting_sort(keys, num_bins)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(index, order)
    np.testing.assert_array_equal(sorted_keys, keys[order])


def test_counting_sort_of_a_strided_view_indexes_the_view():
    base = make_keys("uniform", 200_001, 30, seed=8, dtype=np.uint16)
    view = base[::-2]
    sorted_keys, index = oracles.counting_sort(view, 30)
    np.testing.assert_array_equal(index, np.argsort(view, kind="stable"))
    np.testing.assert_array_equal(sorted_keys, np.sort(view))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=500))
def test_counting_sort_equals_stable_argsort_on_arbitrary_keys(keys):
    keys = np.array(keys, dtype=np.int64)
    sorted_keys, index = oracles.counting_sort(keys, 21)
    np.testing.assert_array_equal(index, np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(sorted_keys, np.sort(keys))


@pytest.mark.parametrize("dtype", [np.uint8, np.int64])
def test_counting_sort_asks_for_exactly_the_memory_its_results_and_counts_take(
        monkeypatch, dtype):
    # sorted keys (the input's width), int64 original indices, a row of int64
    # counters and the int64 end of every bin: an estimate below that lets a
    # large call die out of memory unexplained
    from histkit.oracles import _inputs

    n, num_bins = 1000, 50
    needed = n * np.dtype(dtype).itemsize + 8 * n + 16 * num_bins
    keys = np.arange(n, dtype=dtype) % num_bins
    monkeypatch.setattr(_inputs, "available_memory", lambda: needed)
    oracles.counting_sort(keys, num_bins)
    monkeypatch.setattr(_inputs, "available_memory", lambda: needed - 1)
    with pytest.raises(MemoryError, match=rf"counting_sort of {n} keys into num_bins={num_bins} "
                                          rf"needs .* \({needed} bytes\)"):
        oracles.counting_sort(keys, num_bins)


@needs_two_cpus
@pytest.mark.parametrize("stride", [1, 3])
def test_sorted_keys_inside_a_larger_sorted_array_are_sorted_chunk_by_chunk_from_their_own_keys(
        idle_machine, stride):
    # Presorted input is copied chunk by chunk, each chunk checking its own
    # keys' order. The keys before the view are sorted too: a chunk that read
    # from the wrong place would find them in order and copy them.
    n = 1 << 19
    big = np.sort(np.random.default_rng(5).integers(0, 1000, 2 * n * stride))
    view = big[n * stride::stride]
    sorted_keys, index = oracles.counting_sort(view, 1000)
    np.testing.assert_array_equal(index, np.argsort(view, kind="stable"))
    np.testing.assert_array_equal(sorted_keys, view)


@needs_two_cpus
def test_a_descent_exactly_at_a_chunk_start_before_equal_keys_is_not_taken_for_sorted(
        idle_machine):
    # Each chunk of presorted input checks its first key against the key
    # before the chunk. Ones then zeros, the step placed where chunk 1 starts
    # for every chunk count the split can choose: each chunk alone is in order.
    n = 1 << 19
    for chunks in range(2, 65):
        start = int(n * 1.0 / chunks)
        keys = np.concatenate([np.ones(start, np.int32), np.zeros(n - start, np.int32)])
        sorted_keys, index = oracles.counting_sort(keys, 2)
        np.testing.assert_array_equal(index, np.r_[start:n, 0:start], err_msg=str(chunks))
        np.testing.assert_array_equal(sorted_keys, np.sort(keys))


def test_a_sorted_view_ending_in_a_bad_key_reports_it_whatever_lies_past_the_view():
    # Sorted input takes a copying fast path only when its first and last keys
    # are valid; the keys after the view (valid ones here) are not its keys.
    big = np.array([0, 1, 2, 7, 0, 0, 0], np.int32)
    with pytest.raises(oracles.BadKeyError) as caught:
        oracles.counting_sort(big[:4], 3)
    assert (caught.value.index, caught.value.value) == (3, 7)
