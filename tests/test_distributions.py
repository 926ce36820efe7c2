"""The named key generators: small inputs from one stream, large ones in
chunks on every CPU; both deterministic for a seed, both the named pattern."""

import numpy as np
import pytest

from histkit import distributions
from histkit.distributions import GENERATORS, make_keys


@pytest.fixture
def small_chunks(monkeypatch):
    """The chunked path at test sizes: from 1000 keys, chunks of 300."""
    monkeypatch.setattr(distributions, "PARALLEL_FROM", 1000)
    monkeypatch.setattr(distributions, "CHUNK", 300)


def test_small_inputs_come_from_one_stream_of_the_seed():
    for name, generator in GENERATORS.items():
        want = generator(999, 50, np.random.default_rng(7)).astype(np.int32)
        np.testing.assert_array_equal(make_keys(name, 999, 50, seed=7), want)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_chunked_inputs_are_the_same_for_a_seed_whatever_the_cpus(small_chunks, monkeypatch,
                                                                  name):
    first = make_keys(name, 10_007, 50, seed=3, dtype=np.int16)
    monkeypatch.setattr(distributions.os, "cpu_count", lambda: 1)
    np.testing.assert_array_equal(make_keys(name, 10_007, 50, seed=3, dtype=np.int16), first)
    assert first.dtype == np.int16 and len(first) == 10_007
    assert first.min() >= 0 and first.max() < 50
    if name not in ("onebin", "last-apart") and name not in distributions.POSITIONAL:
        # the others draw from the seed
        assert not np.array_equal(make_keys(name, 10_007, 50, seed=4, dtype=np.int16), first)


def test_chunked_patterns_keep_their_positions_across_chunk_boundaries(small_chunks):
    i = np.arange(10_007)
    np.testing.assert_array_equal(make_keys("round-robin", 10_007, 64), i % 64)
    np.testing.assert_array_equal(make_keys("strided-31", 10_007, 64), (31 * i + 17) % 64)
    np.testing.assert_array_equal(make_keys("onebin", 10_007, 64), np.full(10_007, 32))
    hot = np.where(i % 2 == 0, 32, 0)
    np.testing.assert_array_equal(make_keys("half-hot", 10_007, 64), hot)
    np.testing.assert_array_equal(make_keys("hot-head", 10_007, 64),
                                  np.where(i < 32, 32, hot))
    np.testing.assert_array_equal(make_keys("sixteen-sectors", 10_007, 64),
                                  (32 + 4 * (i % 16)) % 64)
    ordered = make_keys("sorted", 10_007, 64)
    assert np.all(np.diff(ordered) >= 0) and len(ordered) == 10_007


def test_chunked_uniform_and_zipf_keys_have_their_shapes(small_chunks):
    uniform = np.bincount(make_keys("uniform", 200_000, 10, seed=1), minlength=10)
    assert uniform.min() > 0.9 * 20_000 and uniform.max() < 1.1 * 20_000
    zipf = np.bincount(make_keys("zipf", 200_000, 1000, seed=1), minlength=1000)
    assert zipf[0] > 0.2 * 200_000 and zipf[0] > 10 * zipf[10]  # a heavy head (1/zeta(1.3))


@pytest.mark.parametrize("num_bins", [3, 251, 65536, (1 << 22) + 5])
def test_large_round_robin_keys_copied_from_one_cycle_are_i_mod_k(num_bins):
    # chunks start anywhere in the cycle: each must continue where the last ended
    from histkit.distributions import CHUNK, PARALLEL_FROM

    n = PARALLEL_FROM + CHUNK // 2 + 12345
    keys = make_keys("round-robin", n, num_bins, seed=9, dtype=np.uint32)
    assert np.array_equal(keys, (np.arange(n, dtype=np.int64) % num_bins).astype(np.uint32))


def test_round_robin_keys_over_more_bins_than_a_chunk_build_no_cycle(monkeypatch):
    # a cycle of num_bins keys would be 2^40 keys here: each chunk computes its own
    monkeypatch.setattr(distributions, "PARALLEL_FROM", 1000)
    monkeypatch.setattr(distributions, "CHUNK", 256)
    keys = make_keys("round-robin", 5000, 2**40, dtype=np.int64)
    assert np.array_equal(keys, np.arange(5000))
    small = make_keys("round-robin", 5000, 7, dtype=np.int8)  # (7 <= CHUNK: the cycle)
    assert np.array_equal(small, np.arange(5000) % 7)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_full_width_extremes_are_exactly_the_dtypes_edges(dtype):
    info = np.iinfo(dtype)
    keys = distributions.full_width_keys("extremes", 4000, seed=1, dtype=dtype)
    edges = {int(info.min), int(info.min) + 1, 0, 1, int(info.max) - 1, int(info.max)}
    if info.min < 0:
        edges.add(-1)
    assert keys.dtype == dtype and {int(k) for k in keys} == edges


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("distribution", ["uniform", "sorted", "round-robin"])
def test_full_width_keys_span_the_dtypes_whole_range(distribution, dtype):
    # the radix sort's cases: its top digit decides only if keys reach both ends
    info = np.iinfo(dtype)
    keys = distributions.full_width_keys(distribution, 1 << 17, seed=2, dtype=dtype)
    span = float(info.max) - float(info.min)
    as_float = keys.astype(float)
    assert keys.dtype == dtype
    assert as_float.min() < float(info.min) + span / 16
    assert as_float.max() > float(info.max) - span / 16
    if distribution == "sorted":  # the shape is stretched in order: still sorted
        assert np.all(np.diff(as_float) >= 0)


