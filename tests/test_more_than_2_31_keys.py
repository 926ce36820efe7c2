"""Indexing is 64-bit: more than 2^31 keys are counted exactly.

The keys are a seeded pattern tiled many times (uint8, so 2^31 + 93 keys take
about 2 GiB), and the reference is the pattern's count times the number of
tiles: no reference needs to hold 2^31 int64 values.

Every test that walks more than 2^31 keys is marked ``large`` (``nox -s
tests_large``: GBs of memory, or seconds each); the keys 2^31 bytes apart
(a few keys, strided) stay in ``nox -s tests``.
"""

import numpy as np
import pytest

from histkit import oracles

PATTERN = 1 << 20  # a multiple of the warp size, so waves never straddle tiles
TILES = (1 << 31) // PATTERN + 1


@pytest.fixture(scope="module")
def tiled_keys():
    rng = np.random.default_rng(31)
    pattern = rng.integers(0, 200, PATTERN, dtype=np.uint8)
    tail = rng.integers(0, 200, 93, dtype=np.uint8)
    keys = np.concatenate([np.tile(pattern, TILES), tail])
    assert keys.size > 2**31
    return keys, pattern, tail


@pytest.mark.large
def test_histogram_of_more_than_2_31_keys(tiled_keys):
    keys, pattern, tail = tiled_keys
    expected = np.bincount(pattern, minlength=200) * TILES + np.bincount(tail, minlength=200)
    np.testing.assert_array_equal(oracles.histogram(keys, 200), expected)


@pytest.mark.large
def test_histogram_of_more_than_2_31_keys_into_many_bins(tiled_keys):
    # Past 4096 bins the oracle counts in one lane, two keys at a time (its
    # other loop): the same uint8 keys, counted into 5000 bins, reach it.
    keys, pattern, tail = tiled_keys
    expected = np.bincount(pattern, minlength=5000) * TILES + np.bincount(tail, minlength=5000)
    np.testing.assert_array_equal(oracles.histogram(keys, 5000), expected)


@pytest.mark.large
def test_wave_model_of_more_than_2_31_keys(tiled_keys):
    keys, pattern, tail = tiled_keys
    expected = (oracles.naive_wave_histogram(pattern, 200) * TILES
                + oracles.naive_wave_histogram(tail, 200))
    # The per-tile figure is itself checked against a plain loop elsewhere;
    # here the point is that 2^31+ keys are walked without an index overflow.
    np.testing.assert_array_equal(oracles.naive_wave_histogram(keys, 200), expected)


@pytest.mark.large
def test_a_bad_key_past_2_31_is_named_with_its_64_bit_index(tiled_keys):
    keys, _, _ = tiled_keys
    keys = keys.copy()
    bad = keys.size - 5
    keys[bad] = 250
    with pytest.raises(ValueError, match=rf"index {bad} is 250"):
        oracles.histogram(keys, 200)


@pytest.mark.large
def test_a_sort_whose_index_array_passes_2_gib_comes_from_one_page_block_intact():
    # 2^28 + 3 keys: the int64 original indices take 2 GiB + 24 bytes, one
    # block of the oracles' page pool, sized and mapped with 64-bit byte counts.
    # Key k % 7 puts the indices of each key in one run: k, k + 7, k + 14, ...
    n = (1 << 28) + 3
    keys = (np.arange(n, dtype=np.int64) % 7).astype(np.uint8)
    sorted_keys, original_index = oracles.counting_sort(keys, 7)
    counts = np.bincount(keys, minlength=7)
    starts = np.concatenate([[0], np.cumsum(counts)])
    for key in range(7):
        run = slice(starts[key], starts[key + 1])
        assert np.all(sorted_keys[run] == key)
        np.testing.assert_array_equal(original_index[run], np.arange(key, n, 7))
    del sorted_keys, original_index
    oracles.release_pages()


# np.zeros takes untouched pages from the kernel's zero page: a 2 GiB or 4 GiB
# array costs memory only where it is written, so the tests below reach
# offsets past 2^31 on any machine.

