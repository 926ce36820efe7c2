import numpy as np
import pytest
from conftest import DISTRIBUTIONS, EDGE_SIZES, needs_two_cpus
from hypothesis import given, settings
from hypothesis import strategies as st

from histkit import oracles
from histkit.distributions import make_keys


def wave_loop(keys, num_bins, warp_size):
    """The chapter's simulate_naive_histogram, written out as plainly as possible."""
    hist = [0] * num_bins
    for start in range(0, len(keys), warp_size):
        wave = [int(k) for k in keys[start:start + warp_size]]
        before = {b: hist[b] for b in wave}
        for b, value in before.items():
            hist[b] = value + 1
    return hist


def test_wave_model_reproduces_the_chapters_table():
    counts = oracles.naive_wave_histogram(np.arange(1000) % 10, 10)
    assert counts.tolist() == [31, 31, 32, 32, 32, 32, 32, 32, 32, 32]
    assert 1000 - counts.sum() == 682


def test_wave_model_loses_nothing_when_every_lane_has_its_own_bucket():
    # The chapter's worked solution 1: 32 lanes, 32 distinct buckets, nothing lost.
    keys = np.tile(np.arange(32), 10)
    np.testing.assert_array_equal(oracles.naive_wave_histogram(keys, 32), np.full(32, 10))


def test_five_lanes_on_one_bucket_advance_it_by_one():
    # The chapter's worked solution 2, one wave: 5 lanes on bucket 0 add 1, not 5.
    keys = np.array([0, 0, 0, 0, 0] + list(range(1, 28)))
    counts = oracles.naive_wave_histogram(keys, 28)
    assert counts[0] == 1 and counts.sum() == 28


@pytest.mark.parametrize("n", EDGE_SIZES + [1000, 4099])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("num_bins", [1, 10, 64, 65, 300])
@pytest.mark.parametrize("warp_size", [32, 1, 5])
def test_wave_model_equals_plain_loop(key_dtype, n, distribution, num_bins, warp_size):
    if num_bins - 1 > np.iinfo(key_dtype).max:
        pytest.skip(f"{num_bins} bins do not fit {np.dtype(key_dtype)} keys")
    keys = make_keys(distribution, n, num_bins, seed=n, dtype=key_dtype)
    got = oracles.naive_wave_histogram(keys, num_bins, warp_size)
    assert got.tolist() == wave_loop(keys, num_bins, warp_size)


@pytest.mark.parametrize("num_bins", [10, 64, 65, 4096, 65536])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_wave_model_equals_plain_loop_when_split_over_threads(idle_machine, distribution,
                                                              num_bins):
    keys = make_keys(distribution, 300_000, num_bins, seed=9)
    got = oracles.naive_wave_histogram(keys, num_bins)
    assert got.tolist() == wave_loop(keys, num_bins, 32)


@needs_two_cpus
@pytest.mark.parametrize("num_bins", [10, 100])
def test_each_chunk_of_waves_reads_its_own_keys_of_a_view(idle_machine, num_bins):
    # the keys before the view differ from the view's: a chunk that started
    # from the wrong place would count them
    big = make_keys("uniform", 600_000, num_bins, seed=10)
    view = big[300_000:][::-1]
    assert oracles.naive_wave_histogram(view, num_bins).tolist() == wave_loop(view, num_bins, 32)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 99), max_size=400), st.integers(1, 70))
def test_wave_model_equals_plain_loop_on_arbitrary_keys(keys, warp_size):
    got = oracles.naive_wave_histogram(np.array(keys, dtype=np.int64), 100, warp_size)
    assert got.tolist() == wave_loop(keys, 100, warp_size)


def test_wave_model_never_exceeds_the_exact_histogram():
    keys = make_keys("zipf", 100_000, 500, seed=4)
    assert np.all(oracles.naive_wave_histogram(keys, 500) <= oracles.histogram(keys, 500))
