"""Pooled pages for large oracle outputs: reused only after the caller drops
them, never visible in a later result, bounded, and released on request."""

import gc

import numpy as np

from histkit import oracles
from histkit.oracles import _pages

BIG = _pages.MIN_POOLED_BYTES // 8 * 3  # int64 elements: 3 MiB, pooled


def setup_function():
    oracles.release_pages()


def test_small_arrays_are_plain_numpy_arrays():
    small = _pages.empty(10, np.int32)
    assert small.flags.owndata and small.dtype == np.int32 and len(small) == 10


def test_a_large_array_is_writable_aligned_and_contiguous():
    array = _pages.empty(BIG, np.int64)
    assert array.dtype == np.int64 and array.shape == (BIG,)
    assert array.flags.writeable and array.flags.c_contiguous and array.ctypes.data % 4096 == 0
    array[:] = 7
    assert int(array.sum()) == 7 * BIG


def test_a_dropped_array_returns_its_block_and_the_next_one_reuses_it():
    first = _pages.empty(BIG, np.int64)
    address = first.ctypes.data
    assert _pages.pooled_bytes() == 0
    del first
    gc.collect()
    assert _pages.pooled_bytes() >= BIG * 8
    again = _pages.empty(BIG, np.int64)
    assert again.ctypes.data == address and _pages.pooled_bytes() == 0


def test_a_view_keeps_the_block_out_of_the_pool():
    array = _pages.empty(BIG, np.int64)
    array[:] = np.arange(BIG)
    view = array[BIG // 2:]
    del array
    gc.collect()
    assert _pages.pooled_bytes() == 0
    other = _pages.empty(BIG, np.int64)  # must not land on the view's pages
    other[:] = -1
    np.testing.assert_array_equal(view, np.arange(BIG // 2, BIG))


def test_the_pool_is_bounded_and_released_on_request():
    arrays = [_pages.empty(BIG, np.int64) for _ in range(_pages.POOL_BLOCKS + 3)]
    del arrays
    gc.collect()
    assert 0 < _pages.pooled_bytes() <= _pages.POOL_BLOCKS * (BIG * 8 + _pages.BLOCK_UNIT)
    released = oracles.release_pages()
    assert released > 0 and _pages.pooled_bytes() == 0


def test_counting_sort_on_reused_pages_equals_numpy_every_time():
    # A later call writes into the pages of an earlier, dropped result: no
    # stale key or index may survive into it.
    rng = np.random.default_rng(5)
    n = 1 << 19
    for num_bins, keys in ((256, rng.integers(0, 256, n, dtype=np.int32)),
                           (256, np.full(n, 3, np.int32)),
                           (7, np.sort(rng.integers(0, 7, n, dtype=np.int32))[::-1].copy()),
                           (70_000, rng.integers(0, 70_000, n, dtype=np.int32))):
        sorted_keys, index = oracles.counting_sort(keys, num_bins)
        want = np.argsort(keys, kind="stable")
        np.testing.assert_array_equal(index, want)
        np.testing.assert_array_equal(sorted_keys, keys[want])
        del sorted_keys, index
        gc.collect()