def _two_keys_2_31_bytes_apart():
    backing = np.zeros((1 << 31) + 1, np.uint8)
    backing[-1] = 7
    keys = backing[:: 1 << 31]
    assert keys.strides == (1 << 31,) and keys.tolist() == [0, 7]
    return keys


@pytest.mark.parametrize("num_bins", [10, 5000])  # four lanes; one lane, pairs
def test_histogram_of_keys_2_31_bytes_apart(num_bins):
    keys = _two_keys_2_31_bytes_apart()
    expected = np.bincount([0, 7], minlength=num_bins)
    np.testing.assert_array_equal(oracles.histogram(keys, num_bins), expected)
    counts, _ = oracles.privatized_histogram(keys, num_bins)
    np.testing.assert_array_equal(counts, expected)
    np.testing.assert_array_equal(oracles.naive_wave_histogram(keys, num_bins), expected)


def test_histogram_of_nine_keys_2_29_bytes_apart_walks_four_lanes_past_2_31_bytes():
    # the four-lane loop steps 4 keys at a time: 4 x 2^29 bytes = 2^31, so
    # its byte steps must be 64-bit (two keys 2^31 apart never enter that loop)
    backing = np.zeros(8 * (1 << 29) + 1, np.uint8)
    keys = backing[:: 1 << 29]
    keys[:] = np.arange(9) % 7
    assert keys.size == 9 and keys.strides == (1 << 29,)
    np.testing.assert_array_equal(oracles.histogram(keys, 10),
                                  np.bincount(np.arange(9) % 7, minlength=10))


def test_scan_and_sorts_of_keys_2_31_bytes_apart():
    keys = _two_keys_2_31_bytes_apart()
    np.testing.assert_array_equal(oracles.exclusive_scan(keys), [0, 0])
    sorted_keys, original_index = oracles.counting_sort(keys, 10)
    np.testing.assert_array_equal(sorted_keys, [0, 7])
    np.testing.assert_array_equal(original_index, [0, 1])
    np.testing.assert_array_equal(oracles.radix_sort(keys)[0], [0, 7])
    np.testing.assert_array_equal(oracles.argsort(keys), [0, 1])


@pytest.mark.large
@pytest.mark.parametrize("num_bins", [10, 5000])  # four lanes; one lane, pairs
def test_chunks_that_start_past_2_31_keys_count_from_where_they_start(num_bins, idle_machine):
    # 2^32 + 10 keys in several chunks: the later chunks start past 2^31
    # (2^31 + 93 keys in 8 chunks would not: the last starts at 7/8 of 2^31).
    keys = np.zeros((1 << 32) + 10, np.uint8)
    keys[-1] = 7
    expected = np.zeros(num_bins, np.int64)
    expected[0], expected[7] = keys.size - 1, 1
    np.testing.assert_array_equal(oracles.histogram(keys, num_bins), expected)


@pytest.mark.large
def test_a_bad_key_past_2_31_among_more_than_4096_bins_is_named_with_its_64_bit_index():
    # uint16 keys, so one can be past 5000 bins (the one-lane pair loop); the
    # 4 GiB of zeros stay untouched pages but the one written.
    keys = np.zeros((1 << 31) + 10, np.uint16)
    bad = (1 << 31) + 3
    keys[bad] = 6000
    with pytest.raises(ValueError, match=rf"index {bad} is 6000"):
        oracles.histogram(keys, 5000)


# The wave model past 2^31 keys, in both of its loops (<= 64 bins: a bit set per
# wave; more: a last-wave stamp per bin), at warp sizes that make 2^31 + 93
# waves, waves of 32, two waves with the boundary past 2^31, and one wave.
WAVE_KEYS = (1 << 31) + 93
ONES_AT = ((1 << 31) + 5, WAVE_KEYS - 1)