@pytest.mark.parametrize("dtype,largest_k", [(np.int8, 128), (np.uint8, 256), (np.int16, 32768)])
def test_keys_take_every_k_whose_largest_key_the_dtype_holds(dtype, largest_k):
    keys = make_keys("round-robin", largest_k, largest_k, dtype=dtype)
    assert int(keys.max()) == largest_k - 1
    with pytest.raises(ValueError, match="do not fit"):
        make_keys("round-robin", 10, largest_k + 1, dtype=dtype)


def _windows(keys: np.ndarray, width: int = 32) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(keys, width)


def test_half_hot_keys_hold_exactly_half_hot_keys_in_any_32_in_a_row():
    num_bins = 1 << 20
    windows = _windows(make_keys("half-hot", 1001, num_bins))
    assert set((windows == num_bins // 2).sum(axis=1)) == {16}
    assert set((windows == 0).sum(axis=1)) == {16}


def test_hot_head_keys_open_with_32_hot_keys_then_alternate():
    num_bins = 1 << 20
    keys = make_keys("hot-head", 20_011, num_bins)
    assert (keys[:32] == num_bins // 2).all()
    later = _windows(keys[32:])
    assert set((later == num_bins // 2).sum(axis=1)) == {16}


def test_sixteen_sectors_keys_touch_16_sectors_of_their_own_in_any_32_in_a_row():
    num_bins = 1 << 20
    keys = make_keys("sixteen-sectors", 20_011, num_bins)
    sectors = _windows(keys) // 4
    assert {len(set(w)) for w in sectors[::97]} == {16}
    assert len(set(keys)) == 16 and keys.min() == num_bins // 2


@pytest.mark.parametrize(("name", "n", "hot", "sectors", "choice"), [
    ("half-hot", 1001, 1024, 64, "fast"),          # exactly half hot: no majority
    ("hot-head", 20_011, 1040, 64, "fast-hold"),   # the first run's 16 more: a majority
    ("sixteen-sectors", 20_011, 128, 1024, "fast"),  # exactly half scattered: not more
])
def test_the_auto_edge_patterns_sit_where_their_names_say_in_autos_sample(
        name, n, hot, sectors, choice):
    # What the conformance cases of these patterns rest on, judged by the host
    # rule (gpu.policy), itself pinned against hand-built samples elsewhere.
    from histkit.conformance.checks import auto_sample
    from histkit.gpu import policy

    num_bins, shared_bins = 1 << 20, 58_111  # an H200's fast layout at K = 2^20
    sample = auto_sample(make_keys(name, n, num_bins), policy.SAMPLE_RUNS)
    assert policy.hot_global_count(sample, shared_bins, num_bins) == hot
    assert policy.scattered_sectors(sample, shared_bins, num_bins) == sectors
    assert policy.auto_choice(sample, shared_bins, num_bins) == choice


def test_a_kept_zipf_draw_is_a_fresh_writable_copy_equal_to_numpys_own_draw(monkeypatch):
    monkeypatch.setattr(distributions, "_kept", type(distributions._kept)())
    first = make_keys("zipf", 5000, 300, seed=11, dtype=np.int16)
    first[:] = -1  # a caller's writes never reach the kept draw
    again = make_keys("zipf", 5000, 300, seed=11, dtype=np.int16)
    independent = (np.random.default_rng(11).zipf(distributions.ZIPF_EXPONENT, 5000) - 1) % 300
    assert again.dtype == np.int16 and again.flags.writeable
    assert np.array_equal(again, independent)


def test_kept_draws_stay_within_their_byte_budget(monkeypatch):
    monkeypatch.setattr(distributions, "_kept", type(distributions._kept)())
    monkeypatch.setattr(distributions, "KEPT_BYTES", 3000)
    for seed in range(5):
        make_keys("zipf", 1000, 300, seed=seed)  # 2000 bytes each (uint16 bins)
    assert sum(kept.nbytes for kept in distributions._kept.values()) <= 3000
    assert list(distributions._kept) == [("zipf", 1000, 300, 4)]  # the latest kept
