"""histkit.dask on CPU workers: the local scheduler and a distributed
LocalCluster (no GPU). Expected values come from the oracles on the
concatenated input, which are checked against NumPy elsewhere."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from histkit import dask as hd  # noqa: E402
from histkit import oracles  # noqa: E402


@pytest.fixture(scope="module")
def cluster_client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


CASES = [("uniform", 100_003, 300, 7_001), ("onebin", 50_000, 16, 4_096),
         ("sorted", 33_333, 1000, 10_000), ("uniform", 10, 4, 3), ("uniform", 5, 7, 100)]


def keys_of(distribution, n, num_bins):
    from histkit.distributions import make_keys

    return make_keys(distribution, n, num_bins, seed=n)


@pytest.mark.parametrize("distribution,n,num_bins,chunk", CASES)
def test_histogram_equals_the_oracle_on_the_concatenated_input(distribution, n, num_bins, chunk):
    keys = keys_of(distribution, n, num_bins)
    got = hd.histogram(da.from_array(keys, chunks=chunk), num_bins)
    assert got.shape == (num_bins,) and got.dtype == np.int64
    np.testing.assert_array_equal(got.compute(), oracles.histogram(keys, num_bins))


@pytest.mark.parametrize("distribution,n,num_bins,chunk", CASES)
def test_counting_sort_is_stable_and_equals_the_oracle(distribution, n, num_bins, chunk):
    keys = keys_of(distribution, n, num_bins)
    sorted_keys, index = hd.counting_sort(da.from_array(keys, chunks=chunk), num_bins)
    assert sorted_keys.chunks == da.from_array(keys, chunks=chunk).chunks
    got_keys, got_index = da.compute(sorted_keys, index)
    want_keys, want_index = oracles.counting_sort(keys, num_bins)
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_index, want_index)


def _same_bits(got, want):
    assert np.asarray(got, np.float64).tobytes() == np.asarray(want, np.float64).tobytes()


def wide_weights(n, dtype, seed):
    """Weights over many binades, both signs, with some exact cancellation."""
    rng = np.random.default_rng(seed)
    top = {np.float64: 300, np.float32: 30}.get(dtype, 4)
    weights = (rng.standard_normal(n) * 10.0 ** rng.integers(-top, top, n)).astype(dtype)
    weights[1::7] = -weights[::7][:len(weights[1::7])]
    return weights


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("distribution,n,num_bins,chunk", CASES)
def test_weighted_sums_equal_the_oracle_on_the_concatenated_input_however_chunked(
        distribution, n, num_bins, chunk, dtype):
    keys = keys_of(distribution, n, num_bins)
    weights = wide_weights(n, dtype, n + num_bins)
    got = hd.histogram(da.from_array(keys, chunks=chunk), num_bins,
                       weights=da.from_array(weights, chunks=chunk))
    assert got.shape == (num_bins,) and got.dtype == np.float64
    _same_bits(got.compute(), oracles.histogram(keys, num_bins, weights))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint64])
def test_integer_weights_sum_exactly_past_2_53_however_chunked(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 5, 3_001)
    weights = rng.integers(info.min, info.max, 3_001, dtype=dtype, endpoint=True)
    weights[:4] = [info.max, info.max, info.min, info.max - 1]
    got = hd.histogram(da.from_array(keys, chunks=700), 5,
                       weights=da.from_array(weights, chunks=700)).compute()
    # the exact sums by Python integers, rounded once to float64
    want = [float(sum(int(w) for w in weights[keys == b])) for b in range(5)]
    assert got.tolist() == want
    _same_bits(got, oracles.histogram(keys, 5, weights))


def test_weighted_sums_are_fsum_of_each_bin_where_chunks_rounded_alone_would_lose_them():
    import math

    keys = np.array([0, 1, 0, 0, 1, 0, 1, 0])
    weights = np.array([1e16, 3.0, 1.0, -1e16, 1e-300, 0.5, -3.0, 2.0**-60])
    got = hd.histogram(da.from_array(keys, chunks=3), 2,
                       weights=da.from_array(weights, chunks=3)).compute()
    for b in range(2):
        assert got[b] == math.fsum(weights[keys == b])
    # numpy's per-chunk float64 sums, then their sum: 1.0 is lost in bin 0
    assert sum(np.bincount(keys[i:i + 3], weights[i:i + 3], minlength=2)[0]
               for i in range(0, 8, 3)) != got[0]


def test_weighted_sums_with_nan_and_infinities_follow_ieee_per_bin_across_chunks():
    keys = np.array([0, 1, 2, 0, 1, 2, 3, 3])
    weights = np.array([np.inf, np.nan, np.inf, 1.0, 2.0, -np.inf, 5.0, -np.inf])
    got = hd.histogram(da.from_array(keys, chunks=3), 4,
                       weights=da.from_array(weights, chunks=3)).compute()
    _same_bits(got, oracles.histogram(keys, 4, weights))
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2]) and got[3] == -np.inf


def test_a_chunk_whose_sum_overflows_still_gives_the_exact_total():
    # the first chunk's exact sum, 2e308, is past float64; the total, 1e308, is not
    keys = np.zeros(4, np.int64)
    weights = np.array([1e308, 1e308, -1e308, 0.0])
    got = hd.histogram(da.from_array(keys, chunks=2), 1,
                       weights=da.from_array(weights, chunks=2)).compute()
    assert got[0] == 1e308 == oracles.histogram(keys, 1, weights)[0]
    # and a total past float64 is infinite, as the oracle's
    more = np.array([1e308, 1e308, 1e308, -1e308])
    assert hd.histogram(da.from_array(keys, chunks=2), 1,
                        weights=da.from_array(more, chunks=2)).compute()[0] == np.inf


def test_weighted_bad_keys_and_weights_are_named():
    keys = keys_of("uniform", 20_000, 50)
    keys[12_345] = 50
    weights = np.ones(20_000)
    lazy = hd.histogram(da.from_array(keys, chunks=3_000), 50,
                        weights=da.from_array(weights, chunks=3_000))
    with pytest.raises(oracles.BadKeyError) as caught:
        lazy.compute()
    assert caught.value.index == 12_345
    x = da.from_array(keys, chunks=3_000)
    with pytest.raises(TypeError, match="float16, float32, float64 or integer; got bool"):
        hd.histogram(x, 60, weights=da.ones(20_000, dtype=bool, chunks=3_000))
    with pytest.raises(ValueError, match="keys' shape"):
        hd.histogram(x, 60, weights=da.ones(19_999, chunks=3_000))
    # weights chunked otherwise, or in memory, are aligned to the keys' chunks
    keys[12_345] = 0
    x = da.from_array(keys, chunks=3_000)
    want = oracles.histogram(keys, 50, weights)
    _same_bits(hd.histogram(x, 50, weights=da.from_array(weights, chunks=7_000)).compute(), want)
    _same_bits(hd.histogram(x, 50, weights=weights).compute(), want)


def test_the_first_bad_key_is_named_by_its_global_index_whichever_chunk_finishes_first():
    keys = keys_of("uniform", 60_000, 100)
    keys[[55_000, 20_001, 40_000]] = [100, -1, 500]
    x = da.from_array(keys, chunks=5_000)
    for lazy in (hd.histogram(x, 100), hd.counting_sort(x, 100)[1]):
        with pytest.raises(oracles.BadKeyError) as caught:
            lazy.compute()
        assert (caught.value.index, caught.value.value) == (20_001, -1)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="dask.array.Array"):
        hd.histogram(np.arange(3), 3)
    with pytest.raises(TypeError, match="integer dtype"):
        hd.histogram(da.zeros(4, dtype=float, chunks=2), 3)
    with pytest.raises(ValueError, match="num_bins"):
        hd.histogram(da.zeros(4, dtype=int, chunks=2), 0)


def test_unknown_chunk_sizes_are_refused_before_any_work():
    keys = da.from_array(keys_of("uniform", 1_000, 10), chunks=300)
    masked = keys[keys >= 0]  # a boolean mask leaves the chunk sizes unknown
    for call in (lambda: hd.histogram(masked, 10), lambda: hd.counting_sort(masked, 10)):
        with pytest.raises(ValueError, match=r"keys must have known chunk sizes"):
            call()
    samples = keys.astype(np.float64)
    with pytest.raises(ValueError, match=r"samples must have known chunk sizes"):
        hd.bin_histogram(samples[samples >= 0], 4, (0, 10))
    np.testing.assert_array_equal(hd.histogram(masked.compute_chunk_sizes(), 10).compute(),
                                  oracles.histogram(keys.compute(), 10))


def test_memory_mapped_npy_files_are_counted_binned_and_sorted_chunk_by_chunk(tmp_path):
    keys = keys_of("zipf", 50_001, 700).astype(np.int32)
    samples = _binning_samples(np.float32, 50_001, 9)
    weights = wide_weights(50_001, np.float64, 9)
    for name, array in (("keys", keys), ("samples", samples), ("weights", weights)):
        np.save(tmp_path / f"{name}.npy", array)
    on_disk = {name: da.from_array(np.load(tmp_path / f"{name}.npy", mmap_mode="r"),
                                   chunks=8_192)
               for name in ("keys", "samples", "weights")}
    np.testing.assert_array_equal(hd.histogram(on_disk["keys"], 700).compute(),
                                  oracles.histogram(keys, 700))
    _same_bits(hd.histogram(on_disk["keys"], 700, weights=on_disk["weights"]).compute(),
               oracles.histogram(keys, 700, weights))
    got = da.compute(*hd.counting_sort(on_disk["keys"], 700))
    for got_part, want_part in zip(got, oracles.counting_sort(keys, 700), strict=True):
        np.testing.assert_array_equal(got_part, want_part)
    counts, edges = da.compute(*hd.bin_histogram(on_disk["samples"], 50, (0.0, 1.0)))
    want = oracles.bin_histogram(samples, 50, (0.0, 1.0))
    np.testing.assert_array_equal(counts, want[0])
    assert edges.tobytes() == want[1].tobytes()


def test_a_distributed_cluster_of_cpu_workers_gives_the_same_answers(cluster_client):
    keys = keys_of("zipf", 200_001, 5000)
    x = da.from_array(keys, chunks=25_000)
    np.testing.assert_array_equal(hd.histogram(x, 5000).compute(),
                                  oracles.histogram(keys, 5000))
    got_keys, got_index = da.compute(*hd.counting_sort(x, 5000))
    want_keys, want_index = oracles.counting_sort(keys, 5000)
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_index, want_index)
    weights = wide_weights(len(keys), np.float32, 1)
    _same_bits(hd.histogram(x, 5000, weights=da.from_array(weights, chunks=25_000)).compute(),
               oracles.histogram(keys, 5000, weights))
    samples = _binning_samples(np.float32, 100_003, 2)
    got = da.compute(*hd.bin_histogram(da.from_array(samples, chunks=9_000), 64, (0, 1),
                                       flow=True))
    want = oracles.bin_histogram(samples, 64, (0, 1), flow=True)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1].tobytes() == want[1].tobytes() and got[2] == want[2]


def test_errors_found_on_worker_processes_reach_the_client_named(cluster_client):
    # A chunk's error travels pickled between the workers' processes to the
    # task that reports it; one that could not be rebuilt there hung compute().
    keys = keys_of("uniform", 60_000, 100)
    keys[[55_000, 20_001]] = [100, -1]
    with pytest.raises(oracles.BadKeyError) as caught:
        hd.histogram(da.from_array(keys, chunks=2_000), 100).compute()
    assert (caught.value.index, caught.value.value) == (20_001, -1)
    samples = np.zeros(40_000, np.float32)
    samples[[33_333, 39_000]] = [3e38, -3e38]
    lazy = hd.bin_histogram(da.from_array(samples, chunks=1_000), 4, (-3.4e38, 3.4e38))[0]
    with pytest.raises(ValueError, match="index 33333 "):
        lazy.compute()
    lazy = hd.bin_histogram(da.from_array(samples, chunks=1_000), 4, (-3.4e38, 3.4e38),
                            weights=np.ones(40_000))[0]
    with pytest.raises(ValueError, match="index 33333 "):
        lazy.compute()


def test_a_task_counts_its_chunk_on_one_thread_dask_runs_the_chunks_in_parallel(monkeypatch):
    from histkit.dask._chunks import THREADS_PER_TASK
    from histkit.oracles import _threads

    keys = np.arange(40_000) % 50
    want = oracles.histogram(keys, 50)
    seen = []
    real = oracles.histogram

    def recording(keys, num_bins):
        seen.append(_threads.idle_cpus(1 << 24))
        return real(keys, num_bins)

    monkeypatch.setattr(oracles, "histogram", recording)
    monkeypatch.setattr(_threads, "_cpus", lambda: 8)
    got = hd.histogram(da.from_array(keys, chunks=10_000), 50).compute(scheduler="threads")
    np.testing.assert_array_equal(got, want)
    assert seen == [THREADS_PER_TASK] * 4
    assert _threads.idle_cpus(1 << 24) > 1  # the cap ends with the task


def test_only_per_chunk_bin_counts_travel_to_the_placement_not_the_sorted_chunks(monkeypatch):
    from histkit.dask import _sort as hd_module

    received = []
    real = hd_module._placement

    def recording(counts, num_bins):
        received.extend(c for c, _ in counts)
        return real(counts, num_bins)

    monkeypatch.setattr(hd_module, "_placement", recording)
    keys = keys_of("zipf", 90_000, 300)
    got_keys, got_index = da.compute(*hd.counting_sort(da.from_array(keys, chunks=20_000), 300),
                                     scheduler="sync")
    np.testing.assert_array_equal(got_index, oracles.counting_sort(keys, 300)[1])
    assert len(received) == 5 and all(c.shape == (300,) for c in received)
    assert sum(int(c.sum()) for c in received) == len(keys)


@pytest.mark.gpu
def test_cupy_chunks_are_counted_and_sorted_on_the_gpu_as_the_oracles_do():
    from histkit import gpu

    if gpu.gpu_unavailable_reason() is not None:
        pytest.skip(f"no GPU: {gpu.gpu_unavailable_reason()}")
    cupy = pytest.importorskip("cupy")
    keys = keys_of("zipf", 300_007, 1000)
    x = da.from_array(keys, chunks=40_000).map_blocks(cupy.asarray, dtype=keys.dtype,
                                                       meta=cupy.empty(0, keys.dtype))
    np.testing.assert_array_equal(hd.histogram(x, 1000).compute(scheduler="threads"),
                                  oracles.histogram(keys, 1000))
    sorted_keys, index = hd.counting_sort(x, 1000)
    got_keys, got_index = da.compute(sorted_keys, index, scheduler="threads")
    assert isinstance(got_index, cupy.ndarray)
    want_keys, want_index = oracles.counting_sort(keys, 1000)
    np.testing.assert_array_equal(cupy.asnumpy(got_keys), want_keys)
    np.testing.assert_array_equal(cupy.asnumpy(got_index), want_index)
    weights = wide_weights(len(keys), np.float32, 3)
    w = da.from_array(weights, chunks=40_000).map_blocks(cupy.asarray, dtype=weights.dtype,
                                                          meta=cupy.empty(0, weights.dtype))
    _same_bits(hd.histogram(x, 1000, weights=w).compute(scheduler="threads"),
               oracles.histogram(keys, 1000, weights))


def _binning_samples(dtype, n, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(0.5, 0.4, n)
    if np.dtype(dtype).kind == "f":
        values[::97] = np.nan
        values[5::101] = 1.0  # on the top edge of (0, 1)
        return values.astype(dtype)
    return np.round(values * 100).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int16, np.uint64])
@pytest.mark.parametrize("bins,range_", [(37, (0, 1)), (16, None), ([-0.5, 0.0, 0.3, 1.0], None),
                                         (126, (0.0, 126.0))])
@pytest.mark.parametrize("chunk", [1_000, 7_777])
def test_bin_histogram_equals_the_oracle_on_the_concatenated_input(dtype, bins, range_, chunk):
    samples = _binning_samples(dtype, 20_011, chunk)
    if np.dtype(dtype).kind == "u":
        samples = samples.astype(np.int64).clip(0).astype(dtype)
    if range_ is None and np.ndim(bins) == 0 and np.dtype(dtype).kind == "f":
        samples = samples[~np.isnan(samples)]  # an automatic range of NaN raises
    for closed in (True, False):
        want = oracles.bin_histogram(samples, bins, range_, right_closed_last=closed, flow=True)
        counts, edges, flow = hd.bin_histogram(da.from_array(samples, chunks=chunk), bins,
                                               range_, right_closed_last=closed, flow=True)
        got_counts, got_edges, got_flow = da.compute(counts, edges, flow)
        np.testing.assert_array_equal(got_counts, want[0])
        assert got_edges.dtype == want[1].dtype and got_edges.tobytes() == want[1].tobytes()
        assert got_flow == want[2]


@pytest.mark.parametrize("weight_dtype", [np.float16, np.float32, np.float64, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint64])
@pytest.mark.parametrize("bins,range_", [(37, (0, 1)), (16, None), ([-0.5, 0.0, 0.3, 1.0], None)])
def test_weighted_bin_histogram_equals_the_oracle_on_the_concatenated_input(
        dtype, bins, range_, weight_dtype):
    samples = _binning_samples(dtype, 20_011, 3)
    if np.dtype(dtype).kind == "u":
        samples = samples.astype(np.int64).clip(0).astype(dtype)
    if range_ is None and np.ndim(bins) == 0 and np.dtype(dtype).kind == "f":
        samples = samples[~np.isnan(samples)]
    weights = (wide_weights(len(samples), weight_dtype, 5) if np.dtype(weight_dtype).kind == "f"
               else np.random.default_rng(5).integers(-2**62, 2**62, len(samples)))
    for closed in (True, False):
        want = oracles.bin_histogram(samples, bins, range_, right_closed_last=closed, flow=True,
                                     weights=weights)
        counts, edges, flow = hd.bin_histogram(
            da.from_array(samples, chunks=3_001), bins, range_, right_closed_last=closed,
            flow=True, weights=da.from_array(weights, chunks=4_000))
        got_counts, got_edges, got_flow = da.compute(counts, edges, flow)
        assert counts.dtype == np.float64
        _same_bits(got_counts, want[0])
        assert got_edges.tobytes() == want[1].tobytes()
        _same_bits(list(got_flow), list(want[2]))


def test_weighted_bin_histogram_sums_each_bin_and_tally_as_fsum_does():
    import math

    # samples at the bins' centres (plainly in their bin), below, above and NaN;
    # weights whose per-chunk float64 sums would lose the small ones
    centres = np.array([0.125, 0.375, 0.625, 0.875])
    samples = np.tile(np.concatenate([centres, [-1.0, 2.0, np.nan]]), 9)
    rng = np.random.default_rng(11)
    weights = rng.choice([1e16, -1e16, 1.0, 2.0**-40, 3e-300], len(samples))
    counts, _, flow = da.compute(*hd.bin_histogram(
        da.from_array(samples, chunks=5), 4, (0, 1), flow=True,
        weights=da.from_array(weights, chunks=5)))
    slot = np.tile(np.arange(7), 9)
    want = [math.fsum(weights[slot == s]) for s in range(7)]
    assert counts.tolist() + list(flow) == want


def test_weighted_bin_histogram_checks_its_weights_before_any_work():
    x = da.from_array(np.float32([0.5, 0.7, 2.0]), chunks=2)
    with pytest.raises(ValueError, match=r"weights must have the samples' shape \(3,\)"):
        hd.bin_histogram(x, 3, (0, 1), weights=np.ones(4))
    with pytest.raises(TypeError, match="float16, float32, float64 or integer; got complex128"):
        hd.bin_histogram(x, 3, (0, 1), weights=np.ones(3, complex))
    # NumPy weights are taken as they are, chunked as the samples
    got = hd.bin_histogram(x, 2, (0, 1), weights=np.array([1.0, 2.0, 4.0]), flow=True)
    counts, _, flow = da.compute(*got)
    assert counts.tolist() == [0.0, 3.0] and flow.overflow == 4.0


def test_bin_histogram_names_a_sample_numpy_fails_on_by_its_global_index():
    samples = np.zeros(10_000, np.float32)
    samples[7_777] = 3e38
    samples[9_000] = -3e38
    with pytest.raises(ValueError) as want:
        oracles.bin_histogram(samples, 4, (-3.4e38, 3.4e38))
    lazy = hd.bin_histogram(da.from_array(samples, chunks=1_000), 4, (-3.4e38, 3.4e38))[0]
    with pytest.raises(ValueError) as got:
        lazy.compute()
    assert str(got.value) == str(want.value) and "index 7777" in str(got.value)


def test_bin_histogram_checks_its_arguments_as_the_oracle_does():
    x = da.from_array(np.float32([0.5, np.nan, 2.0]), chunks=2)
    with pytest.raises(ValueError, match="lo <= hi"):
        hd.bin_histogram(x, 3, (1, 0))
    with pytest.raises(ValueError, match="bins must be >= 1"):
        hd.bin_histogram(x, 0, (0, 1))
    with pytest.raises(TypeError, match="samples must have"):
        hd.bin_histogram(da.from_array(np.array([1j]), chunks=1), 3, (0, 1))
    with pytest.raises(TypeError, match="dask.array.Array"):
        hd.bin_histogram(np.float32([0.5]), 3, (0, 1))
    # an automatic range over NaN raises the oracle's error at compute time
    with pytest.raises(ValueError) as want:
        oracles.bin_histogram(np.float32([0.5, np.nan, 2.0]), 3)
    with pytest.raises(ValueError) as got:
        da.compute(*hd.bin_histogram(x, 3))
    assert str(got.value) == str(want.value)
    # no samples: numpy's (0, 1)
    empty = hd.bin_histogram(da.from_array(np.float32([]), chunks=1), 4)
    np.testing.assert_array_equal(empty[1].compute(), np.histogram(np.float32([]), 4)[1])