@pytest.fixture(scope="module")
def zero_keys_with_two_ones():
    keys = np.zeros(WAVE_KEYS, np.uint8)  # untouched pages: a few MB resident
    keys[list(ONES_AT)] = 1
    return keys


def _waves_touching(warp_size: int) -> tuple[int, int]:
    """Waves holding a 0 and waves holding a 1, counted from the layout alone."""
    waves = -(-WAVE_KEYS // warp_size)
    with_one = {i // warp_size for i in ONES_AT}
    # a wave lacks a 0 only when every key in it is a 1
    only_ones = sum(1 for w in with_one
                    if min(warp_size, WAVE_KEYS - w * warp_size) <= sum(
                        1 for i in ONES_AT if i // warp_size == w))
    return waves - only_ones, len(with_one)


@pytest.mark.large
@pytest.mark.parametrize("num_bins", [2, 100])  # a bit set per wave; a stamp per bin
@pytest.mark.parametrize("warp_size", [1, 32, (1 << 31) + 50, WAVE_KEYS, 1 << 40])
def test_wave_model_past_2_31_keys_in_both_loops(zero_keys_with_two_ones, num_bins, warp_size):
    with_zero, with_one = _waves_touching(min(warp_size, WAVE_KEYS))
    expected = np.zeros(num_bins, np.int64)
    expected[0], expected[1] = with_zero, with_one
    got = oracles.naive_wave_histogram(zero_keys_with_two_ones, num_bins, warp_size)
    np.testing.assert_array_equal(got, expected)


def test_expected_wave_counts_are_the_waves_by_hand():
    # _waves_touching, checked against what the layout says
    assert _waves_touching(1) == (WAVE_KEYS - 2, 2)
    assert _waves_touching(32) == (-(-WAVE_KEYS // 32), 2)  # the ones sit in different waves
    assert _waves_touching((1 << 31) + 50) == (2, 2)  # one 1 in each of the two waves
    assert _waves_touching(WAVE_KEYS) == (1, 1)


@pytest.mark.large
@pytest.mark.parametrize("num_bins", [2, 100])
def test_a_bad_key_past_2_31_is_named_by_the_wave_model(num_bins):
    keys = np.zeros(WAVE_KEYS, np.uint8)
    bad = (1 << 31) + 7
    keys[bad] = 200
    with pytest.raises(ValueError, match=rf"index {bad} is 200"):
        oracles.naive_wave_histogram(keys, num_bins)


def test_an_oracle_output_of_more_than_2_31_bytes_is_one_pooled_block_of_its_size():
    # the page pool's sizes are 64-bit: a block past 2 GiB is mapped, kept
    # and released whole (mapped pages cost nothing until written)
    from histkit.oracles import _pages

    _pages.release_pages()
    n = (1 << 31) + 5
    block = -(-n // _pages.BLOCK_UNIT) * _pages.BLOCK_UNIT
    array = _pages.empty(n, np.uint8)
    assert array.shape == (n,) and array.flags.writeable
    array[-1] = 9  # the last byte is mapped
    assert array[-1] == 9
    del array
    pooled = block if block <= int(_pages._physical_bytes() * _pages.POOL_SHARE) else 0
    assert _pages.pooled_bytes() == pooled
    assert _pages.release_pages() == pooled and _pages.pooled_bytes() == 0


@pytest.mark.large
@pytest.mark.parametrize("num_bins", [2, 100])
def test_wave_chunks_that_start_past_2_31_waves_count_from_where_they_start(num_bins,
                                                                          idle_machine):
    # one key per wave over 2^32 + 10 keys: the later chunks start past wave
    # 2^31 (over 2^31 + 93 waves in 8 chunks none does)
    keys = np.zeros((1 << 32) + 10, np.uint8)
    keys[-1] = 1
    expected = np.zeros(num_bins, np.int64)
    expected[0], expected[1] = keys.size - 1, 1
    np.testing.assert_array_equal(oracles.naive_wave_histogram(keys, num_bins, 1), expected)
